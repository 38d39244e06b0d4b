/// An App Store Server Notification V2, verified: its `signedPayload` and every signed item it carries
/// ([responseBodyV2DecodedPayload](https://developer.apple.com/documentation/appstoreservernotifications/responsebodyv2decodedpayload)).
///
/// Nothing is assumed of `data`: `RESCIND_CONSENT` carries `appData` instead, and a type Apple adds later may carry
/// neither; such a notification still verifies and keeps its whole payload.
public struct ServerNotification: Sendable, Equatable {
    /// `notificationType`, as Apple wrote it (types unknown today are kept, not refused).
    public let type: String
    /// `subtype`, when Apple gave one.
    public let subtype: String?
    /// `notificationUUID`: the notification's identity; Apple's retries of it carry the same one.
    public let uuid: String
    /// The date the notification was checked at, in milliseconds since 1970: its `signedDate`, or its nested items'
    /// for the early notifications that had none. Notifications are ordered by it, never by arrival.
    public let signedDate: Int64
    /// The environment the notification is about.
    public let environment: StoreEnvironment
    /// The app's bundle ID as `data` (or `appData`) states it.
    public let bundleID: String
    /// The decoded payload, signed items still encoded.
    public let payload: JSONObject
    /// The decoded `signedTransactionInfo`, when the notification carries one.
    public let transaction: JSONObject?
    /// The decoded `signedRenewalInfo`, when the notification carries one.
    public let renewalInfo: JSONObject?
    /// The decoded `appData.signedAppTransactionInfo` (`RESCIND_CONSENT`), when the notification carries one.
    public let appTransaction: JSONObject?
    /// Whether the chain ends at a test root (allowed only because the caller allowed test data).
    public let isTestData: Bool

    /// Creates a notification from its parts (as decoded from a verified `signedPayload`).
    public init(
        type: String, subtype: String?, uuid: String, signedDate: Int64, environment: StoreEnvironment,
        bundleID: String, payload: JSONObject, transaction: JSONObject?, renewalInfo: JSONObject?,
        appTransaction: JSONObject?, isTestData: Bool
    ) {
        self.type = type
        self.subtype = subtype
        self.uuid = uuid
        self.signedDate = signedDate
        self.environment = environment
        self.bundleID = bundleID
        self.payload = payload
        self.transaction = transaction
        self.renewalInfo = renewalInfo
        self.appTransaction = appTransaction
        self.isTestData = isTestData
    }

    /// Creates a notification from a verified `signedPayload` and its verified nested items.
    init(verified: VerifiedReceipt, nested: [String: VerifiedReceipt]) throws {
        let payload = verified.receipt
        guard case .string(let type)? = payload["notificationType"], !type.isEmpty, type.utf8.count <= 64 else {
            throw ReceiptError(.malformedJWS, "the notification has no notificationType")
        }
        guard case .string(let uuid)? = payload["notificationUUID"], (1...64).contains(uuid.utf8.count) else {
            throw ReceiptError(.malformedJWS, "the notification has no notificationUUID")
        }
        self.type = type
        if case .string(let subtype)? = payload["subtype"], subtype.utf8.count <= 64 {
            self.subtype = subtype
        } else {
            self.subtype = nil
        }
        self.uuid = uuid
        signedDate = verified.signingDate
        environment = verified.environment
        bundleID = verified.bundleID
        self.payload = payload
        transaction = nested["signedTransactionInfo"]?.receipt
        renewalInfo = nested["signedRenewalInfo"]?.receipt
        appTransaction = nested["signedAppTransactionInfo"]?.receipt
        isTestData = verified.isTestData || nested.values.contains(where: \.isTestData)
    }

    /// The app's Apple ID the notification states (`appAppleId` under `data`, `summary`, `externalPurchaseToken` or
    /// `appData`), when it states one.
    public var appAppleID: Int64? {
        for key in ["data", "summary", "externalPurchaseToken", "appData"] {
            if case .object(let part)? = payload[key], case .integer(let id)? = part["appAppleId"] { return id }
        }
        return nil
    }

    /// The purchase the notification is about, when it carries a signed transaction.
    public var purchase: PurchaseTransaction? { transaction.flatMap(PurchaseTransaction.init(jwsPayload:)) }

    /// The original transaction the notification is about: the transaction's, else the renewal info's.
    public var originalTransactionID: String? {
        purchase?.originalTransactionID ?? renewalInfo?["originalTransactionId"]?.stringValue
    }
}
