import Foundation
import PostgresNIO
import ReceiptCore
import ReceiptService

/// Notifications and subscription statuses (``NotificationStore``). Notifications are recorded in groups
/// (``GroupCommit``), each group in one transaction. A notification's UUID is inserted first (`ON CONFLICT DO
/// NOTHING`): of servers receiving Apple's retries at once, one records it and the others wait for its commit and find
/// it; its effects and events go in the same transaction.
extension PostgresStore: NotificationStore {
    public func recordNotification(_ record: NotificationRecord) async throws -> NotificationRecorded {
        try await notificationGroups.commit(
            record,
            with: .init(
                group: { try await self.commitNotifications($0) },
                alone: { try await self.commitNotifications([$0])[0] },
                // Nothing after the commit: the announcement went inside the transaction.
                announceChange: {}))
    }

    /// Records notifications in one transaction, announcing in it the ledger rows, the statuses and the customers it
    /// changed.
    private func commitNotifications(_ records: [NotificationRecord]) async throws -> [NotificationRecorder.Outcome] {
        try await transaction { connection in
            let recorded = try await NotificationRecorder.recordTogether(records) { record in
                self.notificationWriter(record, on: connection)
            }
            if recorded.outcomes.contains(where: \.changed) { try await self.announceChange(on: connection) }
            if recorded.statusesChanged { try await self.announceStatusChange(on: connection) }
            if recorded.customersChanged { try await self.announceCustomerChange(on: connection) }
            return recorded.outcomes
        }
    }

    private func notificationWriter(_ record: NotificationRecord, on connection: PostgresConnection)
        -> PostgresLedgerWriter
    {
        PostgresLedgerWriter(
            store: self, connection: connection, appID: record.appID, purchaseStore: Store.appStore.rawValue,
            environment: record.notification.environment.rawValue)
    }

    public func subscriptionStatuses(appID: UUID, originalTransactionIDs: [String]) async throws
        -> [SubscriptionStatus]
    {
        guard !originalTransactionIDs.isEmpty else { return [] }
        return try await run {
            try await rows(
                """
                SELECT * FROM subscription_statuses
                WHERE app_id = \(appID) AND original_transaction_id = ANY(\(originalTransactionIDs))
                ORDER BY original_transaction_id, environment
                """
            ).map(StoredForm.subscriptionStatus)
        }
    }

    public func expireSubscriptions(dueBy now: Date, limit: Int) async throws -> Int {
        try await transaction { connection in
            let due = try await self.rows(
                """
                SELECT * FROM subscription_statuses WHERE due_at <= \(now.millisecondsSince1970)
                ORDER BY due_at LIMIT \(limit) FOR UPDATE SKIP LOCKED
                """, on: connection
            ).map(StoredForm.subscriptionStatus)
            let expired = NotificationRecorder.expiring(due, at: now)
            try await self.saveSubscriptionStatuses(expired.map(\.0), on: connection)
            try await self.insertEvents(NotificationRecorder.expiryEvents(expired, at: now), on: connection)
            if !expired.isEmpty { try await self.announceStatusChange(on: connection) }
            return expired.count
        }
    }

    public func recentNotifications(appID: UUID, limit: Int) async throws -> [ReceivedNotification] {
        try await run {
            try await rows(
                """
                SELECT notification_uuid, notification_type, subtype, environment, signed_date, received_at, source
                FROM notifications WHERE app_id = \(appID)
                UNION ALL
                SELECT message_id, notification_type, NULL::text, environment, event_time, received_at, 'google'
                FROM google_notifications WHERE app_id = \(appID)
                ORDER BY received_at DESC, notification_uuid LIMIT \(limit)
                """
            ).map(StoredForm.receivedNotification)
        }
    }

    public func knownNotifications(appID: UUID, uuids: [String]) async throws -> Set<String> {
        guard !uuids.isEmpty else { return [] }
        return try await run {
            Set(
                try await rows(
                    """
                    SELECT notification_uuid FROM notifications
                    WHERE app_id = \(appID) AND notification_uuid = ANY(\(uuids))
                    """
                ).map { try $0.text("notification_uuid") })
        }
    }

    /// Inserts or replaces subscriptions' statuses (one each), unless a stored one was signed later, with the time
    /// the scheduler should look at each. The values travel as arrays, one per column (absent ones as sentinels no
    /// value takes).
    func saveSubscriptionStatuses(_ statuses: [SubscriptionStatus], on connection: PostgresConnection) async throws {
        guard !statuses.isEmpty else { return }
        let (none, noText) = (Self.absentNumber, Self.absentText)
        try await rows(
            """
            INSERT INTO subscription_statuses (app_id, store, environment, original_transaction_id, product_id,
                status, expires_date, grace_period_expires_date, auto_renews, auto_renew_product_id, as_of, updated_at,
                due_at, billing_issue_detected_at, unsubscribe_detected_at)
            SELECT s.app_id, s.store, s.environment, s.original, s.product, s.status, NULLIF(s.expires, \(none)),
                NULLIF(s.grace, \(none)), CASE s.renews WHEN 1 THEN true WHEN 0 THEN false END,
                NULLIF(s.renew_product, \(noText)), s.as_of, s.updated_at, NULLIF(s.due, \(none)),
                CASE WHEN s.status IN ('grace_period', 'billing_retry') THEN s.as_of END,
                CASE WHEN s.renews = 0 THEN s.as_of END
            FROM UNNEST(\(statuses.map(\.appID))::uuid[], \(statuses.map(\.store.rawValue))::text[],
                \(statuses.map(\.environment.rawValue))::text[],
                \(statuses.map(\.originalTransactionID))::text[], \(statuses.map(\.productID))::text[],
                \(statuses.map(\.state.rawValue))::text[], \(statuses.map { $0.expiresDate ?? none })::int8[],
                \(statuses.map { $0.gracePeriodExpiresDate ?? none })::int8[],
                \(statuses.map { $0.autoRenews.map { $0 ? Int64(1) : 0 } ?? none })::int8[],
                \(statuses.map { $0.autoRenewProductID ?? noText })::text[], \(statuses.map(\.asOf))::int8[],
                \(statuses.map(\.updatedAt))::timestamptz[], \(statuses.map { StoredForm.dueAt($0) ?? none })::int8[])
                AS s(app_id, store, environment, original, product, status, expires, grace, renews, renew_product,
                    as_of, updated_at, due)
            \(unescaped: StoredForm.statusUpsert)
            """, on: connection)
    }

    /// Inserts events, each with one pending delivery (due now) per endpoint of its app that takes it.
    func insertEvents(_ events: [WebhookEvent], onlyTaken: Bool = false, on connection: PostgresConnection)
        async throws
    {
        guard !events.isEmpty else { return }
        let fanOut = try await WebhookFanOut(events, onlyTaken: onlyTaken) { appID in
            try await rows(
                "SELECT * FROM webhook_endpoints WHERE app_id = \(appID) ORDER BY created_at", on: connection
            )
            .map(StoredForm.webhookEndpoint)
        }
        let kept = fanOut.events
        let deliveries = fanOut.deliveries
        guard !kept.isEmpty else { return }
        // One statement for the events and one for their deliveries: the values travel as arrays, one per column
        // (absent notification UUIDs as an empty text, which no UUID is).
        try await rows(
            """
            INSERT INTO webhook_events (id, app_id, environment, event_type, data, notification_uuid, created_at)
            SELECT e.id, e.app_id, e.environment, e.event_type, e.data, NULLIF(e.notification_uuid, ''), e.created_at
            FROM UNNEST(\(kept.map(\.id))::uuid[], \(kept.map(\.appID))::uuid[],
                \(kept.map(\.environment.rawValue))::text[], \(kept.map(\.type))::text[],
                \(kept.map { JSONValue.object($0.data).encodedString })::text[],
                \(kept.map { $0.notificationUUID ?? "" })::text[], \(kept.map(\.createdAt))::timestamptz[])
                AS e(id, app_id, environment, event_type, data, notification_uuid, created_at)
            """, on: connection)
        guard !deliveries.isEmpty else { return }
        try await rows(
            """
            INSERT INTO webhook_deliveries (event_id, endpoint_id, state, attempts, next_attempt_at)
            SELECT d.event_id, d.endpoint_id, 'pending', 0, d.due
            FROM UNNEST(\(deliveries.map(\.event.id))::uuid[], \(deliveries.map(\.endpointID))::uuid[],
                \(deliveries.map(\.event.createdAt))::timestamptz[]) AS d(event_id, endpoint_id, due)
            """, on: connection)
    }
}

/// A notification's writes, on the ledger writer's connection and inside its transaction.
extension PostgresLedgerWriter: NotificationWriting {
    func insertNotifications(_ records: [NotificationRecord]) async throws -> Set<String> {
        guard !records.isEmpty else { return [] }
        let noText = PostgresStore.absentText
        let notifications = records.map(\.notification)
        return Set(
            try await store.rows(
                """
                INSERT INTO notifications (app_id, notification_uuid, environment, notification_type, subtype, signed_date,
                    original_transaction_id, transaction_id, source, signed_payload, received_at)
                SELECT \(appID), n.uuid, \(environment), n.type, NULLIF(n.subtype, \(noText)), n.signed_date,
                    NULLIF(n.original, \(noText)), NULLIF(n.transaction, \(noText)), n.source,
                    -- Apple's signed payload is kept only while an endpoint of the app forwards it.
                    CASE WHEN EXISTS (
                        SELECT 1 FROM webhook_endpoints WHERE app_id = \(appID) AND forwards_signed_payload
                    ) THEN n.payload ELSE '' END,
                    n.received_at
                FROM UNNEST(\(notifications.map(\.uuid))::text[], \(notifications.map(\.type))::text[],
                    \(notifications.map { $0.subtype ?? noText })::text[], \(notifications.map(\.signedDate))::int8[],
                    \(notifications.map { $0.originalTransactionID ?? noText })::text[],
                    \(records.map { $0.transaction?.transactionID ?? noText })::text[],
                    \(records.map(\.source.rawValue))::text[], \(records.map(\.signedPayload))::text[],
                    \(records.map(\.receivedAt))::timestamptz[])
                    WITH ORDINALITY AS n(uuid, type, subtype, signed_date, original, transaction, source, payload,
                        received_at, position)
                ORDER BY n.position
                ON CONFLICT DO NOTHING RETURNING notification_uuid
                """, on: connection
            ).map { try $0.text("notification_uuid") })
    }

    func openConsumptionGroup(transactionID: String, uuid: String, at date: Date, answering: Bool) async throws
        -> Bool
    {
        let state: String? = answering ? "pending" : nil
        let due: Date? = answering ? date : nil
        let rows = try await store.rows(
            """
            INSERT INTO consumption_requests (app_id, environment, transaction_id, first_notification_uuid, requests,
                first_at, last_at, answer_state, answer_due_at)
            VALUES (\(appID), \(environment), \(transactionID), \(uuid), 1, \(date), \(date), \(state),
                \(due)::timestamptz)
            ON CONFLICT (app_id, environment, transaction_id) DO UPDATE SET
                requests = consumption_requests.requests + 1, last_at = excluded.last_at,
                answer_state = COALESCE(consumption_requests.answer_state, excluded.answer_state),
                answer_due_at = CASE WHEN consumption_requests.answer_state IS NULL THEN excluded.answer_due_at
                    ELSE consumption_requests.answer_due_at END
            RETURNING requests
            """, on: connection)
        return try rows.first?.int("requests") == 1
    }

    func setRevocation(_ transactionID: String, to transaction: PurchaseTransaction?, asOf: Int64) async throws
        -> Bool
    {
        // First only where the state flips (as ``touch`` does): PostgreSQL checks it again on the row a concurrent
        // writer left; else the newer statement's stamp alone.
        let flips = transaction == nil ? "revocation_date IS NOT NULL" : "revocation_date IS NULL"
        for condition in [flips, "TRUE"] {
            let written = try await store.rows(
                """
                UPDATE ledger_transactions SET revocation_date = \(transaction?.revocationDate),
                    revocation_reason = \(transaction?.revocationReason), revocation_type = \(transaction?.revocationType),
                    revocation_percentage = \(transaction?.revocationPercentage), revocation_as_of = \(asOf)
                WHERE app_id = \(appID) AND store = \(purchaseStore) AND environment = \(environment)
                    AND transaction_id = \(transactionID) AND \(unescaped: condition)
                    AND (revocation_as_of IS NULL OR revocation_as_of <= \(asOf))
                RETURNING transaction_id
                """, on: connection)
            if !written.isEmpty { return condition != "TRUE" }
        }
        return false
    }

    func subscriptionStatuses(of originalTransactionIDs: [String]) async throws -> [String: SubscriptionStatus] {
        guard !originalTransactionIDs.isEmpty else { return [:] }
        // Locked in one order (by ID), as the rows a group inserts are written, so that two servers' groups take their
        // locks in one order (a deadlock, should one still happen, sends the groups back to one by one).
        var statuses: [String: SubscriptionStatus] = [:]
        for row in try await store.rows(
            """
            SELECT * FROM subscription_statuses
            WHERE app_id = \(appID) AND store = \(purchaseStore) AND environment = \(environment)
                AND original_transaction_id = ANY(\(originalTransactionIDs))
            ORDER BY original_transaction_id FOR UPDATE
            """, on: connection)
        {
            let status = try StoredForm.subscriptionStatus(row)
            statuses[status.originalTransactionID] = status
        }
        return statuses
    }

    func saveSubscriptionStatuses(_ statuses: [SubscriptionStatus]) async throws {
        try await store.saveSubscriptionStatuses(statuses, on: connection)
    }

    func insertEvents(_ events: [WebhookEvent]) async throws {
        try await store.insertEvents(events, on: connection)
    }

    func insertLedgerEvents(_ events: [WebhookEvent]) async throws {
        try await store.insertEvents(events, onlyTaken: true, on: connection)
    }
}
