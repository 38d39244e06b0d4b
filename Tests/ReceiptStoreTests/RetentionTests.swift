import Foundation
import ReceiptCore
import ReceiptService
import ReceiptStore
import TestSupport
import Testing

/// The retention's purge in both stores over a long synthetic run: what is older than its retention goes, in batches,
/// what is newer or still pending stays, and the database stops growing once the run is past the retention.
@Suite struct RetentionTests {
    static let day: TimeInterval = 86_400

    /// Deletes every row of `kind` older than `before`, a batch at a time, as the purger does; returns how many.
    static func purgeAll(_ store: any DataStore, _ kind: PurgeKind, before: Date) async throws -> Int {
        var total = 0
        while true {
            let deleted = try await store.purge(kind, before: before, limit: 7)
            total += deleted
            if deleted < 7 { return total }
        }
    }

    @Test(
        "sixty days of notifications and events: the oldest go, the database stays flat", arguments: StoreKind.available
    )
    func aLongRunStaysFlat(kind: StoreKind) async throws {
        try await withTestStore(kind) { store, location in
            let account = TenancyStoreContractTests.account()
            try await store.insertAccount(account)
            let app = TenancyStoreContractTests.app(accountID: account.id)
            try await store.insertApp(app)
            let start = NotificationStoreContractTests.start
            let perDay = 30
            let notificationsKept = 10.0
            let eventsKept = 5.0
            var sizes: [Int: Int] = [:]
            for day in 0..<60 {
                let today = start.addingTimeInterval(Double(day) * Self.day)
                for index in 0..<perDay {
                    let notification = NotificationStoreContractTests.notification(
                        "TEST", uuid: "d\(day)-\(index)", signedAt: today.millisecondsSince1970, transaction: nil)
                    _ = try await store.recordNotification(
                        NotificationStoreContractTests.record(
                            notification, app: app, at: Double(day) * Self.day + Double(index)))
                }
                try await store.recordEvents(
                    (0..<perDay).map { index in
                        WebhookEvent(
                            appID: app.id, environment: .production, kind: .test,
                            createdAt: today.addingTimeInterval(Double(index)), data: JSONObject(capacity: 0))
                    })
                let now = today.addingTimeInterval(Self.day - 1)
                let notifications = try await Self.purgeAll(
                    store, .notifications, before: now.addingTimeInterval(-notificationsKept * Self.day))
                let events = try await Self.purgeAll(
                    store, .events, before: now.addingTimeInterval(-eventsKept * Self.day))
                // In the steady state a day's purge takes a day's rows: what is kept stays the same size.
                if day > Int(notificationsKept) { #expect(notifications == perDay, "day \(day): \(notifications)") }
                // (Each notification made an event too.)
                if day > Int(eventsKept) { #expect(events == 2 * perDay, "day \(day): \(events)") }
                if case .sqlite(let path) = location {
                    let bytes = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
                    let wal = (try? FileManager.default.attributesOfItem(atPath: path + "-wal")[.size] as? Int) ?? 0
                    sizes[day] = bytes + wal
                }
            }
            // What is within the retention is all there.
            let last = start.addingTimeInterval(59 * Self.day)
            let kept = try await store.webhookEvents(
                WebhookEventQuery(appID: app.id, since: last.addingTimeInterval(-4 * Self.day), limit: 10_000))
            #expect(kept.count == 5 * 2 * perDay)
            #expect(
                try await store.knownNotifications(appID: app.id, uuids: ["d59-0", "d50-0", "d49-0", "d10-0"])
                    == ["d59-0", "d50-0"])
            // An event still to deliver is kept however old it is.
            try await store.addWebhookEndpoint(NotificationStoreContractTests.endpoint(app))
            let pending = WebhookEvent(
                appID: app.id, environment: .production, kind: .test, createdAt: start, data: JSONObject(capacity: 0))
            try await store.recordEvents([pending])
            _ = try await Self.purgeAll(store, .events, before: last.addingTimeInterval(Self.day))
            #expect(try await store.webhookEvents(WebhookEventQuery(appID: app.id, eventIDs: [pending.id])).count == 1)
            if let middle = sizes[30], let end = sizes[59] {
                #expect(Double(end) <= Double(middle) * 1.2, "the database grew from \(middle) to \(end) bytes")
            }
        }
    }

    @Test("every kind purges: expired sessions and links, audit entries", arguments: StoreKind.available)
    func everyKindPurges(kind: StoreKind) async throws {
        try await withTestStore(kind) { store, _ in
            let tenancy = TenancyService(store: store, masterKey: MasterKey.generate())
            _ = try await tenancy.createAccount(name: "A", email: "a@example.com", planName: "free")
            let now = Date()
            #expect(try await Self.purgeAll(store, .audit, before: now.addingTimeInterval(-60)) == 0)
            #expect(try await Self.purgeAll(store, .audit, before: now.addingTimeInterval(60)) >= 1)
            for kind in [PurgeKind.sessions, .signInLinks] {
                #expect(try await Self.purgeAll(store, kind, before: now) == 0)
            }
            // Expired sessions and links go, live ones stay (a used link stays until it expires, then goes too).
            let account = try #require(try await store.account(email: "a@example.com"))
            let live = AccountSession(
                id: UUID(), accountID: account.id, tokenHash: Array(repeating: 1, count: 32), method: "link",
                address: nil, createdAt: now, lastUsedAt: now, expiresAt: now.addingTimeInterval(3_600))
            var expired = live
            expired.id = UUID()
            expired.tokenHash = Array(repeating: 2, count: 32)
            expired.expiresAt = now.addingTimeInterval(-1)
            try await store.insertSession(live)
            try await store.insertSession(expired)
            try await store.insertSignInLink(
                SignInLink(
                    tokenHash: Array(repeating: 3, count: 32), accountID: account.id, createdAt: now,
                    expiresAt: now.addingTimeInterval(900)))
            try await store.insertSignInLink(
                SignInLink(
                    tokenHash: Array(repeating: 4, count: 32), accountID: account.id, createdAt: now,
                    expiresAt: now.addingTimeInterval(-1), usedAt: now.addingTimeInterval(-60)))
            #expect(try await Self.purgeAll(store, .sessions, before: now) == 1)
            #expect(try await Self.purgeAll(store, .signInLinks, before: now) == 1)
            #expect(try await store.session(tokenHash: live.tokenHash)?.id == live.id)
            #expect(try await store.session(tokenHash: expired.tokenHash) == nil)
            #expect(try await store.useSignInLink(tokenHash: Array(repeating: 4, count: 32), at: now) == nil)
            #expect(try await store.useSignInLink(tokenHash: Array(repeating: 3, count: 32), at: now) == account.id)
        }
    }

    @Test("a reconciliation is leased to one server at a time and keeps its cursor", arguments: StoreKind.available)
    func reconciliationsAreLeased(kind: StoreKind) async throws {
        try await LedgerStoreContractTests.withApp(kind) { store, app in
            let now = NotificationStoreContractTests.start
            let first = try await store.claimReconciliation(appID: app.id, now: now, until: now.addingTimeInterval(60))
            #expect(first == ReconciliationState(cursor: nil, finishedAt: nil))
            // Held: another server's claim gets nothing until the lease runs out.
            #expect(
                try await store.claimReconciliation(appID: app.id, now: now, until: now.addingTimeInterval(60)) == nil)
            try await store.saveReconciliation(
                appID: app.id, cursor: "{}", now: now, leaseUntil: now.addingTimeInterval(120))
            #expect(
                try await store.claimReconciliation(
                    appID: app.id, now: now.addingTimeInterval(61), until: now.addingTimeInterval(200)) == nil)
            let resumed = try await store.claimReconciliation(
                appID: app.id, now: now.addingTimeInterval(121), until: now.addingTimeInterval(200))
            #expect(resumed == ReconciliationState(cursor: "{}", finishedAt: nil))
            // Finished: no cursor, the time kept; the lease given up.
            try await store.saveReconciliation(
                appID: app.id, cursor: nil, now: now.addingTimeInterval(150), leaseUntil: nil)
            let next = try await store.claimReconciliation(
                appID: app.id, now: now.addingTimeInterval(151), until: now.addingTimeInterval(300))
            #expect(next == ReconciliationState(cursor: nil, finishedAt: now.addingTimeInterval(150)))
        }
    }
}
