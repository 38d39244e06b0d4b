/// What a client sent to `/api`, `/apiencrypted` or the ledger routes (`/api/transactions`,
/// `/api/transactions/delivered`), after the HTTP layer decoded the form or JSON body.
///
/// Field names follow docs/api.md ("Request"); the HTTP layer also accepts Apple's spellings (`receipt-data`, …).
public struct VerificationRequest: Sendable, Equatable {
    /// The account's API key (`apikey`, or `Authorization: Bearer …`).
    public var apiKey: String?
    /// The app's token.
    public var token: String?
    /// The receipt or JWS as the device produced it (base64 text, possibly damaged in transit).
    public var receipt: String?
    /// A shared secret for Apple's `verifyReceipt`, overriding the app's stored one.
    public var password: String?
    /// Apple's `exclude-old-transactions`: only the latest transaction of each subscription.
    public var excludeOldTransactions: Bool
    /// A transaction the receipt must hold (403 if it does not); without a receipt, the transaction to look up
    /// through the App Store Server API.
    public var transactionID: String?
    /// Without a receipt, an app transaction id (the customer's download of the app) whose history is looked up
    /// through the App Store Server API.
    public var appTransactionID: String?
    /// A product the receipt must hold (403 if it does not).
    public var productID: String?
    /// Echoed inside the answer, so a client can detect a replayed response.
    public var nonce: String?
    /// `/api/transactions/delivered`: the environment (`Production`, `Sandbox`, `Xcode`, any case) whose transactions
    /// are confirmed; absent, every environment's.
    public var environment: String?
    /// Asks for a look-up by `transaction_id` or `app_transaction_id` alone, with no receipt (`lookup=true`); without
    /// it, a request with no receipt is malformed (21002) whatever ids it carries.
    public var lookup: Bool = false
    /// The app's own id of the user presenting the purchase, for claims (docs/api.md, "Transactions").
    public var appUserID: String?
    /// The original transaction a ledger look-up asks for.
    public var originalTransactionID: String?
    /// The transactions a delivery confirmation names.
    public var transactionIDs: [String]?
    /// Where a ledger look-up goes on: the `next_cursor` of the previous page.
    public var cursor: String?
    /// The most rows a ledger look-up wants.
    public var limit: Int?
    /// `/api/webhooks`: what to do (`list`, `add`, `pause`, `resume`, `remove`, `test`, `rotate_secret`,
    /// `deliveries`, `redeliver`) and its fields.
    public var action: String?
    public var url: String?
    public var eventTypes: [String]?
    public var endpointID: String?
    public var graceHours: String?
    public var eventID: String?
    public var state: String?
    /// `/api/offers/signature`: what to sign (`kind`) and its fields (`offer_id`, `application_username`,
    /// `allow_introductory_offer`, `bundle_id`; with `product_id` and `transaction_id`).
    public var offerKind: String?
    public var offerID: String?
    public var applicationUsername: String?
    public var allowIntroductoryOffer: Bool?
    public var bundleID: String?
    /// `/api/transactions/consumption`: Apple's `consumptionPercentage` (milliunits, 0 … 100000) and
    /// `deliveryStatus` for the named transactions.
    public var consumptionPercentage: String?
    public var deliveryStatus: String?
    /// `/api/apple`: Apple's actions on a customer (with `action`, `original_transaction_id`, `transaction_id`,
    /// `product_id` and `environment`).
    public var appAccountToken: String?
    public var extendByDays: String?
    public var extendReasonCode: String?
    public var requestIdentifier: String?
    public var storefrontCountryCodes: [String]?
    /// The store of the purchase (`app_store`, the default, or `google_play`).
    public var store: String?
    /// Google Play: the Android package the purchase was made in.
    public var packageName: String?
    /// Google Play: the purchase's token.
    public var purchaseToken: String?
    /// Google Play: `product` (a one-time product) or `subscription`, where the app's catalog does not say.
    public var purchaseType: String?
    /// Google Play: the client's `Purchase.getOriginalJson()`, which names the package, product and token.
    public var purchase: String?
    /// Google Play: `Purchase.getSignature()`, the Play licensing key's signature of ``purchase``.
    public var purchaseSignature: String?

    /// Creates a request; every field defaults to "not sent".
    public init(
        apiKey: String? = nil, token: String? = nil, receipt: String? = nil, password: String? = nil,
        excludeOldTransactions: Bool = false, transactionID: String? = nil, productID: String? = nil,
        nonce: String? = nil, appUserID: String? = nil
    ) {
        self.apiKey = apiKey
        self.token = token
        self.receipt = receipt
        self.password = password
        self.excludeOldTransactions = excludeOldTransactions
        self.transactionID = transactionID
        self.productID = productID
        self.nonce = nonce
        self.appUserID = appUserID
    }

    /// The most transaction ids one delivery confirmation names.
    public static let maximumTransactionIDs = 1_000
    /// The longest `cursor` accepted, in bytes: a position's base64 (a transaction id is at most
    /// ``maximumFieldLength`` bytes).
    public static let maximumCursorLength = 512
    /// The most rows of one ledger page.
    public static let maximumPageSize = 1_000

    /// The longest `nonce` accepted, in bytes.
    public static let maximumNonceLength = 256
    /// The longest `apikey`, `token`, `password`, `transaction_id`, `product_id` or `app_user_id` accepted, in bytes.
    public static let maximumFieldLength = 256
}
