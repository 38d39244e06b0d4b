import ArgumentParser
import Foundation
import ReceiptService

/// `receiptverify usage`: billable calls per day, account, app, endpoint and outcome.
struct UsageCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "usage",
        abstract:
            "Show a month's billable calls per day, app, endpoint and outcome (counts reach the database within about a second)."
    )

    @Option(help: "Only this account (id or email).") var account: String?
    @Option(help: "Only this app (token).") var app: String?
    @Option(help: "The UTC month, YYYY-MM. Default: the current month.") var month: String?
    @OptionGroup var options: GlobalOptions

    /// The `--json` answer: the month, its total and the counters.
    struct Report: Encodable {
        let month: String
        let total: Int
        let rows: [UsageView]
    }

    func run() async throws {
        let report = try await options.withTenancy { [account, app, month] tenancy in
            let usageMonth = try UsageCommand.month(month)
            let records = try await tenancy.usage(month: usageMonth, account: account, appToken: app)
            let accounts = Dictionary(try await tenancy.accounts().map { ($0.id, $0) }, uniquingKeysWith: { a, _ in a })
            let apps = Dictionary(
                try await tenancy.apps(account: nil).map { ($0.id, $0) }, uniquingKeysWith: { a, _ in a })
            let rows = records.map { UsageView($0, accounts: accounts, apps: apps) }
            return Report(month: usageMonth.description, total: rows.reduce(0) { $0 + $1.calls }, rows: rows)
        }
        if options.json {
            try Output.show(report, json: true)
            return
        }
        try Output.list(
            report.rows, json: false,
            columns: [
                ("DAY", \.day), ("ACCOUNT", { $0.email ?? $0.accountID }), ("APP", { $0.appToken ?? $0.appID }),
                ("ENDPOINT", \.endpoint), ("OUTCOME", \.outcome), ("CALLS", { "\($0.calls)" }),
            ])
        print("total \(report.month): \(report.total) billable calls")
    }

    /// Parses `--month`, or the current UTC month when it is absent.
    static func month(_ text: String?) throws -> UsageMonth {
        guard let text else { return UsageMonth(containing: Date()) }
        guard let month = UsageMonth(text) else { throw CommandFailure("month must be YYYY-MM, not '\(text)'") }
        return month
    }
}

/// `receiptverify billing …`
struct BillingCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "billing", abstract: "Billing reports.", subcommands: [Report.self])

    /// Output formats of `billing report`.
    enum Format: String, ExpressibleByArgument, CaseIterable {
        case table, csv, json
    }

    struct Report: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "One line per account for a month: plan, quota, billable and overage calls, prices in cents.")
        @Option(help: "The UTC month, YYYY-MM.") var month: String
        @Option(help: "table, csv or json. Default: table (json with --json).") var format: Format?
        @OptionGroup var options: GlobalOptions

        func run() async throws {
            let report = try await options.withTenancy { [month] tenancy in
                try await tenancy.billingReport(month: try UsageCommand.month(month))
            }
            switch format ?? (options.json ? .json : .table) {
            case .csv:
                print(report.csv, terminator: "")
            case .json:
                try Output.show(BillingJSON(month: report.month.description, lines: report.lines), json: true)
            case .table:
                try Output.list(
                    report.lines, json: false,
                    columns: [
                        ("ACCOUNT", \.email), ("PLAN", \.plan),
                        ("QUOTA", { $0.includedQuota.map(String.init) ?? "unlimited" }),
                        ("BILLABLE", { "\($0.billableCalls)" }), ("OVERAGE", { "\($0.overageCalls)" }),
                        ("BASE (CENTS)", { "\($0.basePriceCents)" }),
                        ("OVERAGE (CENTS)", { "\($0.overagePriceCents)" }),
                        ("TOTAL (CENTS)", { "\($0.totalCents)" }),
                    ])
            }
        }
    }

    /// The JSON form of a report.
    struct BillingJSON: Encodable {
        let month: String
        let lines: [ReceiptService.BillingReport.Line]
    }
}
