import Foundation
import ReceiptCore

/// One thing that happened to an app's ledger or came from Apple, to be told to the customer's webhook endpoints
/// (docs/webhooks.md, "Events"). Its id is stable: every delivery and redelivery of it carries the same one, so a
/// receiver handles each event once.
public struct WebhookEvent: Sendable, Equatable {
    /// The event types.
    public enum Kind: String, Sendable, CaseIterable {
        /// An App Store Server Notification or a Google Play Real-time Developer Notification arrived (every one,
        /// unknown types included).
        case notification = "notification"
        /// The ledger recorded a transaction it did not know.
        case transactionCreated = "transaction.created"
        /// Apple refunded or revoked a transaction of the ledger.
        case transactionRevoked = "transaction.revoked"
        /// Apple reversed a refund (`REFUND_REVERSED`).
        case transactionRevocationReversed = "transaction.revocation_reversed"
        /// A purchase claimed by one user was presented by another.
        case claimConflict = "claim.conflict"
        /// A purchase's claim moved to another user (claims policy `transfer`, or the operator).
        case claimTransferred = "claim.transferred"
        /// A subscription's status changed.
        case subscriptionStatusChanged = "subscription.status_changed"
        /// Apple asks for consumption information about a refund request (once per transaction, however often
        /// Apple re-sends it).
        case consumptionRequested = "consumption.requested"
        /// The app's answer to a refund request reached Apple, or failed for good (the app's refund policy).
        case consumptionAnswered = "consumption.answered"
        /// What a customer may use changed: an entitlement started, renewed, ended, moved to grace or billing retry,
        /// was refunded or restored, or moved with a claim (`before` and `after`).
        case customerEntitlementsChanged = "customer.entitlements_changed"
        /// A test event (`receiptverify webhooks test`).
        case test = "webhook.test"
    }

    /// The event's id.
    public var id: UUID
    /// The app.
    public var appID: UUID
    /// The environment the event is about.
    public var environment: StoreEnvironment
    /// Its type (a ``Kind``'s raw value).
    public var type: String
    /// When it happened here.
    public var createdAt: Date
    /// What it is about, in the documented shape of its type.
    public var data: JSONObject
    /// The notification it came from, when it came from one.
    public var notificationUUID: String?

    /// Creates an event.
    public init(
        id: UUID = UUID(), appID: UUID, environment: StoreEnvironment, kind: Kind, createdAt: Date,
        data: JSONObject, notificationUUID: String? = nil
    ) {
        self.id = id
        self.appID = appID
        self.environment = environment
        type = kind.rawValue
        self.createdAt = createdAt.roundedToMilliseconds
        self.data = data
        self.notificationUUID = notificationUUID
    }

    /// Creates an event from its stored parts.
    public init(
        id: UUID, appID: UUID, environment: StoreEnvironment, type: String, createdAt: Date, data: JSONObject,
        notificationUUID: String?
    ) {
        self.id = id
        self.appID = appID
        self.environment = environment
        self.type = type
        self.createdAt = createdAt.roundedToMilliseconds
        self.data = data
        self.notificationUUID = notificationUUID
    }

    /// The event's id as it is shown and sent: its UUID in lower case.
    public var idText: String { id.uuidString.lowercased() }

    /// The JSON body a delivery sends: `id`, `type`, `created_at`, `environment`, `data`, and Apple's
    /// `signed_payload` for endpoints that forward it.
    public func body(signedPayload: String? = nil) -> [UInt8] {
        var object = JSONObject(capacity: 6)
        object.append("id", .string(idText))
        object.append("type", .string(type))
        object.append("created_at", .string(LedgerEntry.rfc3339(createdAt)))
        object.append("environment", .string(environment.rawValue))
        object.append("data", .object(data))
        if let signedPayload { object.append("signed_payload", .string(signedPayload)) }
        return JSONValue.object(object).encoded
    }
}
