/// A receipt or signed StoreKit item that passed every check, decoded to Apple's field names.
public struct VerifiedReceipt: Sendable, Equatable {
    /// What was verified.
    public enum Kind: String, Sendable, Equatable {
        /// A unified app receipt.
        case unifiedReceipt = "unified_receipt"
        /// An iOS 6 transaction receipt.
        case transactionReceipt = "transaction_receipt"
        /// A StoreKit 2 signed transaction (`JWSTransaction`).
        case signedTransaction = "signed_transaction"
        /// A StoreKit 2 signed renewal info (`JWSRenewalInfo`).
        case signedRenewalInfo = "signed_renewal_info"
        /// A StoreKit 2 signed `AppTransaction`.
        case appTransaction = "app_transaction"
        /// An App Store Server Notification V2 `signedPayload`.
        case notification = "notification"
    }

    /// What was verified.
    public let kind: Kind
    /// The environment the item was issued in.
    public let environment: StoreEnvironment
    /// The app's bundle ID as the item states it.
    public let bundleID: String
    /// The decoded content: Apple's `receipt` object for receipts, the JWS payload for StoreKit 2 items.
    public let receipt: JSONObject
    /// The date the chain was checked at (creation date or `signedDate`), in milliseconds since 1970.
    public let signingDate: Int64
    /// Whether the chain ends at a test root (allowed only because the caller allowed test data).
    public let isTestData: Bool

    /// Creates a verified receipt value.
    public init(
        kind: Kind, environment: StoreEnvironment, bundleID: String, receipt: JSONObject, signingDate: Int64,
        isTestData: Bool
    ) {
        self.kind = kind
        self.environment = environment
        self.bundleID = bundleID
        self.receipt = receipt
        self.signingDate = signingDate
        self.isTestData = isTestData
    }
}
