import Foundation
import ReceiptCore

/// What operators see of an account; never holds a secret.
public struct AccountView: Codable, Sendable, Equatable {
    /// The id, lowercase.
    public let id: String
    /// The display name.
    public let name: String
    /// The contact email, lowercase.
    public let email: String
    /// The plan's name.
    public let plan: String
    /// Whether it may be used.
    public let enabled: Bool
    /// When it was created.
    public let createdAt: Date
    /// When it last changed.
    public let updatedAt: Date
    /// How it came to be: `operator` (the CLI) or `oidc` (self sign-up).
    public let signedUpWith: String

    /// The JSON names, snake_case as in the rest of the API.
    enum CodingKeys: String, CodingKey {
        case id, name, email, plan, enabled
        case createdAt = "created_at"
        case updatedAt = "updated_at"
        case signedUpWith = "signed_up_with"
    }

    /// The view of `account`.
    public init(_ account: Account) {
        id = account.id.uuidString.lowercased()
        name = account.name
        email = account.email
        plan = account.planName
        enabled = account.isEnabled
        createdAt = account.createdAt
        updatedAt = account.updatedAt
        signedUpWith = account.signedUpWith.rawValue
    }
}

/// What operators see of an audit log entry.
public struct AuditEntryView: Codable, Sendable, Equatable {
    /// When, ISO 8601.
    public let at: Date
    /// The account's id.
    public let accountID: String
    /// Who: an email of the account, or `operator`.
    public let actor: String
    /// What was done.
    public let action: String
    /// On what.
    public let detail: String
    /// From which address, for changes from a browser.
    public let address: String?

    enum CodingKeys: String, CodingKey {
        case at, actor, action, detail, address
        case accountID = "account_id"
    }

    /// The view of `entry`.
    public init(_ entry: AuditEntry) {
        at = entry.at
        accountID = entry.accountID.uuidString.lowercased()
        actor = entry.actor
        action = entry.action
        detail = entry.detail
        address = entry.address
    }
}

/// What operators see of an API key: its prefix, never the key or its hash.
public struct APIKeyView: Codable, Sendable, Equatable {
    /// The id, lowercase.
    public let id: String
    /// The owning account's id.
    public let accountID: String
    /// The key's first 12 characters, stored in clear to tell keys apart.
    public let prefix: String
    /// The operator's label, if any.
    public let label: String?
    /// When it was created.
    public let createdAt: Date
    /// When the key last authenticated a request.
    public let lastUsedAt: Date?
    /// When the key was revoked.
    public let revokedAt: Date?
    /// The whole key, present only in the answer to `key create`.
    public let key: String?

    /// The JSON names, snake_case as in the rest of the API.
    enum CodingKeys: String, CodingKey {
        case id, prefix, label, key
        case accountID = "account_id"
        case createdAt = "created_at"
        case lastUsedAt = "last_used_at"
        case revokedAt = "revoked_at"
    }

    /// The view of `key`, with its clear text only when it has just been created.
    public init(_ key: APIKey, clearText: String? = nil) {
        id = key.id.uuidString.lowercased()
        accountID = key.accountID.uuidString.lowercased()
        prefix = key.prefix
        label = key.label
        createdAt = key.createdAt
        lastUsedAt = key.lastUsedAt
        revokedAt = key.revokedAt
        self.key = clearText
    }
}

/// What operators see of an app: which secrets are set, and the result key only when asked to reveal it.
public struct AppView: Codable, Sendable, Equatable {
    /// The id, lowercase.
    public let id: String
    /// The owning account's id.
    public let accountID: String
    /// The app's public token.
    public let token: String
    /// The display name.
    public let name: String
    /// The bundle IDs its receipts may carry.
    public let bundleIDs: [String]
    /// The accepted environments, sorted.
    public let allowedEnvironments: [String]
    /// `local`, `apple` or `local-then-apple`.
    public let verificationMode: String
    /// Whether a shared secret is stored (never the secret).
    public let hasSharedSecret: Bool
    /// The App Store Server API issuer ID, if set.
    public let appleIssuerID: String?
    /// The App Store Server API key ID, if set.
    public let appleKeyID: String?
    /// Whether an App Store Server API private key is stored (never the key).
    public let hasApplePrivateKey: Bool
    /// The Android package names its Google Play purchases may carry.
    public let packageNames: [String]
    /// The Google service account (`client_email`) of its Google Play Developer API credentials, if set (never the
    /// key).
    public let googleServiceAccount: String?
    /// The Pub/Sub push subscription's audience and service account its Real-time Developer Notifications must carry.
    public let googlePubSubAudience: String?
    public let googlePubSubServiceAccount: String?
    /// The Play licensing public key, if set (public: it only checks signatures).
    public let googleLicenseKey: String?
    /// The cipher of `/apiencrypted` results.
    public let resultCipher: String
    /// Whether test-signed data is accepted (under ``testAnchors`` only).
    public let allowsTestData: Bool
    /// The SHA-256 fingerprints of the test roots bound to the app.
    public let testAnchors: [String]
    /// Whether it may be used.
    public let enabled: Bool
    /// Whether the operator locked it (disabled until the operator unlocks it).
    public let locked: Bool
    /// `off`, `flag`, `refuse` or `transfer`.
    public let claims: String
    /// `once` or `confirm`.
    public let delivery: String
    /// The product ids a receipt may hold; nil: any.
    public let products: [String]?
    /// `off` or `on`: whether `/api` answers are enriched with the App Store Server API.
    public let enrichment: String
    /// `allow` or `refuse`: whether `/api` accepts a transaction id alone, with no receipt.
    public let idLookups: String
    /// Whether `/api` requires a user while claims are checked.
    public let requiresUser: Bool
    /// Whether the stores' own user ids are taken for the backend's `app_user_id`.
    public let storeUserIDs: Bool
    /// The app's Apple ID, when bound (Production notifications must state it).
    public let appleAppID: Int64?
    /// How refund requests are answered: the policy.
    public let refundPolicy: String
    /// Whether the app states its customers' consent to share consumption data.
    public let consumptionConsent: Bool
    /// Whether the app provides a sample of its content before purchase.
    public let sampleContentProvided: Bool
    /// When it was created.
    public let createdAt: Date
    /// When it last changed.
    public let updatedAt: Date
    /// The result key as base64, present only with `--reveal-key`.
    public let resultKey: String?

    /// The JSON names, snake_case as in the rest of the API.
    enum CodingKeys: String, CodingKey {
        case id, token, name, enabled, locked
        case accountID = "account_id"
        case bundleIDs = "bundle_ids"
        case allowedEnvironments = "allowed_environments"
        case verificationMode = "verification_mode"
        case hasSharedSecret = "has_shared_secret"
        case appleIssuerID = "apple_issuer_id"
        case appleKeyID = "apple_key_id"
        case hasApplePrivateKey = "has_apple_private_key"
        case packageNames = "package_names"
        case googleServiceAccount = "google_service_account"
        case googlePubSubAudience = "google_pubsub_audience"
        case googlePubSubServiceAccount = "google_pubsub_service_account"
        case googleLicenseKey = "google_license_key"
        case resultCipher = "result_cipher"
        case allowsTestData = "allows_test_data"
        case testAnchors = "test_anchors"
        case claims, delivery, products, enrichment
        case idLookups = "id_lookups"
        case requiresUser = "requires_user"
        case storeUserIDs = "store_user_ids"
        case appleAppID = "apple_app_id"
        case refundPolicy = "refund_policy"
        case consumptionConsent = "consumption_consent"
        case sampleContentProvided = "sample_content_provided"
        case createdAt = "created_at"
        case updatedAt = "updated_at"
        case resultKey = "result_key"
    }

    /// The view of `app`, with `revealedKey` (the clear result key) only when the operator asked for it.
    public init(_ app: App, revealedKey: [UInt8]? = nil) {
        id = app.id.uuidString.lowercased()
        accountID = app.accountID.uuidString.lowercased()
        token = app.token
        name = app.name
        bundleIDs = app.bundleIDs.map(\.value)
        allowedEnvironments = app.allowedEnvironments.map(\.configurationName).sorted()
        verificationMode = app.verificationMode.rawValue
        hasSharedSecret = app.sharedSecret != nil
        appleIssuerID = app.appStoreServerCredentials?.issuerID
        appleKeyID = app.appStoreServerCredentials?.keyID
        hasApplePrivateKey = app.appStoreServerCredentials != nil
        packageNames = app.packageNames
        googleServiceAccount = app.googlePlayCredentials?.clientEmail
        googlePubSubAudience = app.googlePubSub?.audience
        googlePubSubServiceAccount = app.googlePubSub?.serviceAccount
        googleLicenseKey = app.googleLicenseKey
        resultCipher = app.resultCipher.rawValue
        allowsTestData = app.allowsTestData
        testAnchors = app.testAnchors
        enabled = app.isEnabled
        locked = app.isLocked
        claims = app.claimsPolicy.rawValue
        delivery = app.deliveryMode.rawValue
        products = app.catalog?.map(\.description)
        enrichment = app.enrichment.rawValue
        idLookups = app.idLookups.rawValue
        requiresUser = app.requiresUser
        storeUserIDs = app.storeUserIDs
        appleAppID = app.appleAppID
        refundPolicy = app.refundAnswers.policy.rawValue
        consumptionConsent = app.refundAnswers.customerConsented
        sampleContentProvided = app.refundAnswers.sampleContentProvided
        createdAt = app.createdAt
        updatedAt = app.updatedAt
        resultKey = revealedKey.map { Data($0).base64EncodedString() }
    }
}

/// What operators see of a plan.
public struct PlanView: Codable, Sendable, Equatable {
    /// The display name.
    public let name: String
    /// Verifications per month, or nil for unlimited.
    public let monthlyQuota: Int?
    /// Requests per second.
    public let rateLimitPerSecond: Int
    /// Whether `/apiencrypted` is included.
    public let includesEncryptedEndpoint: Bool
    /// Monthly base price in cents.
    public let monthlyPriceCents: Int
    /// Price per 1,000 verifications over the quota, in cents.
    public let overagePricePer1000Cents: Int
    /// What an account may set up, by the limit's stored name (`apps`, `api_keys`, `bundle_ids`, `products`,
    /// `webhook_endpoints`).
    public let limits: [String: Int]

    /// The JSON names, snake_case as in the rest of the API.
    enum CodingKeys: String, CodingKey {
        case name, limits
        case monthlyQuota = "monthly_quota"
        case rateLimitPerSecond = "rate_limit_per_second"
        case includesEncryptedEndpoint = "includes_encrypted_endpoint"
        case monthlyPriceCents = "monthly_price_cents"
        case overagePricePer1000Cents = "overage_price_per_1000_cents"
    }

    /// The view of `plan`.
    public init(_ plan: Plan) {
        name = plan.name
        monthlyQuota = plan.monthlyQuota
        rateLimitPerSecond = plan.rateLimitPerSecond
        includesEncryptedEndpoint = plan.includesEncryptedEndpoint
        monthlyPriceCents = plan.monthlyPriceCents
        overagePricePer1000Cents = plan.overagePricePer1000Cents
        limits = Dictionary(uniqueKeysWithValues: PlanLimits.Field.allCases.map { ($0.rawValue, plan.limits[$0]) })
    }
}

/// What operators see of one daily usage counter, with the account's email and the app's token resolved.
public struct UsageView: Codable, Sendable, Equatable {
    /// The UTC day, `YYYY-MM-DD`.
    public let day: String
    /// The account's id, lowercase.
    public let accountID: String
    /// The account's email, or nil if the account no longer exists.
    public let email: String?
    /// The app's id, lowercase.
    public let appID: String
    /// The app's token, or nil if the app was removed since.
    public let appToken: String?
    /// `api` or `apiencrypted`.
    public let endpoint: String
    /// `valid`, `apple_code` or `rejected`.
    public let outcome: String
    /// Billable calls.
    public let calls: Int

    /// The JSON names, snake_case as in the rest of the API.
    enum CodingKeys: String, CodingKey {
        case day, email, endpoint, outcome, calls
        case accountID = "account_id"
        case appID = "app_id"
        case appToken = "app_token"
    }

    /// The view of `record`, naming its account and app from the given lists.
    public init(_ record: UsageRecord, accounts: [UUID: Account], apps: [UUID: App]) {
        day = record.key.day.description
        accountID = record.key.accountID.uuidString.lowercased()
        email = accounts[record.key.accountID]?.email
        appID = record.key.appID.uuidString.lowercased()
        appToken = apps[record.key.appID]?.token
        endpoint = record.key.endpoint.rawValue
        outcome = record.key.outcome.rawValue
        calls = record.calls
    }
}
