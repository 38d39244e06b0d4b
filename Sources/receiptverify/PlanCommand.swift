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
        @OptionGroup var options: GlobalOptions

        func run() async throws {
            let plan = try await options.withTenancy { [name, quota, rateLimit, encrypted, priceCents, overageCents] in
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
                    overagePricePer1000Cents: overageCents)
            }
            try Output.show(PlanView(plan), json: options.json)
        }
    }
}
