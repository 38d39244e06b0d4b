import Foundation
import ReceiptCore

/// How notifications are recorded (``NotificationStore/recordNotification(_:)``), whatever the store: a group of them
/// (a store's group commit) in one database transaction, with one statement per table for the whole group, and each
/// notification's outcome the one it would have had recorded alone, after those before it in the group.
public enum NotificationRecorder {
    /// A notification's outcome, and whether an existing ledger row's revocation changed (to be announced, as the
    /// ledger's own changes are).
    public typealias Outcome = (result: NotificationRecorded, changed: Bool)
    /// The outcomes of a group, whether it wrote a subscription status (to be announced on the store's
    /// ``NotificationStore/statusChangeMarker()``, which ``SubscriptionStatusView`` follows), and whether it inserted a
    /// ledger row, which changes its claimant's customer view (to be announced as a customer change, which the views
    /// follow: a renewal whose own status statement was older than the stored one left the view stale before; the
    /// simulator found it, seed 120).
    public typealias GroupOutcome = (outcomes: [Outcome], statusesChanged: Bool, customersChanged: Bool)

    /// Records a group of notifications inside one transaction, a few statements per app and environment; the
    /// outcomes in the group's order. `writer` gives the writer of a notification's app and environment.
    public static func recordTogether<Writer: NotificationWriting>(
        _ records: [NotificationRecord], writer: (NotificationRecord) -> Writer
    ) async throws -> GroupOutcome {
        var outcomes = [Outcome](repeating: (.duplicate, false), count: records.count)
        var statusesChanged = false
        var customersChanged = false
        for indexes in LedgerRecorder.byLedger(records.map { ($0.appID, .appStore, $0.notification.environment) }) {
            let members = indexes.map { records[$0] }
            let recorded = try await record(members, with: writer(members[0]))
            for (index, outcome) in zip(indexes, recorded.outcomes) { outcomes[index] = outcome }
            statusesChanged = statusesChanged || recorded.statusesChanged
            customersChanged = customersChanged || recorded.customersChanged
        }
        return (outcomes, statusesChanged, customersChanged)
    }

    /// Records `records`, all of the writer's app and environment, through `writer`, inside one database transaction;
    /// the outcomes in their order.
    private static func record(_ records: [NotificationRecord], with writer: some NotificationWriting) async throws
        -> GroupOutcome
    {
        var outcomes = [Outcome](repeating: (.duplicate, false), count: records.count)
        // The first of each UUID is recorded, if it was not before; a repeat in the group is a duplicate.
        var firsts = Set<String>()
        let distinct = records.indices.filter { firsts.insert(records[$0].notification.uuid).inserted }
        // Rows are written in key order throughout, so that two servers' groups take their locks in one order.
        let inserted = try await writer.insertNotifications(
            distinct.map { records[$0] }.sorted { $0.notification.uuid < $1.notification.uuid })
        var events = [[WebhookEvent]](repeating: [], count: records.count)
        var recorded: [Int] = []
        for index in distinct where inserted.contains(records[index].notification.uuid) {
            let record = records[index]
            if let group = record.consumptionTransactionID {
                // Apple re-sends a CONSUMPTION_REQUEST with new UUIDs until it is answered: one group, one set of
                // events.
                outcomes[index] = (.recorded(events: []), false)
                // Apple's 12 hours run from when Apple asked (the notification's signed date), not from when a
                // retry or a reconciliation brought it here (money review M7).
                let asked = min(record.receivedAt, Date(millisecondsSince1970: record.notification.signedDate))
                guard
                    try await writer.openConsumptionGroup(
                        transactionID: group, uuid: record.notification.uuid, at: asked,
                        answering: record.answersConsumption)
                else { continue }
                var data = JSONObject(capacity: 3)
                data.append("transaction_id", .string(group))
                data.append("notification_uuid", .string(record.notification.uuid))
                events[index] = [
                    record.event(.notification, record.eventData), record.event(.consumptionRequested, data),
                ]
            } else {
                events[index] = [record.event(.notification, record.eventData)]
            }
            recorded.append(index)
        }

        // The transactions carried, in one insert: a transaction is new for the first notification carrying it,
        // whose row is the one inserted.
        var firstCarried: [String: LedgerEntry] = [:]
        for index in recorded {
            guard let entry = records[index].ledgerEntry else { continue }
            if firstCarried[entry.transaction.transactionID] == nil {
                firstCarried[entry.transaction.transactionID] = entry
            }
        }
        let created = try await writer.insertIfAbsent(
            firstCarried.values.sorted { $0.transaction.transactionID < $1.transaction.transactionID })
        for index in recorded {
            let record = records[index]
            guard let transaction = record.transaction else { continue }
            if created.contains(transaction.transactionID),
                var entry = firstCarried.removeValue(forKey: transaction.transactionID)
            {
                events[index].append(record.event(.transactionCreated, entry.eventJSON))
                // A new row's revocation (or its reversal: none) is stamped with the notification's date, so that an
                // older notification arriving later changes nothing.
                if record.revocation != nil || transaction.revocationDate != nil {
                    _ = try await writer.setRevocation(
                        transaction.transactionID, to: transaction.revocationDate != nil ? transaction : nil,
                        asOf: record.notification.signedDate)
                }
                if transaction.revocationDate != nil {
                    entry.revocationAsOf = record.notification.signedDate
                    events[index].append(record.event(.transactionRevoked, entry.eventJSON))
                }
            } else if let change = record.revocation,
                var stored = try await writer.entries(transactionIDs: [transaction.transactionID])[
                    transaction.transactionID]
            {
                // Written whenever this is the newest statement, so that an older one arriving later changes
                // nothing; an event only when the state changes.
                let revokes = change == .revoke
                if try await writer.setRevocation(
                    transaction.transactionID, to: revokes ? transaction : nil, asOf: record.notification.signedDate)
                {
                    outcomes[index].changed = true
                    stored.transaction.takeRevocation(of: revokes ? transaction : nil)
                    stored.revocationAsOf = record.notification.signedDate
                    events[index].append(
                        record.event(revokes ? .transactionRevoked : .transactionRevocationReversed, stored.eventJSON))
                }
            }
        }

        // Statuses: each notification's statement, in order.
        let stating = recorded.filter { records[$0].status != nil }
        let (changes, wrote) = try await SubscriptionStatus.merge(
            stating.compactMap { records[$0].status }, with: writer)
        for change in changes {
            let index = stating[change.index]
            events[index].append(
                records[index].event(
                    .subscriptionStatusChanged, statusEventData(change.status, previous: change.previous)))
        }
        let told = try await customerEvents(of: recorded.map { records[$0] }, with: writer)
        try await writer.insertEvents(events.flatMap { $0 } + told)
        for index in recorded { outcomes[index].result = .recorded(events: events[index]) }
        return (outcomes, wrote, !created.isEmpty)
    }

    /// The `customer.entitlements_changed` events of recorded notifications of one app and environment
    /// (``CustomerChanges``): of the users claiming the original transactions they are about; nothing is read when
    /// the app's catalog grants no entitlement.
    static func customerEvents(of records: [NotificationRecord], with writer: some NotificationWriting) async throws
        -> [WebhookEvent]
    {
        guard let first = records.first, CustomerChanges.grantsEntitlements(first.catalog) else { return [] }
        let originals = Set(
            records.compactMap { $0.transaction?.originalTransactionID ?? $0.status?.originalTransactionID })
        guard !originals.isEmpty else { return [] }
        let claimants = try await writer.claimants(of: originals.sorted())
        return try await CustomerChanges.events(
            for: Set(claimants.values), appID: first.appID, environment: first.notification.environment,
            catalog: first.catalog, now: records.map(\.receivedAt).max() ?? first.receivedAt, with: writer,
            notificationUUID: records.count == 1 ? first.notification.uuid : nil)
    }

    /// The `data` of a `subscription.status_changed` event: the status, and the one it replaced.
    public static func statusEventData(_ status: SubscriptionStatus, previous: SubscriptionStatus.State?) -> JSONObject
    {
        var data = status.json
        data.append("previous_status", previous.map { .string($0.rawValue) } ?? .null)
        return data
    }

    /// The due statuses moved to `expired` at `now`, with the state each had. The signed date stays: a renewal signed
    /// before the expiry but arriving after it still counts.
    public static func expiring(_ due: [SubscriptionStatus], at now: Date) -> [(
        SubscriptionStatus, previous: SubscriptionStatus.State
    )] {
        due.map { status in
            var expired = status
            expired.state = .expired
            expired.updatedAt = now.roundedToMilliseconds
            return (expired, status.state)
        }
    }

    /// The events of subscriptions the expiry scheduler moves to `expired`.
    public static func expiryEvents(
        _ expired: [(SubscriptionStatus, previous: SubscriptionStatus.State)], at date: Date
    )
        -> [WebhookEvent]
    {
        expired.map { status, previous in
            WebhookEvent(
                appID: status.appID, environment: status.environment, kind: .subscriptionStatusChanged,
                createdAt: date, data: statusEventData(status, previous: previous))
        }
    }
}

extension NotificationRecord {
    /// An event of the notification.
    func event(_ kind: WebhookEvent.Kind, _ data: JSONObject) -> WebhookEvent {
        WebhookEvent(
            appID: appID, environment: notification.environment, kind: kind, createdAt: receivedAt, data: data,
            notificationUUID: notification.uuid)
    }

    /// The ledger row of the transaction the notification carries, first seen now.
    var ledgerEntry: LedgerEntry? {
        transaction.map {
            LedgerEntry(
                appID: appID, environment: notification.environment, transaction: $0, claimant: nil,
                firstSeenAt: receivedAt, lastSeenAt: receivedAt, firstRequestID: "notification:\(notification.uuid)",
                deliveredAt: nil)
        }
    }
}
