import Foundation
import Hummingbird
import ReceiptService

/// `GET /account`: the plan, this month's billable calls against the quota, and the last 30 days' calls per day (an
/// SVG chart) and per app, endpoint and outcome.
enum AccountPage {
    struct View: PageView {
        var layout: LayoutView
        var email: String
        var plan: String
        var encrypted: String
        var monthCalls: String
        var monthCallsValue: Int
        var quota: String
        var quotaValue: Int
        var hasQuota: Bool
        var percent: String?
        var chart: UsageChart
        var rows: [Row]

        struct Row: Sendable {
            var app: String
            var endpoint: String
            var outcome: String
            var calls: String
        }
    }

    /// The chart's days.
    static let days = 30

    static func register(on router: Router<ServerContext>, site: WebSite) {
        router.get("/") { request, context in site.redirect(to: "/account") }
        router.get("/account") { request, context in
            await site.signedInPage(request, context: context) { signedIn, scope in
                let now = site.customers.tenancy.now()
                let plan = try await scope.plan()
                let monthCalls = try await scope.monthCalls(now: now)
                let records = try await scope.usage(days: days, now: now)
                let names = Dictionary(try await scope.apps().map { ($0.id, $0.name) }, uniquingKeysWith: { a, _ in a })
                var totals: [String: (app: String, endpoint: String, outcome: String, calls: Int)] = [:]
                for record in records {
                    let app = names[record.key.appID] ?? "removed app"
                    let key = "\(app)|\(record.key.endpoint.rawValue)|\(record.key.outcome.rawValue)"
                    totals[key, default: (app, record.key.endpoint.rawValue, record.key.outcome.rawValue, 0)].calls +=
                        record.calls
                }
                let quota = plan.monthlyQuota
                return site.page(
                    "account",
                    View(
                        layout: LayoutView(title: "Account", signedIn: signedIn), email: signedIn.account.email,
                        plan: plan.name, encrypted: plan.includesEncryptedEndpoint ? "included" : "not in this plan",
                        monthCalls: "\(monthCalls)", monthCallsValue: min(monthCalls, quota ?? monthCalls),
                        quota: quota.map(Format.count) ?? "unlimited", quotaValue: quota ?? 0, hasQuota: quota != nil,
                        percent: quota.map { $0 == 0 ? "100" : "\(min(100, monthCalls * 100 / $0))" },
                        chart: UsageChart(records: records, days: days, now: now),
                        rows: totals.values.sorted {
                            ($0.app, $0.endpoint, $0.outcome) < ($1.app, $1.endpoint, $1.outcome)
                        }
                        .map {
                            View.Row(
                                app: $0.app, endpoint: $0.endpoint, outcome: $0.outcome, calls: Format.count($0.calls))
                        }
                    ))
            }
        }
    }
}

/// The geometry of the daily usage chart: a bar per day, stacked by outcome, scaled to the busiest day.
struct UsageChart: Sendable {
    struct Bar: Sendable {
        var x: Int
        var y: Int
        var width: Int
        var height: Int
        var outcome: String
        var title: String
    }

    struct Label: Sendable {
        var x: Int
        var y: Int
        var text: String
    }

    let width = 620
    let height = 180
    let baseline = 160
    var most: Int
    var bars: [Bar] = []
    var labels: [Label] = []

    init(records: [UsageRecord], days: Int, now: Date) {
        var perDay: [UsageDay: [UsageOutcome: Int]] = [:]
        for record in records { perDay[record.key.day, default: [:]][record.key.outcome, default: 0] += record.calls }
        most = max(1, perDay.values.map { $0.values.reduce(0, +) }.max() ?? 0)
        let slot = width / days
        for index in 0..<days {
            let day = UsageDay(containing: now.addingTimeInterval(-Double(days - 1 - index) * 86_400))
            var top = baseline
            for outcome in UsageOutcome.allCases {
                guard let calls = perDay[day]?[outcome], calls > 0 else { continue }
                let height = max(1, calls * (baseline - 10) / most)
                top -= height
                bars.append(
                    Bar(
                        x: index * slot + 2, y: top, width: slot - 4, height: height, outcome: outcome.rawValue,
                        title: "\(day): \(calls) \(outcome.rawValue)"))
            }
            if index % 5 == 0 || index == days - 1 {
                labels.append(Label(x: index * slot, y: height - 4, text: String(day.description.suffix(5))))
            }
        }
    }
}
