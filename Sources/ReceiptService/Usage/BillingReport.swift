import Foundation

/// One month's bill per account, computed from the plans, the accounts and the month's billable calls.
///
/// Rules (docs/billing.md): an account is billed on the plan it has when the report is made; the base price is due
/// for a whole month; overage is `calls − quota` (never negative, zero on unlimited plans), priced per 1,000 calls and
/// rounded to the nearest cent (half a cent up). Listed: every account with billable calls in the month, and every
/// enabled account on a plan with a base price that existed before the month ended.
public struct BillingReport: Sendable, Equatable {
    /// One account's line; all amounts in integer cents.
    public struct Line: Sendable, Equatable, Codable {
        /// The account's id, lowercase.
        public let accountID: String
        /// The account's email.
        public let email: String
        /// The plan billed.
        public let plan: String
        /// Calls included per month; nil for unlimited.
        public let includedQuota: Int?
        /// Billable calls in the month.
        public let billableCalls: Int
        /// Billable calls over the quota.
        public let overageCalls: Int
        /// The plan's monthly price.
        public let basePriceCents: Int
        /// The price of the overage calls.
        public let overagePriceCents: Int
        /// Base plus overage.
        public let totalCents: Int

        enum CodingKeys: String, CodingKey {
            case accountID = "account_id"
            case email, plan
            case includedQuota = "included_quota"
            case billableCalls = "billable_calls"
            case overageCalls = "overage_calls"
            case basePriceCents = "base_price_cents"
            case overagePriceCents = "overage_price_cents"
            case totalCents = "total_cents"
        }

        /// Encodes every key, `included_quota` as null when unlimited, so every line has the same shape.
        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(accountID, forKey: .accountID)
            try container.encode(email, forKey: .email)
            try container.encode(plan, forKey: .plan)
            try container.encode(includedQuota, forKey: .includedQuota)
            try container.encode(billableCalls, forKey: .billableCalls)
            try container.encode(overageCalls, forKey: .overageCalls)
            try container.encode(basePriceCents, forKey: .basePriceCents)
            try container.encode(overagePriceCents, forKey: .overagePriceCents)
            try container.encode(totalCents, forKey: .totalCents)
        }
    }

    /// The month billed.
    public let month: UsageMonth
    /// One line per account, by email.
    public let lines: [Line]

    /// The report for `month`; throws ``ServiceError/Code/storage`` if an account's plan does not exist.
    public init(month: UsageMonth, accounts: [Account], plans: [Plan], calls: [UUID: Int]) throws {
        let plansByName = Dictionary(plans.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        let monthEnd = month.next.start
        var lines: [Line] = []
        for account in accounts.sorted(by: { $0.email < $1.email }) {
            guard let plan = plansByName[account.planName] else {
                throw ServiceError(
                    .storage, "account \(account.email) has plan '\(account.planName)', which does not exist")
            }
            let billable = calls[account.id] ?? 0
            let payingThisMonth = plan.monthlyPriceCents > 0 && account.isEnabled && account.createdAt < monthEnd
            guard billable > 0 || payingThisMonth else { continue }
            let overage = plan.monthlyQuota.map { max(0, billable - $0) } ?? 0
            let overagePrice = Self.overagePrice(calls: overage, per1000Cents: plan.overagePricePer1000Cents)
            lines.append(
                Line(
                    accountID: account.id.uuidString.lowercased(), email: account.email, plan: plan.name,
                    includedQuota: plan.monthlyQuota, billableCalls: billable, overageCalls: overage,
                    basePriceCents: plan.monthlyPriceCents, overagePriceCents: overagePrice,
                    totalCents: plan.monthlyPriceCents + overagePrice))
        }
        self.month = month
        self.lines = lines
    }

    /// `calls` priced at `per1000Cents` per 1,000, in whole cents, half a cent rounded up.
    public static func overagePrice(calls: Int, per1000Cents: Int) -> Int {
        (calls * per1000Cents + 500) / 1000
    }

    /// The report as CSV (RFC 4180): a header line, then one line per account.
    public var csv: String {
        var text =
            "month,account_id,email,plan,included_quota,billable_calls,overage_calls,"
            + "base_price_cents,overage_price_cents,total_cents\r\n"
        for line in lines {
            let fields = [
                month.description, line.accountID, Self.csvField(line.email), Self.csvField(line.plan),
                line.includedQuota.map(String.init) ?? "unlimited", "\(line.billableCalls)", "\(line.overageCalls)",
                "\(line.basePriceCents)", "\(line.overagePriceCents)", "\(line.totalCents)",
            ]
            text += fields.joined(separator: ",") + "\r\n"
        }
        return text
    }

    private static func csvField(_ value: String) -> String {
        guard value.contains(where: { $0 == "," || $0 == "\"" || $0 == "\r" || $0 == "\n" }) else { return value }
        return "\"" + value.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }
}
