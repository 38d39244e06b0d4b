import Foundation
import ReceiptCore

/// A verified notification and what it does, to be recorded in one atomic step
/// (``NotificationStore/recordNotification(_:)``): the notification itself (its UUID once), the transaction it
/// carries, a revocation or its reversal, the subscription's status, and the events it makes.
public struct NotificationRecord: Sendable {
    /// How the notification reached us.
    public enum Source: String, Sendable {
        /// Apple POSTed it to `/notifications/{token}`.
        case apple
        /// Reconciliation found it in Apple's Notification History.
        case history
    }

    /// What the notification does to its transaction's revocation.
    public enum RevocationChange: Sendable, Equatable {
        /// `REFUND` or `REVOKE`: the transaction is revoked as it states.
        case revoke
        /// `REFUND_REVERSED`: the revocation is undone.
        case reverse
    }

    /// The app.
    public var appID: UUID
    /// The notification.
    public var notification: ServerNotification
    /// Apple's `signedPayload`, for endpoints that forward it (stored only while one of the app's does).
    public var signedPayload: String
    /// How it reached us.
    public var source: Source
    /// When it arrived.
    public var receivedAt: Date
    /// The transaction the notification carries, recorded in the ledger if absent.
    public var transaction: PurchaseTransaction?
    /// The change to that transaction's revocation.
    public var revocation: RevocationChange?
    /// The subscription's status as the notification states it.
    public var status: SubscriptionStatus?
    /// `CONSUMPTION_REQUEST`s are grouped by the transaction they ask about: Apple re-sends one with new UUIDs until
    /// it is answered, and only the first of a group makes events.
    public var consumptionTransactionID: String?
    /// The app's catalog, whose entitlements the notification may change (``CustomerChanges``); nil: none.
    public var catalog: [CatalogProduct]?
    /// Whether the app answers refund requests (``RefundAnswers/answers``): a `CONSUMPTION_REQUEST` then makes its
    /// group's answer to Apple due.
    public var answersConsumption = false

    /// The record of `notification` for `appID`, with the effects its type has (docs/notifications.md, "Effects").
    public init(
        notification: ServerNotification, signedPayload: String, appID: UUID, source: Source, receivedAt: Date
    ) {
        self.appID = appID
        self.notification = notification
        self.signedPayload = signedPayload
        self.source = source
        self.receivedAt = receivedAt.roundedToMilliseconds
        transaction = notification.purchase
        switch notification.type {
        case "REFUND", "REVOKE": revocation = transaction?.revocationDate != nil ? .revoke : nil
        case "REFUND_REVERSED": revocation = .reverse
        default: revocation = nil
        }
        status = SubscriptionStatus(notification: notification, appID: appID, now: receivedAt)
        consumptionTransactionID = notification.type == "CONSUMPTION_REQUEST" ? transaction?.transactionID : nil
    }

    /// The `data` of the `notification` event: Apple's type, subtype and UUID, the signed date, and the decoded
    /// signed items.
    public var eventData: JSONObject {
        var data = JSONObject(capacity: 10)
        data.append("notification_uuid", .string(notification.uuid))
        data.append("notification_type", .string(notification.type))
        if let subtype = notification.subtype { data.append("subtype", .string(subtype)) }
        data.append("signed_date", .string(AppleDate.rfc3339(milliseconds: notification.signedDate)))
        data.append("bundle_id", .string(notification.bundleID))
        if let original = notification.originalTransactionID {
            data.append("original_transaction_id", .string(original))
        }
        if let transaction = notification.transaction { data.append("transaction", .object(transaction)) }
        if let renewal = notification.renewalInfo { data.append("renewal_info", .object(renewal)) }
        if let app = notification.appTransaction { data.append("app_transaction", .object(app)) }
        if let summary = notification.payload["summary"] { data.append("summary", summary) }
        data.append("source", .string(source.rawValue))
        return data
    }
}

/// What recording a notification came to.
public enum NotificationRecorded: Sendable, Equatable {
    /// Its UUID was recorded before: nothing changed.
    case duplicate
    /// Recorded, with the events it made (none for a repeated `CONSUMPTION_REQUEST`).
    case recorded(events: [WebhookEvent])
}
