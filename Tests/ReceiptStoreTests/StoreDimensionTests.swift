import Foundation
import Logging
import PostgresNIO
import ReceiptCore
import ReceiptService
import TestSupport
import Testing

@testable import ReceiptStore

/// The store (App Store, Google Play) is a dimension of the ledger's key: each store's transactions, claims and
/// statuses are its own, Apple's Finish Transaction is the App Store's alone, and rows written before the store
/// was a dimension are the App Store's.
@Suite struct StoreDimensionTests {
    typealias Contract = LedgerStoreContractTests

    static func recording(
        _ app: App, _ store: Store, _ ids: [String], user: String, at offset: TimeInterval = 0
    ) -> LedgerRecording {
        var recording = LedgerRecording(
            appID: app.id, store: store, environment: .production, transactions: ids.map { Contract.purchase($0) },
            user: user, movesClaims: false, deliversNew: false, requestID: "r-\(store.rawValue)",
            now: Contract.start.addingTimeInterval(offset))
        recording.refusesOtherUsers = true
        return recording
    }

    static func status(_ app: App, _ store: Store, _ original: String, _ state: SubscriptionStatus.State)
        -> SubscriptionStatus
    {
        SubscriptionStatus(
            appID: app.id, store: store, environment: .production, originalTransactionID: original,
            productID: "com.example.coins", state: state, expiresDate: 1_800_000_000_000, asOf: 1_700_000_000_000,
            updatedAt: Contract.start)
    }

    @Test(arguments: StoreKind.available)
    func eachStoreKeepsALedgerOfItsOwn(kind: StoreKind) async throws {
        try await Contract.withApp(kind) { store, app in
            // One id in both stores (never so in life: the forms differ) is two rows, each claimed by its own user,
            // even where the app refuses another user's purchase.
            let apple = try await store.record(Self.recording(app, .appStore, ["1"], user: "alice"))
            var google = Self.recording(app, .googlePlay, ["1"], user: "bob", at: 1)
            google.statuses = [Self.status(app, .googlePlay, "1", .gracePeriod)]
            let play = try await store.record(google)
            #expect(apple.map(\.isNew) == [true] && play.map(\.isNew) == [true])
            #expect(apple[0].entry.store == .appStore && play[0].entry.store == .googlePlay)
            #expect(play[0].entry.claimant == "bob")
            let again = try await store.record(Self.recording(app, .googlePlay, ["1"], user: "bob", at: 2))
            #expect(again.map(\.isNew) == [false] && again[0].entry.store == .googlePlay)

            // A confirmation by id confirms both; Apple's Finish Transaction is asked for the App Store's row alone.
            let confirmed = try await store.confirmDelivery(
                appID: app.id, environment: nil, transactionIDs: ["1"], at: Contract.start.addingTimeInterval(3),
                finishingWithApple: true)
            let byStore = Dictionary(uniqueKeysWithValues: confirmed.map { ($0.store, $0) })
            #expect(byStore.count == 2 && confirmed.allSatisfy { $0.deliveredAt != nil })
            #expect(byStore[.appStore]?.appleFinish?.state == .pending)
            #expect(byStore[.googlePlay]?.appleFinish == nil)

            // Statuses are each store's: an App Store status beside the Google Play one.
            var appleStatus = Self.recording(app, .appStore, [], user: "alice", at: 4)
            appleStatus.statuses = [Self.status(app, .appStore, "1", .expired)]
            _ = try await store.record(appleStatus)
            let statuses = try await store.subscriptionStatuses(appID: app.id, originalTransactionIDs: ["1"])
            #expect(
                Set(statuses.map { "\($0.store.rawValue) \($0.state.rawValue)" }) == [
                    "app_store expired", "google_play grace_period",
                ])

            // Look-ups list both, each with its own claimant.
            let rows = try await store.ledgerEntries(LedgerQuery(appID: app.id, limit: 10))
            #expect(
                Set(rows.map { "\($0.store.rawValue) \($0.claimant ?? "-")" }) == [
                    "app_store alice", "google_play bob",
                ])
            let bobs = try await store.ledgerEntries(LedgerQuery(appID: app.id, user: "bob", limit: 10))
            #expect(bobs.map(\.store) == [.googlePlay])
        }
    }

    /// A delivered Google Play purchase's acknowledgement is made pending by the delivery (a first answer, or the
    /// backend's confirmation), claimed under a lease, and recorded; Google's own acknowledgement stands.
    @Test(arguments: StoreKind.available)
    func googleAcknowledgementsArePendingOnDeliveryClaimedAndRecorded(kind: StoreKind) async throws {
        try await Contract.withApp(kind) { store, app in
            func google(_ id: String, acknowledged: Bool = false) -> PurchaseTransaction {
                var transaction = Contract.purchase(id)
                transaction.productType = nil
                transaction.purchaseToken = "token-" + id
                transaction.packageName = "com.example.android"
                transaction.isAcknowledged = acknowledged
                return transaction
            }
            var delivered = Self.recording(app, .googlePlay, [], user: "u")
            delivered.transactions = [google("GPA.1"), google("GPA.2", acknowledged: true)]
            delivered.deliversNew = true
            let recorded = try await store.record(delivered)
            #expect(recorded.map { $0.entry.googleAcknowledgement?.state } == [.pending, .finished])
            var offered = Self.recording(app, .googlePlay, [], user: "u", at: 1)
            offered.transactions = [google("GPA.3")]
            #expect(try await store.record(offered).first?.entry.googleAcknowledgement == nil)
            // An Apple row is never Google's to acknowledge.
            _ = try await store.record(Self.recording(app, .appStore, ["4"], user: "u", at: 1))
            let confirmed = try await store.confirmDelivery(
                appID: app.id, environment: nil, transactionIDs: ["GPA.3", "4"],
                at: Contract.start.addingTimeInterval(2), finishingWithApple: false)
            let states = Dictionary(
                uniqueKeysWithValues: confirmed.map { ($0.transaction.transactionID, $0.googleAcknowledgement?.state) })
            #expect(states.count == 2 && states["GPA.3"] == .pending && states["4"] == .some(nil))

            let now = Contract.start.addingTimeInterval(10)
            let claimed = try await store.claimGoogleAcknowledgements(dueBy: now, lease: .seconds(60), limit: 10)
            #expect(claimed.map(\.transactionID).sorted() == ["GPA.1", "GPA.3"])
            #expect(claimed.allSatisfy { $0.packageName == "com.example.android" && !$0.isSubscription })
            #expect(claimed.first { $0.transactionID == "GPA.1" }?.purchaseToken == "token-GPA.1")
            // Leased: not claimed again meanwhile.
            #expect(try await store.claimGoogleAcknowledgements(dueBy: now, lease: .seconds(60), limit: 10).isEmpty)
            #expect(try await store.pendingGoogleAcknowledgements(purchasedBefore: now) == 2)
            // Counted from the purchase (2023), not from the delivery (2026): Google's three days run from the
            // purchase (money review M14).
            let afterThePurchases = Date(timeIntervalSince1970: 1_700_000_001)
            #expect(try await store.pendingGoogleAcknowledgements(purchasedBefore: afterThePurchases) == 2)
            #expect(try await store.pendingGoogleAcknowledgements(purchasedBefore: afterThePurchases - 2) == 0)
            #expect(claimed.allSatisfy { $0.purchasedAt == Date(timeIntervalSince1970: 1_700_000_000.123) })

            let first = try #require(claimed.first { $0.transactionID == "GPA.1" })
            let third = try #require(claimed.first { $0.transactionID == "GPA.3" })
            try await store.recordGoogleAcknowledgement(first, outcome: .finished, at: now)
            try await store.recordGoogleAcknowledgement(
                third, outcome: .retry(next: now.addingTimeInterval(5), error: "Google answered 503"), at: now)
            let rows = Dictionary(
                uniqueKeysWithValues: try await store.ledgerEntries(LedgerQuery(appID: app.id, limit: 10)).map {
                    ($0.transaction.transactionID, $0)
                })
            #expect(rows["GPA.1"]?.googleAcknowledgement?.state == .finished)
            #expect(rows["GPA.1"]?.googleAcknowledgement?.finishedAt == now)
            #expect(rows["GPA.3"]?.googleAcknowledgement?.attempts == 1)
            #expect(rows["GPA.3"]?.googleAcknowledgement?.lastError == "Google answered 503")
            #expect(try await store.pendingGoogleAcknowledgements(purchasedBefore: now) == 1)
            // Due again at its retry time.
            let again = try await store.claimGoogleAcknowledgements(
                dueBy: now.addingTimeInterval(6), lease: .seconds(60), limit: 10)
            #expect(again.map(\.transactionID) == ["GPA.3"] && again.first?.attempts == 1)
        }
    }

    /// Each app's and package's voided-purchase cursor is added once, claimed by one server at a time under a lease,
    /// and kept where a read stopped.
    @Test(arguments: StoreKind.available)
    func voidedPurchaseCursorsAreLeasedAndKept(kind: StoreKind) async throws {
        try await Contract.withApp(kind) { store, app in
            let now = Contract.start
            let packages = [
                (appID: app.id, packageName: "com.example.a"), (appID: app.id, packageName: "com.example.b"),
            ]
            try await store.ensureVoidedCursors(packages, at: now)
            try await store.ensureVoidedCursors(packages, at: now.addingTimeInterval(100))
            let claimed = try await store.claimVoidedCursors(dueBy: now, lease: .seconds(60), limit: 10)
            #expect(claimed.map(\.packageName).sorted() == ["com.example.a", "com.example.b"])
            #expect(claimed.allSatisfy { $0.startTime == nil && $0.pageToken == nil })
            #expect(
                try await store.claimVoidedCursors(dueBy: now.addingTimeInterval(30), lease: .seconds(60), limit: 10)
                    .isEmpty)
            var cursor = try #require(claimed.first { $0.packageName == "com.example.a" })
            cursor.startTime = 1_790_000_200_000
            cursor.pageToken = "page-2"
            try await store.saveVoidedCursor(cursor, nextRunAt: now.addingTimeInterval(5), at: now)
            let again = try await store.claimVoidedCursors(
                dueBy: now.addingTimeInterval(10), lease: .seconds(60), limit: 10)
            #expect(again == [cursor])
        }
    }

    /// A database written before version 22 keeps every row, each the App Store's, its claim and status joined.
    @Test(arguments: StoreKind.available)
    func rowsFromBeforeTheStoreWasADimensionAreTheAppStores(kind: StoreKind) async throws {
        let logger = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
        let account = TenancyStoreContractTests.account()
        let app = TenancyStoreContractTests.app(accountID: account.id)
        let id = app.id.uuidString.lowercased()
        func check(_ store: any DataStore) async throws {
            let rows = try await store.ledgerEntries(LedgerQuery(appID: app.id, limit: 10))
            #expect(rows.count == 1)
            #expect(rows.first?.store == .appStore && rows.first?.claimant == "alice")
            #expect(rows.first?.appleFinish?.state == .pending)
            let statuses = try await store.subscriptionStatuses(appID: app.id, originalTransactionIDs: ["7"])
            #expect(statuses.map(\.store) == [.appStore] && statuses.map(\.state) == [.active])
            // The old row is the App Store's key: seen again, not new.
            let seen = try await store.record(Self.recording(app, .appStore, ["7"], user: "alice", at: 9))
            #expect(seen.map(\.isNew) == [false])
            // The app migrated with it: no package names, no Google credentials.
            let migrated = try #require(try await store.app(id: app.id))
            #expect(migrated.packageNames.isEmpty && migrated.googlePlayCredentials == nil)
        }
        switch kind {
        case .sqlite:
            try await withTemporaryDirectory { directory in
                let store = try await SQLiteStore.open(
                    path: directory.appendingPathComponent("v21.sqlite").path, logger: logger)
                do {
                    try await store.migrate(through: 21)
                    // The account and app as version 21 wrote them (today's statements name later columns).
                    for statement in [
                        """
                        INSERT INTO accounts (id, name, email, plan_name, enabled, created_at, updated_at)
                        VALUES ('\(account.id.uuidString.lowercased())', 'A', 'a@example.com', 'free', 1, 1, 1)
                        """,
                        """
                        INSERT INTO apps (id, account_id, token, name, allowed_environments, verification_mode,
                            result_cipher, result_key, allows_test_data, enabled, created_at, updated_at)
                        VALUES ('\(id)', '\(account.id.uuidString.lowercased())', 'app_v21', 'A', 'production',
                            'local', 'aes-256-gcm', x'00', 0, 1, 1, 1)
                        """,
                        """
                        INSERT INTO ledger_transactions (app_id, environment, transaction_id, original_transaction_id,
                            product_id, quantity, first_seen_at, last_seen_at, first_request_id, delivered_at,
                            apple_finish, apple_finish_due_at)
                        VALUES ('\(id)', 'Production', '7', '7', 'com.example.coins', 1, 1700000000000, 1700000000000,
                            'r0', 1700000000000, 'pending', 1700000000000)
                        """,
                        """
                        INSERT INTO ledger_claims (app_id, environment, original_transaction_id, app_user_id, claimed_at)
                        VALUES ('\(id)', 'Production', '7', 'alice', 1700000000000)
                        """,
                        """
                        INSERT INTO subscription_statuses (app_id, environment, original_transaction_id, product_id,
                            status, expires_date, as_of, updated_at)
                        VALUES ('\(id)', 'Production', '7', 'com.example.coins', 'active', 1800000000000, 1, 1)
                        """,
                    ] {
                        _ = try await store.query(statement)
                    }
                    try await store.migrate()
                    try await check(store)
                    try await store.close()
                } catch {
                    try? await store.close()
                    throw error
                }
            }
        case .postgres:
            try await TestPostgres.withDatabase { url in
                let store = try PostgresStore(url: url, logger: logger)
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask { try await store.run() }
                    defer { group.cancelAll() }
                    try await store.migrate(through: 21)
                    let at = "TIMESTAMPTZ '2023-11-14 22:13:20+00'"
                    // The account and app as version 21 wrote them (today's statements name later columns).
                    for statement in [
                        """
                        INSERT INTO accounts (id, name, email, plan_name, enabled, created_at, updated_at)
                        VALUES ('\(account.id.uuidString.lowercased())', 'A', 'a@example.com', 'free', true, \(at), \(at))
                        """,
                        """
                        INSERT INTO apps (id, account_id, token, name, allowed_environments, verification_mode,
                            result_cipher, result_key, allows_test_data, enabled, created_at, updated_at)
                        VALUES ('\(id)', '\(account.id.uuidString.lowercased())', 'app_v21', 'A', 'production',
                            'local', 'aes-256-gcm', '\\x00'::bytea, false, true, \(at), \(at))
                        """,
                        """
                        INSERT INTO ledger_transactions (app_id, environment, transaction_id, original_transaction_id,
                            product_id, quantity, first_seen_at, last_seen_at, first_request_id, delivered_at,
                            apple_finish, apple_finish_due_at)
                        VALUES ('\(id)', 'Production', '7', '7', 'com.example.coins', 1, \(at), \(at), 'r0', \(at),
                            'pending', \(at))
                        """,
                        """
                        INSERT INTO ledger_claims (app_id, environment, original_transaction_id, app_user_id, claimed_at)
                        VALUES ('\(id)', 'Production', '7', 'alice', \(at))
                        """,
                        """
                        INSERT INTO subscription_statuses (app_id, environment, original_transaction_id, product_id,
                            status, expires_date, as_of, updated_at)
                        VALUES ('\(id)', 'Production', '7', 'com.example.coins', 'active', 1800000000000, 1, \(at))
                        """,
                    ] {
                        try await store.rows(PostgresQuery(unsafeSQL: statement))
                    }
                    try await store.migrate()
                    try await check(store)
                }
            }
        }
    }
}
