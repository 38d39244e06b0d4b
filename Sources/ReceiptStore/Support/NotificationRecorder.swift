import Foundation
import ReceiptCore
import ReceiptService

/// What ``NotificationRecorder`` needs of a store, inside one database transaction, for one app and environment
/// (beside the ledger's own writes).
protocol NotificationWriting: LedgerWriting {
    /// Inserts the notification unless its UUID is recorded for the app; returns whether it did.
    func insertNotification(_ record: NotificationRecord) async throws -> Bool
    /// Opens the group of `CONSUMPTION_REQUEST`s about a transaction, or counts one more in it; returns whether the
    /// group is new.
    func openConsumptionGroup(transactionID: String, uuid: String, at date: Date) async throws -> Bool
    /// Sets (or, with nil, clears) the transaction's revocation as `transaction` states it, unless a notification
    /// signed after `asOf` set it; returns whether it wrote.
    func setRevocation(_ transactionID: String, to transaction: PurchaseTransaction?, asOf: Int64) async throws
        -> Bool
    /// The stored status of the subscription, locked until the transaction ends where the store can.
    func subscriptionStatus(of originalTransactionID: String) async throws -> SubscriptionStatus?
    /// Inserts or replaces the subscription's status.
    func saveSubscriptionStatus(_ status: SubscriptionStatus) async throws
    /// Inserts events with one pending delivery per endpoint of the app that takes each.
    func insertEvents(_ events: [WebhookEvent]) async throws
}

/// How a notification is recorded (``NotificationStore/recordNotification(_:)``), whatever the store.
enum NotificationRecorder {
    /// Records `record` through `writer`, inside one database transaction; `changed` tells whether an existing
    /// ledger row's revocation or a subscription's status changed (to be announced, as the ledger's own changes are).
    static func record(_ record: NotificationRecord, with writer: some NotificationWriting) async throws
        -> (recorded: NotificationRecorded, changed: Bool)
    {
        guard try await writer.insertNotification(record) else { return (.duplicate, false) }
        let notification = record.notification
        var events: [WebhookEvent] = []
        func add(_ kind: WebhookEvent.Kind, _ data: JSONObject) {
            events.append(
                WebhookEvent(
                    appID: record.appID, environment: notification.environment, kind: kind,
                    createdAt: record.receivedAt, data: data, notificationUUID: notification.uuid))
        }
        if let group = record.consumptionTransactionID {
            // Apple re-sends a CONSUMPTION_REQUEST with new UUIDs until it is answered: one group, one set of events.
            guard
                try await writer.openConsumptionGroup(
                    transactionID: group, uuid: notification.uuid, at: record.receivedAt)
            else { return (.recorded(events: []), false) }
            add(.notification, record.eventData)
            var data = JSONObject(capacity: 3)
            data.append("transaction_id", .string(group))
            data.append("notification_uuid", .string(notification.uuid))
            add(.consumptionRequested, data)
        } else {
            add(.notification, record.eventData)
        }

        var changed = false
        if let transaction = record.transaction {
            let entry = LedgerEntry(
                appID: record.appID, environment: notification.environment, transaction: transaction, claimant: nil,
                firstSeenAt: record.receivedAt, lastSeenAt: record.receivedAt,
                firstRequestID: "notification:\(notification.uuid)", deliveredAt: nil)
            if try await writer.insertIfAbsent([entry]).contains(transaction.transactionID) {
                add(.transactionCreated, entry.json)
                // A new row's revocation (or its reversal: none) is stamped with the notification's date, so that an
                // older notification arriving later changes nothing.
                if record.revocation != nil || transaction.revocationDate != nil {
                    _ = try await writer.setRevocation(
                        transaction.transactionID, to: transaction.revocationDate != nil ? transaction : nil,
                        asOf: notification.signedDate)
                }
                if transaction.revocationDate != nil { add(.transactionRevoked, entry.json) }
            } else if let change = record.revocation,
                var stored = try await writer.entries(transactionIDs: [transaction.transactionID])[
                    transaction.transactionID]
            {
                // Written whenever this is the newest statement, so that an older one arriving later changes
                // nothing; an event only when the state changes.
                let revokes = change == .revoke
                if try await writer.setRevocation(
                    transaction.transactionID, to: revokes ? transaction : nil, asOf: notification.signedDate),
                    stored.isRevoked != revokes
                {
                    changed = true
                    stored.transaction.revocationDate = revokes ? transaction.revocationDate : nil
                    stored.transaction.revocationReason = revokes ? transaction.revocationReason : nil
                    stored.transaction.revocationType = revokes ? transaction.revocationType : nil
                    stored.transaction.revocationPercentage = revokes ? transaction.revocationPercentage : nil
                    add(revokes ? .transactionRevoked : .transactionRevocationReversed, stored.json)
                }
            }
        }

        if var status = record.status {
            let old = try await writer.subscriptionStatus(of: status.originalTransactionID)
            // A statement signed before the stored one arrived late: it changes nothing.
            if old.map({ $0.asOf <= status.asOf }) ?? true {
                if let old {
                    if status.productID.isEmpty { status.productID = old.productID }
                    status.expiresDate = status.expiresDate ?? old.expiresDate
                    status.autoRenews = status.autoRenews ?? old.autoRenews
                    status.autoRenewProductID = status.autoRenewProductID ?? old.autoRenewProductID
                }
                try await writer.saveSubscriptionStatus(status)
                // Statuses are read through an in-memory view (``SubscriptionStatusView``) that the change drops.
                changed = true
                if old?.state != status.state {
                    add(.subscriptionStatusChanged, statusEventData(status, previous: old?.state))
                }
            }
        }
        try await writer.insertEvents(events)
        return (.recorded(events: events), changed)
    }

    /// The `data` of a `subscription.status_changed` event: the status, and the one it replaced.
    static func statusEventData(_ status: SubscriptionStatus, previous: SubscriptionStatus.State?) -> JSONObject {
        var data = status.json
        data.append("previous_status", previous.map { .string($0.rawValue) } ?? .null)
        return data
    }

    /// The events of subscriptions the expiry scheduler moves to `expired`.
    static func expiryEvents(_ expired: [(SubscriptionStatus, previous: SubscriptionStatus.State)], at date: Date)
        -> [WebhookEvent]
    {
        expired.map { status, previous in
            WebhookEvent(
                appID: status.appID, environment: status.environment, kind: .subscriptionStatusChanged,
                createdAt: date, data: statusEventData(status, previous: previous))
        }
    }
}
