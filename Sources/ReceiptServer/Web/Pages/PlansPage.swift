import Foundation
import Hummingbird
import ReceiptService

/// `GET /plans`: the plans with their quotas, rate limits, encrypted endpoint, prices and limits; public.
///
/// The simplest page, and the one to copy: a `register(on:site:)` that adds the routes, a view struct of what the
/// template shows (values already formatted: templates have no logic), and `Templates/plans.mustache`, listed in
/// ``PageTemplates/sources``.
enum PlansPage {
    struct View: PageView {
        struct Row: Sendable {
            var name: String
            var quota: String
            var rateLimit: Int
            var encrypted: String
            var price: String
            var overage: String
            var setUp: String
        }

        var layout: LayoutView
        var plans: [Row]
    }

    static func register(on router: Router<ServerContext>, site: WebSite) {
        router.get("/plans") { request, context in
            await site.answering(request, context: context) {
                let plans = try await site.plans.plans(from: site.customers.tenancy).sorted {
                    $0.monthlyPriceCents < $1.monthlyPriceCents
                }
                return site.page(
                    "plans",
                    View(
                        layout: await site.publicLayout("Plans", request, context: context),
                        plans: plans.map { plan in
                            View.Row(
                                name: plan.name, quota: plan.monthlyQuota.map(Format.count) ?? "unlimited",
                                rateLimit: plan.rateLimitPerSecond,
                                encrypted: plan.includesEncryptedEndpoint ? "included" : "not included",
                                price: plan.monthlyPriceCents == 0
                                    ? "free" : Format.dollars(cents: plan.monthlyPriceCents) + " a month",
                                overage: plan.monthlyQuota == nil
                                    ? "—"
                                    : plan.overagePricePer1000Cents == 0
                                        ? "calls refused"
                                        : Format.dollars(cents: plan.overagePricePer1000Cents)
                                            + " per 1,000 calls",
                                setUp: "\(Format.count(plan.limits.apps)) apps, "
                                    + "\(Format.count(plan.limits.apiKeys)) API keys; per app \(Format.count(plan.limits.bundleIDs)) bundle IDs, "
                                    + "\(Format.count(plan.limits.products)) products, "
                                    + "\(Format.count(plan.limits.webhookEndpoints)) webhook endpoints")
                        }))
            }
        }
    }
}

/// How pages write numbers and dates.
enum Format {
    /// `12,345`.
    static func count(_ number: Int) -> String {
        let digits = String(abs(number))
        var out = ""
        for (index, digit) in digits.enumerated() {
            if index > 0, (digits.count - index) % 3 == 0 { out.append(",") }
            out.append(digit)
        }
        return (number < 0 ? "-" : "") + out
    }

    /// `$12.50`.
    static func dollars(cents: Int) -> String {
        let remainder = cents % 100
        return "$\(count(cents / 100)).\(remainder < 10 ? "0" : "")\(remainder)"
    }

    /// `2026-11-23 05:48 UTC`.
    static func time(_ date: Date?) -> String {
        guard let date else { return "never" }
        return String(date.ISO8601Format().prefix(16)).replacingOccurrences(of: "T", with: " ") + " UTC"
    }
}
