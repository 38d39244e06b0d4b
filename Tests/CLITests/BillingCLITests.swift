import Foundation
import Logging
import ReceiptService
import ReceiptStore
import TestSupport
import Testing

/// `usage` and `billing report` over a month whose usage is known, checked against totals worked out by hand.
@Suite struct BillingCLITests {
    struct Line: Decodable, Equatable {
        let email: String
        let plan: String
        let includedQuota: Int?
        let billableCalls: Int
        let overageCalls: Int
        let basePriceCents: Int
        let overagePriceCents: Int
        let totalCents: Int

        enum CodingKeys: String, CodingKey {
            case email, plan
            case includedQuota = "included_quota"
            case billableCalls = "billable_calls"
            case overageCalls = "overage_calls"
            case basePriceCents = "base_price_cents"
            case overagePriceCents = "overage_price_cents"
            case totalCents = "total_cents"
        }
    }

    struct Report: Decodable {
        let month: String
        let lines: [Line]
    }

    /// Creates an account with the CLI and returns its id.
    static func account(_ cli: CLI, _ email: String, plan: String) throws -> UUID {
        let outcome = try cli.run(["account", "create", "--name", email, "--email", email, "--plan", plan, "--json"])
        #expect(outcome.status == 0, "\(outcome.stderr)")
        return try #require(UUID(uuidString: try outcome.json(CLITests.AccountJSON.self).id))
    }

    /// This month in UTC as `yyyy-MM`, with the last day of the month before, this month's last day and the first
    /// day of the next, as `yyyy-MM-dd`.
    static func thisMonth(_ now: Date = Date()) -> (String, String, String, String) {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let start = calendar.date(from: calendar.dateComponents([.year, .month], from: now))!
        let next = calendar.date(byAdding: .month, value: 1, to: start)!
        func day(_ date: Date) -> String {
            let parts = calendar.dateComponents([.year, .month, .day], from: date)
            return String(format: "%04d-%02d-%02d", parts.year!, parts.month!, parts.day!)
        }
        let oneDay: TimeInterval = 86_400
        return (
            String(day(start).prefix(7)), day(start.addingTimeInterval(-oneDay)), day(next.addingTimeInterval(-oneDay)),
            day(next)
        )
    }

    @Test(arguments: StoreKind.available)
    func monthlyReportMatchesHandComputedTotals(kind: StoreKind) async throws {
        try await withCLI(kind) { cli in
            let freeBusy = try Self.account(cli, "free-busy@example.com", plan: "free")
            _ = try Self.account(cli, "free-idle@example.com", plan: "free")
            let proOver = try Self.account(cli, "pro-over@example.com", plan: "pro")
            _ = try Self.account(cli, "pro-idle@example.com", plan: "pro")
            let enterprise = try Self.account(cli, "ent@example.com", plan: "enterprise")
            let app = UUID()
            // The month the accounts were made in (an account is billed from the month it was created), the last day
            // before it and the first day after it.
            let (month, lastDayBefore, lastDay, firstDayAfter) = Self.thisMonth()
            func key(_ account: UUID, _ day: String, _ outcome: UsageOutcome = .valid) -> UsageKey {
                UsageKey(accountID: account, appID: app, endpoint: .api, outcome: outcome, day: UsageDay(day)!)
            }
            var logger = Logger(label: "test")
            logger.logLevel = .critical
            let counts = [
                key(freeBusy, "\(month)-01"): 790, key(freeBusy, lastDay, .rejected): 10,
                key(freeBusy, lastDayBefore): 5_000, key(freeBusy, firstDayAfter): 5_000,
                key(proOver, "\(month)-02"): 100_000, key(proOver, "\(month)-03", .appleCode): 1_234,
                key(enterprise, "\(month)-15"): 2_000_000,
            ]
            try await StoreLocation(cli.database).withStore(logger: logger) { store in try await store.addUsage(counts)
            }

            // By hand: free 800 of 1,000 → 0; pro 101,234 → 1,234 over at 50¢/1,000 = 61.7¢ → 62¢, 4,900 + 62;
            // idle pro pays its base; enterprise is unlimited at 49,900; the idle free account is not billed.
            let csv = try cli.run(["billing", "report", "--month", month, "--format", "csv"])
            #expect(csv.status == 0, "\(csv.stderr)")
            let expectedCSV = [
                "month,account_id,email,plan,included_quota,billable_calls,overage_calls,base_price_cents,overage_price_cents,total_cents",
                "\(month),\(enterprise.uuidString.lowercased()),ent@example.com,enterprise,unlimited,2000000,0,49900,0,49900",
                "\(month),\(freeBusy.uuidString.lowercased()),free-busy@example.com,free,1000,800,0,0,0,0",
                "\(month),\(proOver.uuidString.lowercased()),pro-over@example.com,pro,100000,101234,1234,4900,62,4962",
            ]
            let csvLines = csv.stdout.components(separatedBy: "\r\n")
            #expect(Array(csvLines.prefix(3)) == Array(expectedCSV.prefix(3)))
            #expect(csvLines.count == 6 && csvLines[3].contains(",pro-idle@example.com,pro,100000,0,0,4900,0,4900"))
            #expect(csvLines[4] == expectedCSV[3])
            #expect(csvLines.last == "")

            let json = try cli.run(["billing", "report", "--month", month, "--format", "json"])
            let report = try json.json(Report.self)
            #expect(report.month == month)
            #expect(
                report.lines == [
                    Line(
                        email: "ent@example.com", plan: "enterprise", includedQuota: nil, billableCalls: 2_000_000,
                        overageCalls: 0, basePriceCents: 49_900, overagePriceCents: 0, totalCents: 49_900),
                    Line(
                        email: "free-busy@example.com", plan: "free", includedQuota: 1_000, billableCalls: 800,
                        overageCalls: 0, basePriceCents: 0, overagePriceCents: 0, totalCents: 0),
                    Line(
                        email: "pro-idle@example.com", plan: "pro", includedQuota: 100_000, billableCalls: 0,
                        overageCalls: 0, basePriceCents: 4_900, overagePriceCents: 0, totalCents: 4_900),
                    Line(
                        email: "pro-over@example.com", plan: "pro", includedQuota: 100_000, billableCalls: 101_234,
                        overageCalls: 1_234, basePriceCents: 4_900, overagePriceCents: 62, totalCents: 4_962),
                ])

            // A month with no usage (the one after next) still bills the paying accounts.
            let unused = try #require(UsageMonth(String(firstDayAfter.prefix(7)))?.next.description)
            let empty = try cli.run(["billing", "report", "--month", unused, "--json"]).json(Report.self)
            #expect(empty.lines.map(\.email) == ["ent@example.com", "pro-idle@example.com", "pro-over@example.com"])

            // A plan edited with `plan set` prices the next report.
            #expect(try cli.run(["plan", "set", "pro", "--overage-cents", "100", "--price-cents", "5000"]).status == 0)
            let repriced = try cli.run(["billing", "report", "--month", month, "--json"]).json(Report.self)
            #expect(repriced.lines.last?.totalCents == 5_000 + 123)

            let usage = try cli.run(["usage", "--account", "pro-over@example.com", "--month", month, "--json"])
            #expect(usage.status == 0, "\(usage.stderr)")
            let usageJSON = try #require(
                try JSONSerialization.jsonObject(with: Data(usage.stdout.utf8)) as? [String: Any])
            #expect(usageJSON["total"] as? Int == 101_234)
            #expect((usageJSON["rows"] as? [Any])?.count == 2)
            let table = try cli.run(["usage", "--month", month])
            #expect(table.stdout.contains("total \(month): 2102034 billable calls"))

            for bad in [["billing", "report", "--month", "2026-13"], ["usage", "--month", "11/2026"]] {
                let outcome = try cli.run(bad)
                #expect(outcome.status != 0)
                #expect(outcome.stderr.contains("YYYY-MM"))
            }
            #expect(try cli.run(["usage", "--app", "nope"]).stderr.contains("unknown app"))
        }
    }
}
