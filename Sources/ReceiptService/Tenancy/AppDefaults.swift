import ReceiptCore

/// What a new app gets for each setting its creator leaves out, the same whether it is made with the CLI
/// (`receiptverify app add`) or on the account screen (whose new-app form preselects these).
public enum AppDefaults {
    /// Production and the sandbox: App Review and TestFlight purchase in the sandbox, so an app that refused it
    /// could not pass review. Each `transactions` entry says its `environment` for a backend that delivers
    /// production purchases only (docs/api.md, "Transactions: what to deliver").
    public static let allowedEnvironments: Set<StoreEnvironment> = [.production, .sandbox]
    /// Verified here, offline.
    public static let verificationMode = VerificationMode.local
    /// `aes-256-cbc`, the layout every client recipe decrypts.
    public static let resultCipher = ResultCipher.aes256CBC
    /// Xcode's test data is refused.
    public static let allowsTestData = false
    /// The first user's claim stands; another user's answer says so and delivers nothing.
    public static let claimsPolicy = ClaimsPolicy.flag
    /// Delivered in the first answer that may deliver it.
    public static let deliveryMode = DeliveryMode.once
    /// Answers come from the input alone.
    public static let enrichment = Enrichment.off
    /// An id alone is not proof of a purchase: refused unless the app asks for look-ups.
    public static let idLookups = IDLookups.refuse
    /// A request without a user is answered (its purchases are neither claimed nor checked), as every integration
    /// written before the setting existed expects; an app whose backend always knows its user turns it on.
    public static let requiresUser = false
    /// The stores' user ids are not taken for the backend's (money review M1: Google recommends a hash of the user id
    /// as `obfuscatedExternalAccountId`, and Apple's `appAccountToken` is a UUID).
    public static let storeUserIDs = false
}
