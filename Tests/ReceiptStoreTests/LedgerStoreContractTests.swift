import Foundation
import ReceiptCore
import ReceiptService
import ReceiptStore
import TestSupport
import Testing

/// The ledger in both stores: insert-if-absent, claims, revocations, deliveries, look-ups, and exactness under
/// concurrent recordings.
@Suite struct LedgerStoreContractTests {
    static let start = Date(timeIntervalSince1970: 1_790_000_000)

    /// A store with one account and app, for `body`.
    static func withApp(_ kind: StoreKind, _ body: @Sendable (any DataStore, App) async throws -> Void)
        async throws
    {
        try await withTestStore(kind) { store, _ in
            let account = TenancyStoreContractTests.account()
            try await store.insertAccount(account)
            let app = TenancyStoreContractTests.app(accountID: account.id)
            try await store.insertApp(app)
            try await body(store, app)
        }
    }

    static func purchase(
        _ id: String, original: String? = nil, product: String = "com.example.coins", revokedAt: Int64? = nil
    ) -> PurchaseTransaction {
        PurchaseTransaction(
            transactionID: id, originalTransactionID: original ?? id, productID: product,
            purchaseDate: 1_700_000_000_123, originalPurchaseDate: 1_700_000_000_000, expiresDate: 1_800_000_000_000,
            quantity: 2, webOrderLineItemID: "w\(id)", inAppOwnershipType: "PURCHASED", revocationDate: revokedAt,
            revocationReason: revokedAt.map { _ in 1 }, revocationType: revokedAt.map { _ in "REFUND_PRORATED" },
            revocationPercentage: revokedAt.map { _ in 25_000 }, productType: "Auto-Renewable Subscription",
            offerType: 1, offerDiscountType: "FREE_TRIAL")
    }

    static func recording(
        _ app: App, _ transactions: [PurchaseTransaction], user: String? = nil, moves: Bool = false,
        environment: StoreEnvironment = .production, at offset: TimeInterval = 0, request: String = "r1"
    ) -> LedgerRecording {
        LedgerRecording(
            appID: app.id, environment: environment, transactions: transactions, user: user, movesClaims: moves,
            deliversNew: true, requestID: request, now: start.addingTimeInterval(offset))
    }

    /// Money review M4: a recording that delivers only what it inserts (a customer import) leaves a row the ledger
    /// held undelivered (a purchase notified while the import ran) to the backend's own answer, which delivers it once.
    @Test(arguments: StoreKind.available)
    func anImportDeliversOnlyWhatItInserts(kind: StoreKind) async throws {
        try await Self.withApp(kind) { store, app in
            var notified = Self.recording(app, [Self.purchase("40")], request: "notification:n1")
            notified.deliversNew = false
            _ = try await store.record(notified)
            var imported = Self.recording(app, [Self.purchase("40"), Self.purchase("41")], user: "alice", at: 1)
            imported.deliversExisting = false
            let results = Dictionary(
                uniqueKeysWithValues: try await store.record(imported).map { ($0.entry.transaction.transactionID, $0) })
            #expect(results["41"]?.isNew == true && results["41"]?.entry.deliveredAt != nil)
            #expect(results["40"]?.isNew == false && results["40"]?.entry.deliveredAt == nil)
            #expect(results["40"]?.deliveredNow == false)
            // The backend's answer delivers it, once.
            let answered = try await store.record(Self.recording(app, [Self.purchase("40")], user: "alice", at: 2))
            #expect(answered.first?.deliveredNow == true)
        }
    }

    @Test(arguments: StoreKind.available)
    func aTransactionIsNewOnceAndKeepsItsFirstSighting(kind: StoreKind) async throws {
        try await Self.withApp(kind) { store, app in
            let first = try await store.record(Self.recording(app, [Self.purchase("1"), Self.purchase("2")]))
            #expect(first.map(\.isNew) == [true, true])
            #expect(first[0].entry.transaction == Self.purchase("1"))
            #expect(first[0].entry.deliveredAt == Self.start)

            let again = try await store.record(
                Self.recording(app, [Self.purchase("2"), Self.purchase("3")], at: 700, request: "r2"))
            #expect(again.map(\.isNew) == [false, true])
            #expect(again[0].entry.firstSeenAt == Self.start)
            #expect(again[0].entry.lastSeenAt == Self.start.addingTimeInterval(700))
            #expect(again[0].entry.firstRequestID == "r1")
            #expect(again[0].entry.transaction == Self.purchase("2"))

            // Another environment is another ledger; an empty input records nothing.
            let sandbox = try await store.record(Self.recording(app, [Self.purchase("1")], environment: .sandbox))
            #expect(sandbox.map(\.isNew) == [true])
            #expect(try await store.record(Self.recording(app, [])).isEmpty)

            let stored = try await store.ledgerEntries(LedgerQuery(appID: app.id, limit: 10))
            #expect(stored.count == 4)
            let two = try #require(stored.first { $0.transaction.transactionID == "2" })
            #expect(two.lastSeenAt == Self.start.addingTimeInterval(700))
            // Seen again within the precision of last_seen_at: nothing is written.
            _ = try await store.record(Self.recording(app, [Self.purchase("2")], at: 760, request: "r3"))
            let unchanged = try await store.ledgerEntries(LedgerQuery(appID: app.id, limit: 10))
            #expect(unchanged.first { $0.transaction.transactionID == "2" }?.lastSeenAt == two.lastSeenAt)
            #expect(two.transaction == Self.purchase("2"))
        }
    }

    @Test(arguments: StoreKind.available)
    func aRevocationIsRecordedOnceAndNeverUndoneByAnOlderInput(kind: StoreKind) async throws {
        try await Self.withApp(kind) { store, app in
            _ = try await store.record(Self.recording(app, [Self.purchase("1")]))
            let refunded = try await store.record(
                Self.recording(app, [Self.purchase("1", revokedAt: 1_750_000_000_000)], at: 1))
            #expect(refunded[0].entry.transaction.revocationDate == 1_750_000_000_000)
            #expect(refunded[0].entry.transaction.revocationType == "REFUND_PRORATED")
            #expect(refunded[0].entry.transaction.revocationPercentage == 25_000)
            #expect(refunded[0].entry.deliveredAt == Self.start)
            // The receipt from before the refund does not make it unrevoked.
            let old = try await store.record(Self.recording(app, [Self.purchase("1")], at: 2))
            #expect(old[0].entry.transaction.revocationDate == 1_750_000_000_000)
            // A transaction revoked when first seen is not delivered.
            let late = try await store.record(Self.recording(app, [Self.purchase("9", revokedAt: 1)], at: 3))
            #expect(late[0].isNew && late[0].entry.deliveredAt == nil)
        }
    }

    @Test(arguments: StoreKind.available)
    func claimsBindAnOriginalTransactionToItsFirstUser(kind: StoreKind) async throws {
        try await Self.withApp(kind) { store, app in
            // No user: no claim.
            let anonymous = try await store.record(Self.recording(app, [Self.purchase("1")]))
            #expect(anonymous[0].entry.claimant == nil)
            let alice = try await store.record(Self.recording(app, [Self.purchase("1")], user: "alice"))
            #expect(alice[0].entry.claimant == "alice")
            // A renewal of alice's subscription presented by bob: still alice's, and not delivered to anyone.
            let bob = try await store.record(
                Self.recording(app, [Self.purchase("1"), Self.purchase("2", original: "1")], user: "bob"))
            #expect(bob.map(\.entry.claimant) == ["alice", "alice"])
            #expect(bob[1].isNew && bob[1].entry.deliveredAt == nil && bob[1].transferredFrom == nil)
            #expect(!bob[1].deliveredNow)
            // When alice presents that renewal, it is delivered to her, once.
            let aliceRenewal = try await store.record(
                Self.recording(app, [Self.purchase("2", original: "1")], user: "alice", at: 1))
            #expect(!aliceRenewal[0].isNew && aliceRenewal[0].deliveredNow)
            #expect(aliceRenewal[0].entry.deliveredAt == Self.start.addingTimeInterval(1))
            let aliceAgain = try await store.record(
                Self.recording(app, [Self.purchase("2", original: "1")], user: "alice", at: 2))
            #expect(!aliceAgain[0].deliveredNow && aliceAgain[0].entry.deliveredAt == Self.start.addingTimeInterval(1))
            // Refuse: another user's input is undone whole, its unclaimed original transaction left unclaimed.
            var refused = Self.recording(
                app, [Self.purchase("1"), Self.purchase("5")], user: "mallory", at: 1, request: "refused")
            refused.refusesOtherUsers = true
            await #expect(throws: ServiceError.self) { try await store.record(refused) }
            let afterRefusal = try await store.ledgerEntries(LedgerQuery(appID: app.id, limit: 10))
            #expect(!afterRefusal.contains { $0.transaction.transactionID == "5" })
            #expect(try await store.ledgerEntries(LedgerQuery(appID: app.id, user: "mallory", limit: 10)).isEmpty)
            // Transfer: the claim moves and says from whom.
            let moved = try await store.record(Self.recording(app, [Self.purchase("1")], user: "bob", moves: true))
            #expect(moved[0].entry.claimant == "bob" && moved[0].transferredFrom == "alice")
            let byUser = try await store.ledgerEntries(LedgerQuery(appID: app.id, user: "bob", limit: 10))
            #expect(byUser.map(\.transaction.transactionID).sorted() == ["1", "2"])
            #expect(try await store.ledgerEntries(LedgerQuery(appID: app.id, user: "alice", limit: 10)).isEmpty)

            // The operator moves or releases a claim; an unknown original transaction is said to be unknown.
            #expect(try await store.setClaim(appID: app.id, originalTransactionID: "1", user: "carol", at: Self.start))
            #expect(
                try await store.ledgerEntries(LedgerQuery(appID: app.id, originalTransactionID: "1", limit: 10)).map(
                    \.claimant) == ["carol", "carol"])
            #expect(try await store.setClaim(appID: app.id, originalTransactionID: "1", user: nil, at: Self.start))
            #expect(
                try await store.ledgerEntries(LedgerQuery(appID: app.id, limit: 10)).allSatisfy { $0.claimant == nil })
            #expect(!(try await store.setClaim(appID: app.id, originalTransactionID: "x", user: "a", at: Self.start)))
        }
    }

    @Test(arguments: StoreKind.available)
    func deliveriesAreConfirmedOnce(kind: StoreKind) async throws {
        try await Self.withApp(kind) { store, app in
            var recording = Self.recording(app, [Self.purchase("1"), Self.purchase("2")])
            recording.deliversNew = false
            let recorded = try await store.record(recording)
            #expect(recorded.allSatisfy { $0.entry.deliveredAt == nil })
            let confirmed = try await store.confirmDelivery(
                appID: app.id, environment: nil, transactionIDs: ["1", "unknown"], at: Self.start.addingTimeInterval(5),
                finishingWithApple: false)
            #expect(confirmed.allSatisfy { $0.appleFinish == nil })
            #expect(confirmed.map(\.transaction.transactionID) == ["1"])
            #expect(confirmed[0].deliveredAt == Self.start.addingTimeInterval(5))
            let again = try await store.confirmDelivery(
                appID: app.id, environment: nil, transactionIDs: ["1", "2"], at: Self.start.addingTimeInterval(9),
                finishingWithApple: false)
            #expect(
                Dictionary(uniqueKeysWithValues: again.map { ($0.transaction.transactionID, $0.deliveredAt) }) == [
                    "1": Self.start.addingTimeInterval(5), "2": Self.start.addingTimeInterval(9),
                ])
        }
    }

    /// Money review M3: switching `confirm` to `once` settles exactly what `confirm` offered, in the switch's own
    /// transaction: a row an answer said `deliver: true` for (also one a notification recorded and a request saw a
    /// minute later), a Google purchase with its acknowledgement then due; never a row only a notification recorded,
    /// a refund, or a row another user holds. A row a server still holding the app in `confirm` offered after the
    /// switch is taken as delivered by the next `once` answer, never delivered again.
    @Test(arguments: StoreKind.available)
    func switchingToOnceSettlesExactlyWhatConfirmOffered(kind: StoreKind) async throws {
        try await Self.withApp(kind) { store, app in
            var app = app
            app.deliveryMode = .confirm
            #expect(try await store.updateApp(app, settlingOffersAt: Self.start))
            func confirming(
                _ transactions: [PurchaseTransaction], user: String?, at offset: TimeInterval, request: String,
                store purchaseStore: Store = .appStore
            ) -> LedgerRecording {
                var recording = Self.recording(app, transactions, user: user, at: offset, request: request)
                recording.store = purchaseStore
                recording.deliversNew = false
                recording.offers = user != nil || !request.contains(":")
                return recording
            }
            var token = Self.purchase("g1")
            token.purchaseToken = "tok-g1"
            let offered = try await store.record(
                confirming(
                    [Self.purchase("1"), Self.purchase("9", revokedAt: 1_700_000_100_000)], user: "alice", at: 0,
                    request: "r1"))
            #expect(offered.map { $0.entry.offeredAt != nil } == [true, false])
            _ = try await store.record(confirming([Self.purchase("2")], user: nil, at: 0, request: "notification:n1"))
            let seen = try await store.record(confirming([Self.purchase("2")], user: "alice", at: 60, request: "r2"))
            #expect(seen.first?.entry.offeredAt != nil, "offered by the answer a minute after the notification")
            _ = try await store.record(confirming([Self.purchase("3")], user: nil, at: 0, request: "google:m1"))
            let bobs = try await store.record(
                confirming([Self.purchase("5", original: "1")], user: "bob", at: 1, request: "r3"))
            #expect(bobs.first?.entry.offeredAt == nil, "alice's renewal is not offered to bob")
            _ = try await store.record(
                confirming([token], user: "alice", at: 2, request: "r4", store: .googlePlay))

            var switched = app
            switched.deliveryMode = .once
            #expect(try await store.updateApp(switched, settlingOffersAt: Self.start.addingTimeInterval(100)))
            let rows = try await store.ledgerEntries(LedgerQuery(appID: app.id, limit: 20))
            #expect(
                rows.filter { $0.deliveredAt != nil }.map(\.transaction.transactionID).sorted() == ["1", "2", "g1"])
            #expect(rows.first { $0.transaction.transactionID == "g1" }?.googleAcknowledgement?.state == .pending)
            // An unknown app is said so, and nothing is settled.
            var unknown = switched
            unknown.id = UUID()
            #expect(try await store.updateApp(unknown, settlingOffersAt: Self.start) == false)

            // A server still holding the app in `confirm` offers 6 after the switch (its answer says `deliver: true`):
            // the app being in `once` as stored, the offer is its delivery at once, never said again. 3 (only a
            // notification's) is delivered once; 5 reaches alice.
            let stale = try await store.record(confirming([Self.purchase("6")], user: "alice", at: 200, request: "r5"))
            #expect(stale.map(\.deliveredNow) == [true])
            let once = try await store.record(
                Self.recording(
                    app, [Self.purchase("6"), Self.purchase("3"), Self.purchase("5", original: "1")], user: "alice",
                    at: 300, request: "r6"))
            let delivered = Dictionary(
                uniqueKeysWithValues: once.map { ($0.entry.transaction.transactionID, $0.deliveredNow) })
            #expect(delivered == ["6": false, "3": true, "5": true])
            #expect(once.allSatisfy { $0.entry.deliveredAt != nil })
            #expect(once.first?.entry.deliveredAt == Self.start.addingTimeInterval(200))
        }
    }

    /// A server still holding the app in `confirm` after the switch to `once` offers purchases the ledger holds (a
    /// notification's) or not, and no answer presents them again: the offers are their deliveries, recorded as `once`
    /// records them, a Google Play purchase's acknowledgement then due. Before, they stayed offered and undelivered, and
    /// the Google purchase was never acknowledged (Google refunds it after three days). A recording in `confirm` while
    /// the app is still in `confirm` as stored only offers.
    @Test(arguments: StoreKind.available)
    func anOfferMadeAfterTheSwitchToOnceIsItsDelivery(kind: StoreKind) async throws {
        try await Self.withApp(kind) { store, app in
            var confirm = app
            confirm.deliveryMode = .confirm
            #expect(try await store.updateApp(confirm, settlingOffersAt: Self.start))
            func confirming(_ transactions: [PurchaseTransaction], at offset: TimeInterval, request: String)
                -> LedgerRecording
            {
                var recording = Self.recording(app, transactions, user: "alice", at: offset, request: request)
                recording.deliversNew = false
                recording.offers = true
                return recording
            }
            var google = confirming([Self.purchase("g0")], at: 0, request: "r0")
            google.store = .googlePlay
            google.transactions[0].purchaseToken = "tok-g0"
            _ = try await store.record(google)
            _ = try await store.record(confirming([Self.purchase("0")], at: 0, request: "r0"))
            #expect(
                try await store.ledgerEntries(LedgerQuery(appID: app.id, limit: 10)).allSatisfy {
                    $0.offeredAt != nil && $0.deliveredAt == nil
                })

            // The switch settles 0 and g0; then a server still in `confirm` records what follows.
            var once = confirm
            once.deliveryMode = .once
            #expect(try await store.updateApp(once, settlingOffersAt: Self.start.addingTimeInterval(10)))
            var notified = Self.recording(app, [Self.purchase("2")], at: 15, request: "notification:n1")
            notified.deliversNew = false
            _ = try await store.record(notified)
            google = confirming([Self.purchase("g1")], at: 20, request: "r1")
            google.store = .googlePlay
            google.transactions[0].purchaseToken = "tok-g1"
            let offeredGoogle = try await store.record(google)
            let offered = try await store.record(
                confirming([Self.purchase("1"), Self.purchase("2"), Self.purchase("0")], at: 20, request: "r2"))
            // Recorded as `once` records: delivered by these answers (`deliver: true`), 0 delivered before (by the
            // switch's settle).
            #expect(offeredGoogle.map(\.deliveredNow) == [true])
            #expect(offered.map(\.deliveredNow) == [true, true, false])
            // One answer delivers: the same purchases recorded again by a server still in `confirm` are not.
            #expect(
                try await store.record(confirming([Self.purchase("1"), Self.purchase("2")], at: 25, request: "r3"))
                    .map(\.deliveredNow) == [false, false])

            let rows = Dictionary(
                uniqueKeysWithValues: try await store.ledgerEntries(LedgerQuery(appID: app.id, limit: 10)).map {
                    ($0.transaction.transactionID, $0)
                })
            let at = Self.start.addingTimeInterval(20)
            #expect(rows["1"]?.deliveredAt == at && rows["2"]?.deliveredAt == at)
            #expect(rows["g1"]?.deliveredAt == at && rows["g1"]?.googleAcknowledgement?.state == .pending)
            #expect(rows["0"]?.deliveredAt == Self.start.addingTimeInterval(10))
            #expect(rows["g0"]?.googleAcknowledgement?.state == .pending)
        }
    }

    /// A confirmation names its environment (one id may be in two) and never confirms a refunded row.
    @Test(arguments: StoreKind.available)
    func aConfirmationStaysInItsEnvironmentAndSkipsRefundedRows(kind: StoreKind) async throws {
        try await Self.withApp(kind) { store, app in
            for environment in [StoreEnvironment.production, .sandbox] {
                var recording = Self.recording(
                    app, [Self.purchase("1"), Self.purchase("9", revokedAt: 1_700_000_100_000)],
                    environment: environment)
                recording.deliversNew = false
                _ = try await store.record(recording)
            }
            let sandbox = try await store.confirmDelivery(
                appID: app.id, environment: .sandbox, transactionIDs: ["1", "9"], at: Self.start,
                finishingWithApple: true)
            #expect(sandbox.map(\.environment) == [.sandbox, .sandbox])
            #expect(sandbox.first { $0.transaction.transactionID == "1" }?.deliveredAt == Self.start)
            #expect(sandbox.first { $0.transaction.transactionID == "9" }?.deliveredAt == nil)
            #expect(sandbox.first { $0.transaction.transactionID == "9" }?.appleFinish == nil)
            let rows = try await store.ledgerEntries(LedgerQuery(appID: app.id, limit: 10))
            #expect(
                rows.filter { $0.deliveredAt != nil }.map {
                    "\($0.environment.rawValue) \($0.transaction.transactionID)"
                }
                    == ["Sandbox 1"])
            // Without an environment, every environment's (the production row now).
            let all = try await store.confirmDelivery(
                appID: app.id, environment: nil, transactionIDs: ["1"], at: Self.start.addingTimeInterval(1),
                finishingWithApple: false)
            #expect(all.count == 2 && all.allSatisfy { $0.deliveredAt != nil })
        }
    }

    @Test(
        "Apple finishes are claimed in turns across apps, and none of a disabled account or app",
        arguments: StoreKind.available)
    func appleFinishesAreFairAndStopForDisabledTenants(kind: StoreKind) async throws {
        try await Self.withApp(kind) { store, busy in
            var account = TenancyStoreContractTests.account(email: "quiet@example.com")
            try await store.insertAccount(account)
            var quiet = TenancyStoreContractTests.app(accountID: account.id)
            try await store.insertApp(quiet)
            let confirmedAt = Self.start.addingTimeInterval(5)
            func confirm(_ app: App, _ ids: [String], after offset: TimeInterval) async throws {
                var recording = Self.recording(app, ids.map { Self.purchase($0) })
                recording.deliversNew = false
                _ = try await store.record(recording)
                _ = try await store.confirmDelivery(
                    appID: app.id, environment: nil, transactionIDs: ids,
                    at: confirmedAt.addingTimeInterval(offset), finishingWithApple: true)
            }
            // The busy app's backlog is older than the quiet app's one finish.
            try await confirm(busy, (1...6).map { "b\($0)" }, after: 0)
            try await confirm(quiet, ["q1"], after: 10)
            let now = confirmedAt.addingTimeInterval(60)
            let fair = try await store.claimAppleFinishes(dueBy: now, lease: .seconds(60), limit: 2)
            #expect(Set(fair.map(\.appID)) == [busy.id, quiet.id])

            // A disabled account's and a disabled app's finishes wait; enabled again, they are claimed.
            let later = now.addingTimeInterval(61)
            account.isEnabled = false
            #expect(try await store.updateAccount(account))
            let whileDisabled = try await store.claimAppleFinishes(dueBy: later, lease: .seconds(60), limit: 20)
            #expect(!whileDisabled.isEmpty && whileDisabled.allSatisfy { $0.appID == busy.id })
            account.isEnabled = true
            #expect(try await store.updateAccount(account))
            quiet.isEnabled = false
            #expect(try await store.updateApp(quiet))
            #expect(try await store.claimAppleFinishes(dueBy: later, lease: .seconds(60), limit: 20).isEmpty)
            quiet.isEnabled = true
            #expect(try await store.updateApp(quiet))
            let resumed = try await store.claimAppleFinishes(dueBy: later, lease: .seconds(60), limit: 20)
            #expect(resumed.map(\.transactionID) == ["q1"])
        }
    }

    @Test(
        "Apple finishes: pending with the confirmation, leased by a claim, retried when due, finished or failed",
        arguments: StoreKind.available)
    func appleFinishesAreClaimedAndRecorded(kind: StoreKind) async throws {
        try await Self.withApp(kind) { store, app in
            var recording = Self.recording(app, [Self.purchase("1"), Self.purchase("2"), Self.purchase("3")])
            recording.deliversNew = false
            _ = try await store.record(recording)
            let confirmedAt = Self.start.addingTimeInterval(5)
            let confirmed = try await store.confirmDelivery(
                appID: app.id, environment: nil, transactionIDs: ["1", "2"], at: confirmedAt, finishingWithApple: true)
            #expect(confirmed.map(\.appleFinish?.state) == [.pending, .pending])
            _ = try await store.confirmDelivery(
                appID: app.id, environment: nil, transactionIDs: ["3"], at: confirmedAt, finishingWithApple: false)
            // Xcode's test transactions never reached Apple's servers: nothing to finish there.
            var xcode = Self.recording(app, [Self.purchase("x1")], environment: .xcode)
            xcode.deliversNew = false
            _ = try await store.record(xcode)
            let test = try await store.confirmDelivery(
                appID: app.id, environment: nil, transactionIDs: ["x1"], at: confirmedAt, finishingWithApple: true)
            #expect(test.count == 1 && test[0].appleFinish == nil)

            // Due at once; a claim leases them, so a second claim (another server) gets none until the lease ends.
            let claimed = try await store.claimAppleFinishes(dueBy: confirmedAt, lease: .seconds(60), limit: 10)
            #expect(Set(claimed.map(\.transactionID)) == ["1", "2"])
            #expect(claimed.allSatisfy { $0.attempts == 0 && $0.confirmedAt == confirmedAt && $0.appID == app.id })
            #expect(
                try await store.claimAppleFinishes(
                    dueBy: confirmedAt.addingTimeInterval(59), lease: .seconds(60), limit: 10
                )
                .isEmpty)
            let one = try await store.claimAppleFinishes(
                dueBy: confirmedAt.addingTimeInterval(61), lease: .seconds(60), limit: 1)
            #expect(one.count == 1)

            let first = try #require(claimed.first { $0.transactionID == "1" })
            let second = try #require(claimed.first { $0.transactionID == "2" })
            let attempted = confirmedAt.addingTimeInterval(70)
            try await store.recordAppleFinish(first, outcome: .finished, at: attempted)
            try await store.recordAppleFinish(
                second, outcome: .retry(next: attempted.addingTimeInterval(300), error: "Apple failed (HTTP 503)"),
                at: attempted)
            #expect(
                try await store.claimAppleFinishes(
                    dueBy: attempted.addingTimeInterval(299), lease: .seconds(60), limit: 10
                )
                .isEmpty)
            let retried = try await store.claimAppleFinishes(
                dueBy: attempted.addingTimeInterval(301), lease: .seconds(60), limit: 10)
            #expect(retried.map(\.transactionID) == ["2"] && retried.first?.attempts == 1)
            try await store.recordAppleFinish(
                try #require(retried.first), outcome: .failed(error: "Apple refused the request (HTTP 400)"),
                at: attempted.addingTimeInterval(301))
            // A finished or failed one is not attempted again, nor changed by a late outcome.
            try await store.recordAppleFinish(first, outcome: .failed(error: "late"), at: attempted)
            #expect(
                try await store.claimAppleFinishes(
                    dueBy: attempted.addingTimeInterval(86_400), lease: .seconds(60), limit: 10
                )
                .isEmpty)

            let entries = Dictionary(
                uniqueKeysWithValues: try await store.ledgerEntries(LedgerQuery(appID: app.id, limit: 10)).map {
                    ($0.transaction.transactionID, $0.appleFinish)
                })
            #expect(
                entries["1"] == AppleFinishStatus(state: .finished, attempts: 1, lastError: nil, finishedAt: attempted))
            #expect(
                entries["2"]
                    == AppleFinishStatus(
                        state: .failed, attempts: 2, lastError: "Apple refused the request (HTTP 400)", finishedAt: nil)
            )
            #expect(entries["3"] == .some(nil))
        }
    }

    @Test(arguments: StoreKind.available)
    func lookUpsPageInOrderWithoutGapsOrRepeats(kind: StoreKind) async throws {
        try await Self.withApp(kind) { store, app in
            for index in 0..<7 {
                // Times with sub-millisecond parts: the stores keep milliseconds, and paging must not repeat rows.
                let offset = Double(index / 2) + 0.000_4
                _ = try await store.record(
                    Self.recording(app, [Self.purchase("t\(index)", original: "o\(index % 2)")], at: offset))
            }
            var seen: [String] = []
            var after: LedgerPosition?
            repeat {
                let page = try await store.ledgerEntries(LedgerQuery(appID: app.id, after: after, limit: 3))
                seen += page.map(\.transaction.transactionID)
                after = page.count == 3 ? page.last.map(LedgerPosition.init(of:)) : nil
            } while after != nil
            #expect(seen == (0..<7).map { "t\($0)" })
            let originals = try await store.ledgerEntries(
                LedgerQuery(appID: app.id, originalTransactionID: "o1", limit: 10))
            #expect(originals.map(\.transaction.transactionID) == ["t1", "t3", "t5"])
            let recent = try await store.ledgerEntries(
                LedgerQuery(appID: app.id, since: Self.start.addingTimeInterval(2), limit: 10))
            #expect(recent.map(\.transaction.transactionID) == ["t4", "t5", "t6"])
            // Another app's ledger is not this one's; removing the app removes its ledger.
            #expect(try await store.ledgerEntries(LedgerQuery(appID: UUID(), limit: 10)).isEmpty)
            #expect(try await store.deleteApp(id: app.id))
            #expect(try await store.ledgerEntries(LedgerQuery(appID: app.id, limit: 10)).isEmpty)
        }
    }

    @Test(arguments: StoreKind.available)
    func concurrentRecordingsOfOneTransactionMakeItNewExactlyOnce(kind: StoreKind) async throws {
        try await Self.withApp(kind) { store, app in
            let news = try await withThrowingTaskGroup(of: Int.self) { group in
                for index in 0..<20 {
                    group.addTask {
                        // Overlapping inputs in different orders: the stores must neither double nor deadlock.
                        let transactions = [Self.purchase("a"), Self.purchase("b", original: "a"), Self.purchase("c")]
                        let input = index % 2 == 0 ? transactions : transactions.reversed()
                        let results = try await store.record(
                            Self.recording(app, input, user: "u\(index % 3)", request: "r\(index)"))
                        return results.filter(\.isNew).count
                    }
                }
                return try await group.reduce(0, +)
            }
            #expect(news == 3)
            let entries = try await store.ledgerEntries(LedgerQuery(appID: app.id, limit: 10))
            #expect(entries.count == 3)
            // One claimant for the original transaction, whoever won.
            #expect(Set(entries.filter { $0.transaction.originalTransactionID == "a" }.map(\.claimant)).count == 1)
        }
    }

    @Test(arguments: StoreKind.available)
    func concurrentRecordingsKeepEachTheirOwnRequestAndTimeAndUser(kind: StoreKind) async throws {
        try await Self.withApp(kind) { store, app in
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<24 {
                    group.addTask {
                        _ = try await store.record(
                            Self.recording(
                                app, [Self.purchase("own\(index)")], user: index % 2 == 0 ? "user\(index)" : nil,
                                at: Double(index), request: "request\(index)"))
                    }
                }
                try await group.waitForAll()
            }
            let rows = try await store.ledgerEntries(LedgerQuery(appID: app.id, limit: 100))
            #expect(rows.count == 24)
            for row in rows {
                let index = Int(row.transaction.transactionID.dropFirst(3)) ?? -1
                #expect(row.firstRequestID == "request\(index)")
                #expect(row.firstSeenAt == Self.start.addingTimeInterval(Double(index)))
                #expect(row.claimant == (index % 2 == 0 ? "user\(index)" : nil))
            }
        }
    }

    @Test(arguments: StoreKind.available)
    func aRefusedRecordingAmongConcurrentOnesIsUndoneAloneTheOthersStand(kind: StoreKind) async throws {
        try await Self.withApp(kind) { store, app in
            _ = try await store.record(Self.recording(app, [Self.purchase("claimed")], user: "alice"))
            let outcomes = try await withThrowingTaskGroup(of: (Int, Bool).self) { group in
                for index in 0..<12 {
                    group.addTask {
                        // Index 5 presents alice's purchase as bob's, under `refuse`; the rest are new purchases.
                        var recording = Self.recording(
                            app, [Self.purchase(index == 5 ? "claimed" : "p\(index)")],
                            user: index == 5 ? "bob" : "u\(index)",
                            request: "r\(index)")
                        recording.refusesOtherUsers = true
                        do {
                            return (index, try await store.record(recording).first?.isNew ?? false)
                        } catch let error as ServiceError where error.code == .claimedByOtherUser {
                            return (index, false)
                        }
                    }
                }
                return try await group.reduce(into: [Int: Bool]()) { $0[$1.0] = $1.1 }
            }
            #expect(outcomes.count == 12)
            let othersNew = outcomes.filter { $0.key != 5 }.allSatisfy(\.value)
            #expect(othersNew)
            #expect(outcomes[5] == false)
            let rows = try await store.ledgerEntries(LedgerQuery(appID: app.id, limit: 100))
            #expect(rows.count == 12)
            #expect(rows.first { $0.transaction.transactionID == "claimed" }?.claimant == "alice")
        }
    }

    @Test(arguments: StoreKind.available)
    func theAppsLedgerSettingsAreStored(kind: StoreKind) async throws {
        try await Self.withApp(kind) { store, app in
            #expect(app.claimsPolicy == .flag && app.deliveryMode == .once && app.productCatalog == nil)
            #expect(app.enrichment == .off && app.idLookups == .refuse)
            let stored = try await store.app(token: app.token)
            #expect(stored == app)
            var changed = app
            changed.claimsPolicy = .transfer
            changed.deliveryMode = .confirm
            // The catalog's terms are stored with it: kinds, a duration, entitlements.
            changed.catalog = try [
                "com.example.coins=consumable", "com.example.pro_1=auto_renewable:pro,no_ads", "com.example.plain",
                "com.example.season=non_renewing/P3M:season", "com.example.lifetime=non_consumable:pro",
            ].map(CatalogProduct.init(parsing:))
            changed.enrichment = .on
            changed.idLookups = .allow
            changed.requiresUser = true
            changed.appleAppID = 1_234_567_890
            let updated = try await store.updateApp(changed)
            let reloaded = try await store.app(token: app.token)
            #expect(updated && reloaded == changed)
            changed.catalog = []
            _ = try await store.updateApp(changed)
            let emptied = try await store.app(token: app.token)
            #expect(emptied?.productCatalog == [])

            // Inserted with values other than the defaults, an app reads back as it was written.
            var inserted = TenancyStoreContractTests.app(accountID: app.accountID)
            inserted.enrichment = .on
            inserted.idLookups = .allow
            inserted.requiresUser = true
            inserted.appleAppID = 987_654_321
            try await store.insertApp(inserted)
            #expect(try await store.app(token: inserted.token) == inserted)
        }
    }

    /// The customers' marker moves with a recording that inserts rows or records for a user, and not with one that
    /// only sees known rows without a user (so a known customer stays in memory under a flow of known receipts).
    /// Where the store can tell without a listener (SQLite).
    @Test(arguments: StoreKind.available)
    func newRowsAndUsersMoveTheCustomersMarker(kind: StoreKind) async throws {
        try await Self.withApp(kind) { store, app in
            guard let before = store.customerChangeMarker() else { return }
            _ = try await store.record(Self.recording(app, [Self.purchase("c1")]))
            let afterNew = try #require(store.customerChangeMarker())
            #expect(afterNew != before)
            _ = try await store.record(Self.recording(app, [Self.purchase("c1")], at: 1, request: "r2"))
            #expect(store.customerChangeMarker() == afterNew)
            _ = try await store.record(Self.recording(app, [Self.purchase("c1")], user: "u1", at: 2, request: "r3"))
            #expect(store.customerChangeMarker() != afterNew)
        }
    }
}
