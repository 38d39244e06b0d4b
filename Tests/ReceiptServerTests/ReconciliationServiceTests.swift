import Crypto
import Foundation
import Logging
import ReceiptCore
import ReceiptService
import ReceiptStore
import Synchronization
import Testing

@testable import ReceiptServer

/// The periodic reconciliation: every bundle ID of the app in each environment it allows, a page budget per run with
/// the next run resuming from the saved cursor, and one server at a time per app.
@Suite struct ReconciliationServiceTests {
    /// Apple's Notification History, three pages per bundle ID and environment; records what was asked.
    final class PagedHistory: AppStoreServerLooking {
        let asked = Mutex<[String]>([])

        func notificationHistoryPage(
            from start: Date, to end: Date, onlyFailures: Bool, paginationToken: String?,
            environment: StoreEnvironment, credentials: AppStoreServerAPICredentials
        ) async throws -> (payloads: [String], next: String?) {
            let page = Int(paginationToken ?? "0") ?? 0
            asked.withLock { $0.append("\(credentials.bundleID)/\(environment.rawValue)/\(page)") }
            return (["not.a.notification"], page < 2 ? String(page + 1) : nil)
        }

        func transaction(_ transactionID: String, credentials: AppStoreServerAPICredentials) async throws
            -> VerifiedReceipt
        { throw ServiceError(.notConfigured, "") }
        func history(
            of id: String, in environment: StoreEnvironment?, credentials: AppStoreServerAPICredentials, whole: Bool
        )
            async throws -> (transactions: [VerifiedReceipt], environment: StoreEnvironment)
        { ([], .production) }
        func renewals(of id: String, credentials: AppStoreServerAPICredentials) async throws -> [VerifiedReceipt] { [] }
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

    @Test func everyBundleIDIsAskedAndACutShortRunResumesOnOneServerAtATime() async throws {
        try await withTemporaryTenancy { tenancy, logger in
            _ = try await tenancy.createAccount(name: "A", email: "a@example.com", planName: "free")
            var settings = AppSettings(bundleIDs: ["com.example.a", "com.example.b"])
            settings.allowedEnvironments = ["production", "sandbox"]
            settings.appleIssuerID = "5a6f1c3e-8d2b-4c7a-9e0f-1b2c3d4e5f60"
            settings.appleKeyID = "ABC123DEFG"
            settings.applePrivateKeyPEM = P256.Signing.PrivateKey().pemRepresentation
            let app = try await tenancy.addApp(account: "a@example.com", settings: settings)
            let history = PagedHistory()
            let store = tenancy.store
            let service = NotificationReconciliation(
                store: store,
                reconciler: NotificationReconciler(
                    intake: NotificationIntake(
                        verifier: ReceiptVerifier(anchors: try TrustAnchors(encoded: [])), store: store,
                        deadline: StoreDeadline(nil)),
                    storeKit: history, tenancy: tenancy, maximumPages: 5),
                interval: .seconds(3_600), metrics: ServerMetrics().factory, logger: logger)
            let now = Date()
            // Five pages: bundle a in production, then its sandbox until the budget is spent.
            await service.reconcile(app, now: now)
            #expect(
                history.asked.withLock { $0 }
                    == [
                        "com.example.a/Production/0", "com.example.a/Production/1", "com.example.a/Production/2",
                        "com.example.a/Sandbox/0", "com.example.a/Sandbox/1",
                    ])
            // Another server holds the app's lease: this one leaves it alone.
            let held = try await store.claimReconciliation(appID: app.id, now: now, until: now.addingTimeInterval(60))
            #expect(held?.cursor != nil && held?.finishedAt == nil)
            await service.reconcile(app, now: now.addingTimeInterval(1))
            #expect(history.asked.withLock { $0.count } == 5)
            try await store.saveReconciliation(appID: app.id, cursor: held?.cursor, now: now, leaseUntil: nil)
            // The next runs resume where the first stopped, through bundle b, and finish.
            await service.reconcile(app, now: now.addingTimeInterval(2))
            await service.reconcile(app, now: now.addingTimeInterval(3))
            #expect(
                Array(history.asked.withLock { $0 }.dropFirst(5))
                    == [
                        "com.example.a/Sandbox/2", "com.example.b/Production/0", "com.example.b/Production/1",
                        "com.example.b/Production/2", "com.example.b/Sandbox/0", "com.example.b/Sandbox/1",
                        "com.example.b/Sandbox/2",
                    ])
            let finished = try await store.claimReconciliation(
                appID: app.id, now: now.addingTimeInterval(4), until: now.addingTimeInterval(60))
            #expect(finished?.cursor == nil && finished?.finishedAt != nil)
        }
    }
}
