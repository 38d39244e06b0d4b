import Foundation
import Logging
import ReceiptCore
import Synchronization
import Testing

@testable import ReceiptService

/// What an enriched answer takes from Apple's history: only the app's own transactions (its bundle IDs, the input's
/// environment, its catalog), and the input's own user for all of them.
@Suite struct EnrichmentTests {
    /// Apple's history as given, every item already verified.
    final class FixedHistory: AppStoreServerLooking {
        let transactions: [VerifiedReceipt]
        /// The environment each history request asked.
        let asked = Mutex<[StoreEnvironment?]>([])

        init(transactions: [VerifiedReceipt]) { self.transactions = transactions }

        func transaction(_ transactionID: String, credentials: AppStoreServerAPICredentials) async throws
            -> VerifiedReceipt
        { throw AppStoreServerAPIError(.notFound, "none") }
        func history(
            of id: String, in environment: StoreEnvironment?, credentials: AppStoreServerAPICredentials, whole: Bool
        )
            async throws -> (transactions: [VerifiedReceipt], environment: StoreEnvironment)
        {
            asked.withLock { $0.append(environment) }
            return (transactions, environment ?? .production)
        }
        func renewals(of id: String, credentials: AppStoreServerAPICredentials) async throws -> [VerifiedReceipt] {
            []
        }
        func notificationHistoryPage(
            from start: Date, to end: Date, onlyFailures: Bool, paginationToken: String?,
            environment: StoreEnvironment, credentials: AppStoreServerAPICredentials
        ) async throws -> (payloads: [String], next: String?) { ([], nil) }
        func testNotificationStatus(
            token: String, environment: StoreEnvironment, credentials: AppStoreServerAPICredentials
        ) async throws -> [String] { [] }
        func requestTestNotification(environment: StoreEnvironment, credentials: AppStoreServerAPICredentials)
            async throws -> String
        { "" }
        func finish(
            _ transactionID: String, environment: StoreEnvironment, credentials: AppStoreServerAPICredentials
        ) async throws {}
    }

    static func item(
        _ id: String, product: String = "com.example.app.extra", bundleID: String = "com.example.app",
        environment: StoreEnvironment = .sandbox, token: String? = nil
    ) -> VerifiedReceipt {
        var payload = JSONObject()
        payload.append("transactionId", .string(id))
        payload.append("originalTransactionId", .string(id))
        payload.append("productId", .string(product))
        payload.append("bundleId", .string(bundleID))
        payload.append("type", .string("Non-Consumable"))
        payload.append("purchaseDate", .integer(1_700_000_000_000))
        if let token { payload.append("appAccountToken", .string(token)) }
        return VerifiedReceipt(
            kind: .signedTransaction, environment: environment, bundleID: bundleID, receipt: payload,
            signingDate: 1_700_000_001_000, isTestData: false)
    }

    @Test func onlyTheAppsOwnIsMergedAndTheInputsUserStays() async throws {
        var app = try VerificationServiceTests.caller(mode: .local).app
        app.enrichment = .on
        app.catalog = [CatalogProduct(id: "com.example.app.pro"), CatalogProduct(id: "com.example.app.extra")]
        let caller = Caller(
            account: try VerificationServiceTests.caller(mode: .local).account, apiKeyID: UUID(), app: app,
            resultKey: Array(repeating: 7, count: 32), sharedSecret: nil,
            appleKey: (issuerID: "57246542-96fe-1a63-e053-0824d011072a", keyID: "ABC123DEFG", privateKeyPEM: "pem"))
        let input = Self.item("400", product: "com.example.app.pro", token: "owner")
        let history = [
            input, Self.item("401"), Self.item("402", bundleID: "com.other.app"),
            Self.item("403", environment: .production), Self.item("404", product: "com.example.app.not-sold"),
            Self.item("405", token: "another-account"),
        ]
        let storeKit = FixedHistory(transactions: history)
        let service = VerificationService(verifier: nil, apple: nil, storeKit: storeKit)
        var outcome = VerificationOutcome(status: 0, body: input.response, source: .local)
        outcome.purchases = PurchaseTransaction.all(in: input)
        outcome.environment = .sandbox
        await service.enrich(
            &outcome, verified: input, request: VerificationRequest(), caller: caller,
            logger: VerificationServiceTests.logger)
        #expect(outcome.body["enrichment"] == .string("applied"))
        // Another account's purchase (a shared Apple ID) is the ledger's to record, not the presenter's (M13).
        #expect(outcome.purchases.map(\.transactionID) == ["400", "401"])
        #expect(outcome.otherAccounts.map(\.transactionID) == ["405"])
        #expect(
            outcome.body["latest_receipt_info"]?.arrayValue?.compactMap { $0["transaction_id"]?.stringValue } == [
                "400", "401", "405",
            ])
        #expect(outcome.inputUser == "owner")
        // Only the input's environment was asked.
        #expect(storeKit.asked.withLock { $0 } == [.sandbox])
    }
}
