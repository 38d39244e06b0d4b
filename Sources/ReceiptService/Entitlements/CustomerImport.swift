import Foundation
import ReceiptCore

/// `receiptverify customers import` (docs/api.md, "Importing customers"): an app moving to the service starts with its
/// users' rights. Each original transaction's Transaction History is asked of Apple with the app's App Store Server
/// API credentials and recorded in the app's ledger as a verified input is (claimed by the user given beside it), so
/// that entitlements are right on day one. What is imported counts as delivered (the app's previous backend
/// delivered it): `/api` will not say `deliver: true` of it again. Idempotent: a second run finds everything known.
public struct CustomerImport: Sendable {
    /// One original transaction to import, and the app's user who holds it (nil: no claim).
    public struct Item: Sendable, Equatable {
        /// The original transaction id (or any transaction id of the customer).
        public var originalTransactionID: String
        /// The app's user.
        public var user: String?

        /// Creates an item.
        public init(originalTransactionID: String, user: String?) {
            self.originalTransactionID = originalTransactionID
            self.user = user
        }

        /// The items of a file's text: one per line, `ORIGINAL_TRANSACTION_ID[,APP_USER_ID]`; blank lines and lines
        /// starting with `#` are skipped. Throws naming the first bad line.
        public static func parse(_ text: String) throws -> [Item] {
            var items: [Item] = []
            for (index, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                let trimmed = line.trimmingCharacters(in: .whitespacesAndNewlines)
                guard !trimmed.isEmpty, !trimmed.hasPrefix("#") else { continue }
                let parts = trimmed.split(separator: ",", maxSplits: 1).map {
                    $0.trimmingCharacters(in: .whitespaces)
                }
                guard let id = parts.first, (1...64).contains(id.utf8.count),
                    id.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) })
                else {
                    throw ServiceError(
                        .invalidArgument,
                        "line \(index + 1): expected ORIGINAL_TRANSACTION_ID[,APP_USER_ID], the id in digits")
                }
                let user = parts.count > 1 && !parts[1].isEmpty ? parts[1] : nil
                if let user, user.utf8.count > VerificationRequest.maximumFieldLength {
                    throw ServiceError(.invalidArgument, "line \(index + 1): the user id is over 256 bytes")
                }
                items.append(Item(originalTransactionID: id, user: user))
            }
            return items
        }
    }

    /// What an import did.
    public struct Report: Sendable, Equatable {
        /// Original transactions imported (Apple answered their history).
        public var imported = 0
        /// Transactions new to the ledger.
        public var newTransactions = 0
        /// Transactions the ledger knew already.
        public var knownTransactions = 0
        /// Original transactions skipped, the ledger knowing them already (``run(token:items:skipKnown:progress:)``
        /// with `skipKnown`).
        public var skipped = 0
        /// Original transactions that failed, with why.
        public var failed: [String] = []
    }

    let storeKit: any AppStoreServerLooking
    let tenancy: TenancyService

    /// Creates an import through `storeKit`, into `tenancy`'s store.
    public init(storeKit: any AppStoreServerLooking, tenancy: TenancyService) {
        self.storeKit = storeKit
        self.tenancy = tenancy
    }

    /// Imports `items` into the app with `token`, telling `progress` after each (done, of). With `skipKnown`, an
    /// original transaction the app's ledger holds already is not asked of Apple again: a run cut short resumes where
    /// it stopped (without, every item is asked again, and renewals since the last run are recorded).
    public func run(
        token: String, items: [Item], skipKnown: Bool = false, progress: @Sendable (Int, Int) -> Void = { _, _ in }
    ) async throws -> Report {
        let app = try await tenancy.app(token: token)
        guard let credentials = try tenancy.serverAPICredentials(of: app) else {
            throw ServiceError(
                .invalidArgument, "the app has no App Store Server API credentials (app update --apple-issuer-id …)")
        }
        let bundleIDs = Set(app.bundleIDs.map(\.value))
        var report = Report()
        for (index, item) in items.enumerated() {
            defer { progress(index + 1, items.count) }
            if skipKnown {
                let known = try await tenancy.store.ledgerEntries(
                    LedgerQuery(appID: app.id, originalTransactionID: item.originalTransactionID, limit: 1))
                if !known.isEmpty {
                    report.skipped += 1
                    continue
                }
            }
            let history: (transactions: [VerifiedReceipt], environment: StoreEnvironment)
            do {
                history = try await storeKit.history(
                    of: item.originalTransactionID, in: nil, credentials: credentials, whole: true)
            } catch let error as AppStoreServerAPIError where error.code == .credentials {
                throw ServiceError(.invalidArgument, "Apple refused the app's credentials: \(error.reason)")
            } catch let error as AppStoreServerAPIError {
                report.failed.append("\(item.originalTransactionID): \(error.reason)")
                continue
            }
            let purchases = history.transactions.filter { bundleIDs.contains($0.bundleID) }
                .flatMap(PurchaseTransaction.all(in:))
                .filter { purchase in app.productCatalog.map { $0.contains(purchase.productID) } ?? true }
            for (environment, transactions) in Dictionary(grouping: purchases, by: { _ in history.environment }) {
                var recording = LedgerRecording(
                    appID: app.id, environment: environment, transactions: transactions,
                    user: app.claimsPolicy == .off ? nil : item.user, movesClaims: false, deliversNew: true,
                    requestID: "import:\(item.originalTransactionID)", now: Date())
                recording.catalog = app.catalog
                recording.deliversExisting = false
                let results = try await tenancy.store.record(recording)
                report.newTransactions += results.filter(\.isNew).count
                report.knownTransactions += results.filter { !$0.isNew }.count
            }
            report.imported += 1
        }
        return report
    }
}
