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
    /// How much an account on the plan may set up: apps, keys, bundle IDs, products, webhook endpoints.
    public var limits: PlanLimits

    /// Creates a plan.
    public init(
        name: String,
        monthlyQuota: Int?,
        rateLimitPerSecond: Int,
        includesEncryptedEndpoint: Bool,
        monthlyPriceCents: Int,
        overagePricePer1000Cents: Int,
        limits: PlanLimits = .standard
    ) {
        self.name = name
        self.monthlyQuota = monthlyQuota
        self.rateLimitPerSecond = rateLimitPerSecond
        self.includesEncryptedEndpoint = includesEncryptedEndpoint
        self.monthlyPriceCents = monthlyPriceCents
        self.overagePricePer1000Cents = overagePricePer1000Cents
        self.limits = limits
    }

    /// The plans every new database starts with; the schema seeds the same values.
    public static let seeded: [Plan] = [
        Plan(
            name: "free", monthlyQuota: 1_000, rateLimitPerSecond: 5, includesEncryptedEndpoint: false,
            monthlyPriceCents: 0, overagePricePer1000Cents: 0, limits: .free),
        Plan(
            name: "pro", monthlyQuota: 100_000, rateLimitPerSecond: 50, includesEncryptedEndpoint: true,
            monthlyPriceCents: 4_900, overagePricePer1000Cents: 50),
        Plan(
            name: "enterprise", monthlyQuota: nil, rateLimitPerSecond: 500, includesEncryptedEndpoint: true,
            monthlyPriceCents: 49_900, overagePricePer1000Cents: 0, limits: .enterprise),
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
        try limits.validate()
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

/// How much an account on a plan may set up. Each is a bound on what one tenant can make every server hold and do
/// (apps and keys are cached and looked up, bundle IDs and products checked on every answer, each event written once
/// per webhook endpoint), so every plan has one, however large.
public struct PlanLimits: Sendable, Hashable, Codable {
    /// Apps per account.
    public var apps: Int
    /// API keys per account, revoked ones not counted.
    public var apiKeys: Int
    /// Bundle IDs per app.
    public var bundleIDs: Int
    /// Product ids in one app's catalog.
    public var products: Int
    /// Webhook endpoints per app.
    public var webhookEndpoints: Int

    /// Creates limits.
    public init(apps: Int, apiKeys: Int, bundleIDs: Int, products: Int, webhookEndpoints: Int) {
        self.apps = apps
        self.apiKeys = apiKeys
        self.bundleIDs = bundleIDs
        self.products = products
        self.webhookEndpoints = webhookEndpoints
    }

    /// The limits of a plan made without any (`pro`'s too); the schema's column defaults are the same.
    public static let standard = PlanLimits(apps: 25, apiKeys: 25, bundleIDs: 25, products: 2_000, webhookEndpoints: 10)
    /// The seeded `free` plan's.
    public static let free = PlanLimits(apps: 2, apiKeys: 3, bundleIDs: 5, products: 100, webhookEndpoints: 2)
    /// The seeded `enterprise` plan's.
    public static let enterprise = PlanLimits(
        apps: 500, apiKeys: 200, bundleIDs: 100, products: 10_000, webhookEndpoints: 10)

    /// The largest each limit may be set to: past these one tenant's set-up alone would weigh on every request.
    public static let ceiling = PlanLimits(
        apps: 100_000, apiKeys: 100_000, bundleIDs: 1_000, products: 10_000, webhookEndpoints: 100)

    /// One of the limits, by its stored name.
    public enum Field: String, Sendable, CaseIterable {
        case apps, apiKeys = "api_keys", bundleIDs = "bundle_ids", products
        case webhookEndpoints = "webhook_endpoints"

        /// The words messages use for it.
        public var words: String {
            switch self {
            case .apps: "apps"
            case .apiKeys: "API keys"
            case .bundleIDs: "bundle IDs"
            case .products: "products"
            case .webhookEndpoints: "webhook endpoints"
            }
        }
    }

    /// One limit.
    public subscript(field: Field) -> Int {
        get {
            switch field {
            case .apps: apps
            case .apiKeys: apiKeys
            case .bundleIDs: bundleIDs
            case .products: products
            case .webhookEndpoints: webhookEndpoints
            }
        }
        set {
            switch field {
            case .apps: apps = newValue
            case .apiKeys: apiKeys = newValue
            case .bundleIDs: bundleIDs = newValue
            case .products: products = newValue
            case .webhookEndpoints: webhookEndpoints = newValue
            }
        }
    }

    /// Throws ``ServiceError/Code/invalidArgument`` naming a limit below 0 or above its ceiling.
    func validate() throws {
        for field in Field.allCases where !(0...Self.ceiling[field]).contains(self[field]) {
            throw ServiceError(
                .invalidArgument, "the limit of \(field.words) must be from 0 to \(Self.ceiling[field])")
        }
    }
}
