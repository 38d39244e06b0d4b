import Foundation
import ReceiptCore

/// A customer's app: what its receipts must match and how results are returned, with its secrets sealed.
public struct App: Sendable, Hashable {
    /// The app's id.
    public var id: UUID
    /// The account that owns the app.
    public var accountID: UUID
    /// The public, unguessable token clients send as `token`.
    public var token: String
    /// A display name.
    public var name: String
    /// The bundle IDs a receipt may carry, in the order given; at least one.
    public var bundleIDs: [BundleID]
    /// The Android package names (`applicationId`) whose Google Play purchases are the app's, in the order given.
    public var packageNames: [String] = []
    /// Credentials for the Google Play Developer API, with the service account's private key sealed.
    public var googlePlayCredentials: GooglePlayCredentials?
    /// How the app's Real-time Developer Notifications authenticate (nil: the route refuses them).
    public var googlePubSub: GooglePubSubPush?
    /// The Play licensing public key (Play Console's base64 X.509 RSA key): a purchase JSON sent with `signature` must
    /// verify with it (nil: not checked).
    public var googleLicenseKey: String?
    /// The environments whose purchases are accepted.
    public var allowedEnvironments: Set<StoreEnvironment>
    /// How receipts are verified.
    public var verificationMode: VerificationMode
    /// Apple's app-specific shared secret for `verifyReceipt`, sealed.
    public var sharedSecret: SealedSecret?
    /// Credentials for the App Store Server API, with the private key sealed.
    public var appStoreServerCredentials: AppStoreServerCredentials?
    /// The cipher of `/apiencrypted` results.
    public var resultCipher: ResultCipher
    /// The 256-bit key of `/apiencrypted` results, sealed.
    public var resultKey: SealedSecret
    /// Whether data signed by a test root (Xcode StoreKit testing) is accepted: only under the roots in
    /// ``testAnchors``.
    public var allowsTestData: Bool
    /// The SHA-256 fingerprints (uppercase hex, sorted) of the test roots the operator bound to the app: the only
    /// non-Apple anchors its data may chain to, so one tenant's test root never signs for another.
    public var testAnchors: [String]
    /// Whether the app may be used; a disabled app gets 401, and nothing runs for it in the background.
    public var isEnabled: Bool
    /// Whether the operator locked the app: it stays disabled, and only the operator can unlock it (`app unlock`).
    public var isLocked: Bool
    /// What happens when another user presents a claimed purchase.
    public var claimsPolicy: ClaimsPolicy
    /// When a transaction stops being delivered.
    public var deliveryMode: DeliveryMode
    /// The app's catalog: the products a receipt may hold, each with its kind and the entitlements it grants; nil:
    /// any product (and none grants an entitlement).
    public var catalog: [CatalogProduct]?
    /// Whether `/api` answers are enriched with the App Store Server API.
    public var enrichment: Enrichment
    /// Whether `/api` accepts a `transaction_id` or `app_transaction_id` alone, with no receipt.
    public var idLookups: IDLookups
    /// Whether `/api` refuses (400) a request with no user (`app_user_id`, or a StoreKit 2 transaction's
    /// `appAccountToken`) while claims are checked: without a user no claim is made or checked, even under `refuse`.
    public var requiresUser: Bool
    /// How Apple's refund requests are answered (off by default).
    public var refundAnswers: RefundAnswers = RefundAnswers()
    /// Whether the stores' own user ids (Apple's `appAccountToken`, Google's `obfuscatedExternalAccountId`) are the
    /// backend's `app_user_id`: then a request without `app_user_id` claims for the id its purchase states. Off by
    /// default, where only a request's `app_user_id` ever claims (docs/api.md, "Claims").
    public var storeUserIDs: Bool = AppDefaults.storeUserIDs
    /// The app's Apple ID (App Store Connect's numeric app id), when the operator bound it: a Production notification
    /// must state it (`appAppleId`), as Apple's library checks.
    public var appleAppID: Int64?
    /// When the app was created.
    public var createdAt: Date
    /// When the app was last changed.
    public var updatedAt: Date

    /// Creates an app value.
    public init(
        id: UUID, accountID: UUID, token: String, name: String, bundleIDs: [BundleID],
        allowedEnvironments: Set<StoreEnvironment>, verificationMode: VerificationMode,
        sharedSecret: SealedSecret?, appStoreServerCredentials: AppStoreServerCredentials?,
        resultCipher: ResultCipher, resultKey: SealedSecret, allowsTestData: Bool, isEnabled: Bool,
        claimsPolicy: ClaimsPolicy = AppDefaults.claimsPolicy, deliveryMode: DeliveryMode = AppDefaults.deliveryMode,
        catalog: [CatalogProduct]? = nil, enrichment: Enrichment = AppDefaults.enrichment,
        idLookups: IDLookups = AppDefaults.idLookups, requiresUser: Bool = AppDefaults.requiresUser,
        appleAppID: Int64? = nil, isLocked: Bool = false, testAnchors: [String] = [], createdAt: Date,
        updatedAt: Date
    ) {
        self.id = id
        self.accountID = accountID
        self.token = token
        self.name = name
        self.bundleIDs = bundleIDs
        self.allowedEnvironments = allowedEnvironments
        self.verificationMode = verificationMode
        self.sharedSecret = sharedSecret
        self.appStoreServerCredentials = appStoreServerCredentials
        self.resultCipher = resultCipher
        self.resultKey = resultKey
        self.allowsTestData = allowsTestData
        self.isEnabled = isEnabled
        self.claimsPolicy = claimsPolicy
        self.deliveryMode = deliveryMode
        self.catalog = catalog
        self.enrichment = enrichment
        self.idLookups = idLookups
        self.requiresUser = requiresUser
        self.appleAppID = appleAppID
        self.isLocked = isLocked
        self.testAnchors = testAnchors
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }

    /// The product ids a receipt may hold; nil: any.
    public var productCatalog: [String]? { catalog?.map(\.id) }

    /// The test data the app accepts: none unless it allows test data, and then only under its bound anchors.
    public var testDataTrust: TestDataTrust {
        allowsTestData ? .anchors(testAnchors) : .refused
    }

    /// The associated data that binds a sealed secret to this app and its purpose.
    static func secretContext(appID: UUID, purpose: String) -> String {
        "app:\(appID.uuidString.lowercased()):\(purpose)"
    }

    /// A new random app token: `app_` and 32 hex digits (128 random bits).
    static func generateToken() -> String {
        "app_" + Hex.encode(SecureRandom.bytes(16))
    }

    /// Whether `text` has a token's shape (`app_` and 32 lowercase hex digits): only such text is ever logged as a
    /// token, so that a key or secret sent in the token's place never reaches a log.
    public static func hasTokenShape(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        return bytes.count == 36 && text.hasPrefix("app_")
            && bytes.dropFirst(4).allSatisfy {
                (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0)
                    || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains($0)
            }
    }
}
