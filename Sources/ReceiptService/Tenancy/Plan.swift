/// A pricing tier: what an account may do each month and what it pays.
public struct Plan: Sendable, Hashable, Codable {
    /// The plan's unique name, for example `pro`.
    public var name: String
    /// Verifications included per calendar month (UTC); nil means unlimited.
    public var monthlyQuota: Int?
    /// Requests per second an account on this plan may make.
    public var rateLimitPerSecond: Int
    /// Whether `POST /apiencrypted` is included.
    public var includesEncryptedEndpoint: Bool
    /// The monthly base price, in cents.
    public var monthlyPriceCents: Int
    /// The price of each 1,000 verifications over the quota, in cents.
    public var overagePricePer1000Cents: Int

    /// Creates a plan.
    public init(
        name: String,
        monthlyQuota: Int?,
        rateLimitPerSecond: Int,
        includesEncryptedEndpoint: Bool,
        monthlyPriceCents: Int,
        overagePricePer1000Cents: Int
    ) {
        self.name = name
        self.monthlyQuota = monthlyQuota
        self.rateLimitPerSecond = rateLimitPerSecond
        self.includesEncryptedEndpoint = includesEncryptedEndpoint
        self.monthlyPriceCents = monthlyPriceCents
        self.overagePricePer1000Cents = overagePricePer1000Cents
    }

    /// The plans every new database starts with; the schema seeds the same values.
    public static let seeded: [Plan] = [
        Plan(
            name: "free", monthlyQuota: 1_000, rateLimitPerSecond: 5, includesEncryptedEndpoint: false,
            monthlyPriceCents: 0, overagePricePer1000Cents: 0),
        Plan(
            name: "pro", monthlyQuota: 100_000, rateLimitPerSecond: 50, includesEncryptedEndpoint: true,
            monthlyPriceCents: 4_900, overagePricePer1000Cents: 50),
        Plan(
            name: "enterprise", monthlyQuota: nil, rateLimitPerSecond: 500, includesEncryptedEndpoint: true,
            monthlyPriceCents: 49_900, overagePricePer1000Cents: 0),
    ]

    /// Checks the plan's values; throws ``ServiceError/Code/invalidArgument`` naming the first bad one.
    public func validate() throws {
        guard Plan.isValidName(name) else {
            throw ServiceError(.invalidArgument, "plan name must be 1-40 characters of a-z, 0-9, '-' or '_'")
        }
        if let monthlyQuota, monthlyQuota < 0 {
            throw ServiceError(.invalidArgument, "quota must be 0 or more, or 'unlimited'")
        }
        guard rateLimitPerSecond > 0 else { throw ServiceError(.invalidArgument, "rate limit must be at least 1/s") }
        guard monthlyPriceCents >= 0 else { throw ServiceError(.invalidArgument, "price must be 0 or more cents") }
        guard overagePricePer1000Cents >= 0 else {
            throw ServiceError(.invalidArgument, "overage price must be 0 or more cents")
        }
    }

    static func isValidName(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.count <= 40
            && name.utf8.allSatisfy { byte in
                (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z"))
                    || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9"))
                    || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_")
            }
    }
}
