import Foundation
import Testing

@testable import ReceiptService

/// Days and months, billable outcomes, rate limits and the billing arithmetic.
@Suite struct UsageTests {
    @Test(arguments: [
        (0.0, "1970-01-01"), (86_399.999, "1970-01-01"), (951_782_400, "2000-02-29"), (1_709_164_800, "2024-02-29"),
        (1_798_761_599, "2026-12-31"), (1_798_761_600, "2027-01-01"), (4_107_542_400, "2100-03-01"),
    ])
    func utcDays(seconds: Double, expected: String) throws {
        let date = Date(timeIntervalSince1970: seconds)
        #expect(UsageDay(containing: date).description == expected)
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = try #require(TimeZone(identifier: "UTC"))
        let parts = calendar.dateComponents([.year, .month, .day], from: date)
        #expect(
            UsageDay(containing: date)
                == UsageDay(String(format: "%04d-%02d-%02d", parts.year!, parts.month!, parts.day!)))
        // The day's first instant, from the day and from any time within it.
        let start = try #require(calendar.date(from: parts))
        #expect(UsageDay(containing: date).start == start)
        #expect(UsageDay.start(containing: date) == start)
    }

    @Test func monthsStartAndEndInUTC() throws {
        let february = try #require(UsageMonth("2024-02"))
        #expect(february.start == Date(timeIntervalSince1970: 1_706_745_600))
        #expect(february.numberOfDays == 29)
        #expect(february.firstDay.description == "2024-02-01")
        #expect(february.next.description == "2024-03")
        #expect(UsageMonth("2026-12")?.next.description == "2027-01")
        #expect(UsageMonth(containing: Date(timeIntervalSince1970: 1_706_745_599)).description == "2024-01")
        for bad in ["2026-13", "2026-1", "26-01", "2026-01-01", "", "abcd-ef", "1969-12"] {
            #expect(UsageMonth(bad) == nil)
        }
        for bad in ["2026-02-29", "2026-04-31", "2026-00-10", "2026-1-01"] { #expect(UsageDay(bad) == nil) }
    }

    @Test(
        arguments: [
            (0, UsageOutcome.valid), (403, .rejected), (21002, .appleCode), (21003, .appleCode), (21006, .appleCode),
            (21010, .appleCode), (21005, nil), (21009, nil), (21100, nil), (21199, nil), (400, nil), (401, nil),
            (402, nil), (413, nil), (429, nil), (500, nil),
        ] as [(Int, UsageOutcome?)])
    func billableOutcomes(status: Int, expected: UsageOutcome?) {
        #expect(UsageOutcome(status: status) == expected)
    }

    @Test func rateLimiterAllowsABurstThenTheRate() {
        let limiter = RateLimiter<UUID>()
        let account = UUID()
        let start = ContinuousClock.now
        for _ in 0..<4 { #expect(limiter.acquire(account, rate: 4, now: start) == nil) }
        let wait = limiter.acquire(account, rate: 4, now: start)
        #expect(wait == .milliseconds(250))
        // A quarter second later one token is back, and only one.
        #expect(limiter.acquire(account, rate: 4, now: start + .milliseconds(250)) == nil)
        #expect(limiter.acquire(account, rate: 4, now: start + .milliseconds(250)) != nil)
        // Other accounts have their own buckets; a long pause refills to the burst, not beyond.
        #expect(limiter.acquire(UUID(), rate: 4, now: start) == nil)
        let later = start + .seconds(60)
        for _ in 0..<4 { #expect(limiter.acquire(account, rate: 4, now: later) == nil) }
        #expect(limiter.acquire(account, rate: 4, now: later) != nil)
    }

    @Test func rateLimiterForgetsIdleBucketsWhenFull() {
        let limiter = RateLimiter<UUID>(capacity: 3)
        let start = ContinuousClock.now
        let first = UUID()
        for _ in 0..<2 { #expect(limiter.acquire(first, rate: 2, now: start) == nil) }
        for _ in 0..<2 { _ = limiter.acquire(UUID(), rate: 2, now: start) }
        // A new account a second later: the idle buckets go, so `first` starts full again.
        _ = limiter.acquire(UUID(), rate: 2, now: start + .seconds(2))
        #expect(limiter.acquire(first, rate: 2, now: start + .seconds(2)) == nil)
        #expect(limiter.acquire(first, rate: 2, now: start + .seconds(2)) == nil)
        #expect(limiter.acquire(first, rate: 2, now: start + .seconds(2)) != nil)
    }

    @Test(arguments: [(1_234, 50, 62), (1, 50, 0), (10, 50, 1), (999, 1, 1), (0, 50, 0), (3_000, 7, 21), (1_500, 1, 2)])
    func overagePriceRoundsHalfACentUp(calls: Int, per1000: Int, cents: Int) {
        #expect(BillingReport.overagePrice(calls: calls, per1000Cents: per1000) == cents)
    }

    @Test func billingReportListsPayingAndUsingAccounts() throws {
        let month = try #require(UsageMonth("2026-11"))
        let created = month.start.addingTimeInterval(-86_400)
        func account(_ email: String, _ plan: String, enabled: Bool = true, created: Date = created) -> Account {
            Account(
                id: UUID(), name: email, email: email, planName: plan, isEnabled: enabled, createdAt: created,
                updatedAt: created)
        }
        let idleFree = account("a@example.com", "free")
        let busyFree = account("b@example.com", "free")
        let idlePro = account("c@example.com", "pro")
        let disabledPro = account("d@example.com", "pro", enabled: false)
        let laterPro = account("e@example.com", "pro", created: month.next.start)
        let report = try BillingReport(
            month: month, accounts: [laterPro, disabledPro, idlePro, busyFree, idleFree], plans: Plan.seeded,
            calls: [busyFree.id: 1_200])
        #expect(report.lines.map(\.email) == ["b@example.com", "c@example.com"])
        #expect(report.lines[0].overageCalls == 200 && report.lines[0].totalCents == 0)
        #expect(report.lines[1].billableCalls == 0 && report.lines[1].totalCents == 4_900)
        #expect(throws: ServiceError(.storage)) {
            try BillingReport(
                month: month, accounts: [account("x@example.com", "gone")], plans: Plan.seeded, calls: [:])
        }
    }
}
