import Foundation
import Hummingbird
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

    /// A finish's state in words: its time once finished, else its state, attempts and last error.
    static func appleFinish(_ status: AppleFinishStatus?) -> String {
        guard let status else { return "" }
        if let finishedAt = status.finishedAt { return Format.time(finishedAt) }
        let attempts = status.attempts == 1 ? "1 attempt" : "\(status.attempts) attempts"
        return "\(status.state.rawValue) (\(attempts))" + (status.lastError.map { ": \($0)" } ?? "")
    }
}
