import Foundation
import ReceiptService
import ReceiptStore
import TestSupport
import Testing

/// Usage counters in both stores, and the meter that fills them, including several meters on one database.
@Suite struct UsageStoreContractTests {
    static let november = UsageMonth(year: 2026, month: 11)!
    static let lastDayOfOctober = UsageDay("2026-10-31")!
    static let firstOfNovember = UsageDay("2026-11-01")!
    static let lastOfNovember = UsageDay("2026-11-30")!

    static func key(
        _ account: UUID, _ app: UUID, _ day: UsageDay, _ outcome: UsageOutcome = .valid,
        _ endpoint: UsageEndpoint = .api
    ) -> UsageKey {
        UsageKey(accountID: account, appID: app, endpoint: endpoint, outcome: outcome, day: day)
    }

    @Test(arguments: StoreKind.available)
    func countersAddUpPerDayAndPerMonth(kind: StoreKind) async throws {
        try await withTestStore(kind) { store, _ in
            let account = TenancyStoreContractTests.account(plan: "pro")
            let other = TenancyStoreContractTests.account(email: "other@example.com")
            try await store.insertAccount(account)
            try await store.insertAccount(other)
            let (app, app2) = (UUID(), UUID())

            try await store.addUsage([:])
            try await store.addUsage([
                Self.key(account.id, app, Self.firstOfNovember): 3,
                Self.key(account.id, app, Self.firstOfNovember, .rejected): 1,
                Self.key(account.id, app2, Self.lastOfNovember, .appleCode, .apiEncrypted): 2,
                Self.key(account.id, app, Self.lastDayOfOctober): 5,
                Self.key(other.id, app, Self.firstOfNovember): 7,
            ])
            try await store.addUsage([Self.key(account.id, app, Self.firstOfNovember): 4])

            let november = try await store.usage(month: Self.november, accountID: account.id, appID: nil)
            #expect(
                november == [
                    UsageRecord(key: Self.key(account.id, app, Self.firstOfNovember, .rejected), calls: 1),
                    UsageRecord(key: Self.key(account.id, app, Self.firstOfNovember), calls: 7),
                    UsageRecord(
                        key: Self.key(account.id, app2, Self.lastOfNovember, .appleCode, .apiEncrypted), calls: 2),
                ])
            #expect(try await store.usage(month: Self.november, accountID: account.id, appID: app2).count == 1)
            #expect(try await store.usage(month: Self.november, accountID: nil, appID: nil).count == 4)
            #expect(
                try await store.usage(month: UsageMonth(year: 2026, month: 10)!, accountID: nil, appID: nil)
                    == [UsageRecord(key: Self.key(account.id, app, Self.lastDayOfOctober), calls: 5)])

            #expect(try await store.monthlyCalls(month: Self.november) == [account.id: 10, other.id: 7])
            let standing = try #require(try await store.standing(accountID: account.id, month: Self.november))
            #expect(standing == AccountStanding(isEnabled: true, plan: Plan.seeded[1], monthCalls: 10))
            #expect(
                try await store.standing(accountID: other.id, month: UsageMonth(year: 2027, month: 1)!)?.monthCalls == 0
            )
            #expect(try await store.standing(accountID: UUID(), month: Self.november) == nil)
        }
    }

    @Test("two meters flushing into one database at once count every call exactly", arguments: StoreKind.available)
    func concurrentMetersAreExact(kind: StoreKind) async throws {
        try await withTestStore(kind) { store, _ in
            let account = TenancyStoreContractTests.account()
            try await store.insertAccount(account)
            let apps = [UUID(), UUID(), UUID()]
            let now = Self.firstOfNovember.usageMonth.start
            let month = UsageMeter.AccountMonth(accountID: account.id, month: Self.november)
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<2 {
                    group.addTask {
                        let meter = UsageMeter()
                        for round in 0..<20 {
                            // The same keys from both meters, in different orders: a deadlock would fail the test.
                            for (index, app) in apps.enumerated() where (index + round) % 3 != 0 {
                                let mark = meter.beginRead(month)
                                #expect(meter.reserve(month, stored: 0, since: mark, quota: nil))
                                meter.settle(month, counting: Self.key(account.id, app, Self.firstOfNovember))
                            }
                            try await meter.flush(to: store, now: now)
                        }
                    }
                }
                try await group.waitForAll()
            }
            // 20 rounds × 2 of 3 apps × 2 meters.
            #expect(try await store.monthlyCalls(month: Self.november) == [account.id: 80])
            let rows = try await store.usage(month: Self.november, accountID: account.id, appID: nil)
            #expect(rows.reduce(0) { $0 + $1.calls } == 80)
        }
    }

    @Test("a meter never lets an account past its quota, counting what it has not flushed yet")
    func meterReservesAgainstTheQuota() async throws {
        try await withTestStore(.sqlite) { store, _ in
            let account = TenancyStoreContractTests.account()
            try await store.insertAccount(account)
            let month = UsageMeter.AccountMonth(accountID: account.id, month: Self.november)
            let key = Self.key(account.id, UUID(), Self.firstOfNovember)
            // Another server already flushed 2 of the quota of 5.
            try await store.addUsage([key: 2])
            let meter = UsageMeter()
            func admit() async throws -> Bool {
                let mark = meter.beginRead(month)
                let stored = try await store.standing(accountID: account.id, month: Self.november)?.monthCalls ?? -1
                #expect(meter.readWasClean(mark))
                return meter.reserve(month, stored: stored, since: mark, quota: 5)
            }
            // Two running at once take two places; a third fits; the fourth does not.
            #expect(try await admit())
            #expect(try await admit())
            #expect(try await admit())
            #expect(try await !admit())
            // One of the running calls ends without a verdict: its place is free again.
            meter.settle(month, counting: nil)
            meter.settle(month, counting: key)
            meter.settle(month, counting: key)
            #expect(try await admit())
            meter.settle(month, counting: key)
            #expect(try await !admit())
            // After a flush the store holds them all and the decision is the same.
            #expect(try await meter.flush(to: store, now: Self.firstOfNovember.usageMonth.start) == 3)
            #expect(try await store.monthlyCalls(month: Self.november) == [account.id: 5])
            #expect(try await !admit())
            #expect(meter.unflushedCalls == 0)
        }
    }

    /// Quota grants: whatever the servers claim, the stored calls plus every live grant stay within the quota.
    @Test("quota grants never let the servers together past the quota", arguments: StoreKind.available)
    func quotaGrantsShareTheQuota(kind: StoreKind) async throws {
        try await withTestStore(kind) { store, _ in
            let account = TenancyStoreContractTests.account()
            try await store.insertAccount(account)
            let month = UsageMeter.AccountMonth(accountID: account.id, month: Self.november)
            let now = Self.firstOfNovember.usageMonth.start
            let (first, second) = (UUID(), UUID())
            func claim(_ server: UUID, holding: Int = 0, maximum: Int = 1_000, at date: Date = now) async throws
                -> Int
            {
                try await store.claimQuota(
                    QuotaClaim(
                        accountMonth: month, server: server, quota: 100, holding: holding, maximumGrant: maximum,
                        expiresAt: date.addingTimeInterval(30)),
                    now: date)
            }
            // A quarter of what is left each time, at most the maximum; the two servers' grants add up to no more.
            #expect(try await claim(first) == 25)
            #expect(try await claim(second) == 18)  // (100 - 25) / 4
            #expect(try await claim(first, holding: 25, maximum: 5) == 5)  // first now holds 30
            // first holds 30, second 18: a claim of second sees 100 - 30 - 18 = 52 left and takes a quarter.
            #expect(try await claim(second, holding: 18) == 13)

            // Flushing moves calls from a grant into the stored count: the sum stays, so nothing more is granted
            // beyond the quota.
            try await store.addUsage(
                [Self.key(account.id, UUID(), Self.firstOfNovember): 40],
                grants: GrantRenewal(server: first, expiresAt: now.addingTimeInterval(30)))
            #expect(try await store.monthlyCalls(month: Self.november)[account.id] == 40)
            // 40 stored, first's grant 30 - 40 → 0, second holds 31: 29 left, a quarter of it.
            #expect(try await claim(first) == 7)

            // Sequentially draining with both servers never grants more than the quota in all.
            let fresh = TenancyStoreContractTests.account(email: "fresh@example.com")
            try await store.insertAccount(fresh)
            let freshMonth = UsageMeter.AccountMonth(accountID: fresh.id, month: Self.november)
            var held: [UUID: Int] = [first: 0, second: 0]
            var rounds = 0
            while rounds < 200 {
                rounds += 1
                let server = rounds % 2 == 0 ? first : second
                let granted = try await store.claimQuota(
                    QuotaClaim(
                        accountMonth: freshMonth, server: server, quota: 100, holding: held[server]!,
                        maximumGrant: 10, expiresAt: now.addingTimeInterval(30)),
                    now: now)
                held[server]! += granted
                if granted == 0 && rounds > 2 { break }
            }
            #expect(held[first]! + held[second]! == 100)

            // A server that stops renewing: its grant lapses and the other may use it.
            let later = now.addingTimeInterval(60)
            let granted = try await store.claimQuota(
                QuotaClaim(
                    accountMonth: freshMonth, server: first, quota: 100, holding: held[first]!, maximumGrant: 1_000,
                    expiresAt: later.addingTimeInterval(30)),
                now: later)
            #expect(granted == (100 - held[first]!) / 4)

            // A claim counted its holding before its own flush stored part of it: the store takes those calls off
            // the holding (its count of what this server's flushes stored says how many), so nothing is counted twice.
            let racing = TenancyStoreContractTests.account(email: "racing@example.com")
            try await store.insertAccount(racing)
            let racingMonth = UsageMeter.AccountMonth(accountID: racing.id, month: Self.november)
            func racingClaim(holding: Int, flushed: Int) async throws -> Int {
                try await store.claimQuota(
                    QuotaClaim(
                        accountMonth: racingMonth, server: first, quota: 10, holding: holding, flushed: flushed,
                        maximumGrant: 1_000, expiresAt: now.addingTimeInterval(30)),
                    now: now)
            }
            #expect(try await racingClaim(holding: 0, flushed: 0) == 2)  // a quarter of 10
            try await store.addUsage(
                [Self.key(racing.id, UUID(), Self.firstOfNovember): 2],
                grants: GrantRenewal(server: first, expiresAt: now.addingTimeInterval(30)))
            // Counted as holding 2 with 0 known stored, but the store says 2 were stored: 8 are left, a quarter is 2.
            #expect(try await racingClaim(holding: 2, flushed: 0) == 2)

            // Released grants are free at once.
            try await store.releaseQuotaGrants(server: first)
            let afterRelease = try await store.claimQuota(
                QuotaClaim(
                    accountMonth: freshMonth, server: second, quota: 100, holding: 0, maximumGrant: 1_000,
                    expiresAt: later.addingTimeInterval(30)),
                now: later)
            #expect(afterRelease == 25)
        }
    }
}
