import ArgumentParser
import ReceiptService

/// `receiptverify plan …`
struct PlanCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "plan", abstract: "List and edit plans.", subcommands: [List.self, Set.self])

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List plans.")
        @OptionGroup var options: GlobalOptions

        func run() async throws {
            let plans = try await options.withTenancy { try await $0.plans() }
            try Output.list(
                plans.map(PlanView.init), json: options.json,
                columns: [
                    ("NAME", \.name), ("QUOTA/MONTH", { $0.monthlyQuota.map(String.init) ?? "unlimited" }),
                    ("RATE/S", { "\($0.rateLimitPerSecond)" }),
                    ("ENCRYPTED", { $0.includesEncryptedEndpoint ? "yes" : "no" }),
                    ("PRICE (CENTS)", { "\($0.monthlyPriceCents)" }),
                    ("OVERAGE/1000 (CENTS)", { "\($0.overagePricePer1000Cents)" }),
                    ("APPS", { "\($0.limits["apps"] ?? 0)" }), ("KEYS", { "\($0.limits["api_keys"] ?? 0)" }),
                    ("BUNDLE IDS/APP", { "\($0.limits["bundle_ids"] ?? 0)" }),
                    ("PRODUCTS/APP", { "\($0.limits["products"] ?? 0)" }),
                    ("WEBHOOKS/APP", { "\($0.limits["webhook_endpoints"] ?? 0)" }),
                ])
        }
    }

    struct Set: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Change a plan, or create it (then --quota and --rate-limit are required).")
        @Argument(help: "Plan name.") var name: String
        @Option(help: "Verifications per calendar month, or 'unlimited'.") var quota: String?
        @Option(help: "Requests per second.") var rateLimit: Int?
        @Option(help: "Whether /apiencrypted is included: true or false.") var encrypted: Bool?
        @Option(help: "Monthly price in cents.") var priceCents: Int?
        @Option(help: "Price per 1,000 verifications over the quota, in cents.") var overageCents: Int?
        @Option(help: "Apps an account may have (a new plan: 25).") var maxApps: Int?
        @Option(help: "API keys an account may hold unrevoked (a new plan: 25).") var maxKeys: Int?
        @Option(name: .customLong("max-bundle-ids"), help: "Bundle IDs an app may have (a new plan: 25).")
        var maxBundleIDs: Int?
        @Option(help: "Product ids in an app's catalog (a new plan: 2000).") var maxProducts: Int?
        @Option(help: "Webhook endpoints an app may have (a new plan: 10).") var maxWebhookEndpoints: Int?
        @OptionGroup var options: GlobalOptions

        func run() async throws {
            var limits: [PlanLimits.Field: Int] = [:]
            limits[.apps] = maxApps
            limits[.apiKeys] = maxKeys
            limits[.bundleIDs] = maxBundleIDs
            limits[.products] = maxProducts
            limits[.webhookEndpoints] = maxWebhookEndpoints
            let plan = try await options.withTenancy {
                [name, quota, rateLimit, encrypted, priceCents, overageCents, limits] in
                let monthlyQuota: Int??
                switch quota {
                case nil: monthlyQuota = .none
                case "unlimited": monthlyQuota = .some(nil)
                case let text?:
                    guard let number = Int(text) else {
                        throw CommandFailure("quota must be a whole number or 'unlimited', not '\(text)'")
                    }
                    monthlyQuota = .some(number)
                }
                return try await $0.setPlan(
                    name: name, monthlyQuota: monthlyQuota, rateLimitPerSecond: rateLimit,
                    includesEncryptedEndpoint: encrypted, monthlyPriceCents: priceCents,
                    overagePricePer1000Cents: overageCents, limits: limits)
            }
            try Output.show(PlanView(plan), json: options.json)
        }
    }
}
