import Foundation
import Hummingbird
import Logging
import ReceiptCore
import ReceiptService

/// `GET /account/transactions`: one of the account's apps' ledger, searched by user or original transaction id.
enum TransactionsPage {
    struct View: PageView {
        struct Row: Sendable {
            var transactionID: String
            var originalTransactionID: String
            var productID: String
            var environment: String
            var user: String
            var firstSeen: String
            var delivered: String
            /// Apple's Finish Transaction of the confirmed delivery: when it was taken, or where it stands.
            var appleFinish: String
            var state: String
        }

        var layout: LayoutView
        var apps: [AppForm.Option]
        var user: String
        var originalTransactionID: String
        var searched: Bool
        var rows: [Row]
        var count: Int
        var more: Bool
    }

    /// The most rows a search shows.
    static let limit = 200

    static func register(on router: Router<ServerContext>, site: WebSite) {
        router.get("/account/transactions") { request, context in
            await site.signedInPage(request, context: context) { signedIn, scope in
                let query = request.uri.queryParameters
                let apps = try await scope.apps()
                let chosen = query["app"].flatMap { UUID(uuidString: String($0)) }
                let user = query["user"].map { String($0).trimmingCharacters(in: .whitespaces) } ?? ""
                let original =
                    query["original_transaction_id"].map { String($0).trimmingCharacters(in: .whitespaces) } ?? ""
                var entries: [LedgerEntry] = []
                if let chosen {
                    // Another account's app id is unknown here (404).
                    entries = try await scope.ledgerEntries(
                        appID: chosen, user: user.isEmpty ? nil : String(user.prefix(255)),
                        originalTransactionID: original.isEmpty ? nil : String(original.prefix(64)), limit: limit + 1)
                }
                let rows = entries.prefix(limit).map { entry in
                    View.Row(
                        transactionID: entry.transaction.transactionID,
                        originalTransactionID: entry.transaction.originalTransactionID,
                        productID: entry.transaction.productID, environment: entry.environment.configurationName,
                        user: entry.claimant ?? "", firstSeen: Format.time(entry.firstSeenAt),
                        delivered: entry.deliveredAt.map { Format.time($0) } ?? "",
                        appleFinish: Self.appleFinish(entry.appleFinish),
                        state: entry.isRevoked ? "revoked" : "valid")
                }
                return site.page(
                    "transactions",
                    View(
                        layout: LayoutView(title: "Transactions", signedIn: signedIn),
                        apps: apps.map {
                            AppForm.Option(
                                value: $0.id.uuidString.lowercased(), label: $0.name, selected: $0.id == chosen)
                        },
                        user: user, originalTransactionID: original, searched: chosen != nil, rows: Array(rows),
                        count: rows.count, more: entries.count > limit))
            }
        }
    }

    /// `GET /account/export?app=ID&kind=…&format=…&from=…&to=…`: one of the account's apps' data as a download, the
    /// same lines as `GET /api/export` (docs/account-screen.md), streamed. Not metered: the account screen is the
    /// customer's own.
    static func registerExport(on router: Router<ServerContext>, site: WebSite) {
        router.get("/account/export") { request, context in
            await site.signedInPage(request, context: context) { signedIn, scope in
                guard let exporter = site.exporter else { return site.errorPage(.notFound, "No exports here.") }
                let parameters: [String: String]
                do {
                    // The form's blank fields are not given.
                    parameters = try ExportResponse.parameters(of: request).filter { !$0.value.isEmpty }
                } catch let error as ServiceError {
                    return site.errorPage(
                        .badRequest, "The export cannot be made: \(error.reason).", signedIn: signedIn)
                }
                guard let appID = parameters["app"].flatMap(UUID.init(uuidString:)) else {
                    return site.errorPage(.badRequest, "Choose an app to export.", signedIn: signedIn)
                }
                // Another account's app id is unknown here (404).
                let app = try await scope.app(id: appID)
                let export: ExportRequest
                do {
                    export = try ExportRequest(parameters: parameters, appID: app.id)
                } catch let error as ServiceError where error.code == .invalidArgument {
                    return site.errorPage(
                        .badRequest, "The export cannot be made: \(error.reason).", signedIn: signedIn)
                }
                guard let slot = site.exportSlots.take(for: app.accountID) else {
                    return site.errorPage(
                        .tooManyRequests,
                        "\(site.exportSlots.perAccount) exports of this account are running. Try again when one ends.",
                        signedIn: signedIn)
                }
                let day = UsageDay(containing: Date()).description
                return ExportResponse.streaming(
                    export, app: app, exporter: exporter, slot: slot,
                    fileName: "\(Self.fileName(app.name))-\(export.kind.rawValue)-\(day)", logger: site.logger,
                    metadata: ["app_id": "\(app.id)"])
            }
        }
    }

    /// An app's name as a file name: ASCII letters and digits, `-` and `_`, the rest `-`, none at either end; `app`
    /// when nothing is left.
    static func fileName(_ name: String) -> String {
        let kept = String(
            name.unicodeScalars.prefix(40).map {
                CharacterSet.alphanumerics.contains($0) && $0.isASCII || $0 == "-" || $0 == "_" ? Character($0) : "-"
            })
        let trimmed = kept.trimmingCharacters(in: CharacterSet(charactersIn: "-"))
        return trimmed.isEmpty ? "app" : trimmed
    }

    /// A finish's state in words: its time once finished, else its state, attempts and last error.
    static func appleFinish(_ status: AppleFinishStatus?) -> String {
        guard let status else { return "" }
        if let finishedAt = status.finishedAt { return Format.time(finishedAt) }
        let attempts = status.attempts == 1 ? "1 attempt" : "\(status.attempts) attempts"
        return "\(status.state.rawValue) (\(attempts))" + (status.lastError.map { ": \($0)" } ?? "")
    }
}
