import Foundation
import PostgresNIO
import ReceiptCore
import ReceiptService

/// Notifications and subscription statuses (``NotificationStore``). A notification's UUID is inserted first
/// (`ON CONFLICT DO NOTHING`): of servers receiving Apple's retries at once, one records it and the others wait for
/// its commit and find it; its effects and events go in the same transaction.
extension PostgresStore: NotificationStore {
    public func recordNotification(_ record: NotificationRecord) async throws -> NotificationRecorded {
        try await transaction { connection in
            let writer = PostgresLedgerWriter(
                store: self, connection: connection, appID: record.appID,
                environment: record.notification.environment.rawValue)
            let (recorded, changed) = try await NotificationRecorder.record(record, with: writer)
            if changed { try await self.announceChange(on: connection) }
            return recorded
        }
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
            var expired: [(SubscriptionStatus, previous: SubscriptionStatus.State)] = []
            for var status in due {
                let previous = status.state
                status.state = .expired
                status.updatedAt = now.roundedToMilliseconds
                // The signed date stays: a renewal signed before the expiry but arriving after it still counts.
                try await self.saveSubscriptionStatus(status, on: connection)
                expired.append((status, previous))
            }
            try await self.insertEvents(NotificationRecorder.expiryEvents(expired, at: now), on: connection)
            if !expired.isEmpty { try await self.announceChange(on: connection) }
            return expired.count
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

    /// Inserts or replaces a subscription's status (unless the stored one was signed later), with the time the
    /// scheduler should look at it.
    func saveSubscriptionStatus(_ status: SubscriptionStatus, on connection: PostgresConnection) async throws {
        try await rows(
            """
            INSERT INTO subscription_statuses (app_id, environment, original_transaction_id, product_id, status,
                expires_date, grace_period_expires_date, auto_renews, auto_renew_product_id, as_of, updated_at, due_at)
            VALUES (\(status.appID), \(status.environment.rawValue), \(status.originalTransactionID),
                \(status.productID), \(status.state.rawValue), \(status.expiresDate), \(status.gracePeriodExpiresDate),
                \(status.autoRenews), \(status.autoRenewProductID), \(status.asOf), \(status.updatedAt),
                \(StoredForm.dueAt(status)))
            ON CONFLICT (app_id, environment, original_transaction_id) DO UPDATE SET
                product_id = excluded.product_id, status = excluded.status, expires_date = excluded.expires_date,
                grace_period_expires_date = excluded.grace_period_expires_date, auto_renews = excluded.auto_renews,
                auto_renew_product_id = excluded.auto_renew_product_id, as_of = excluded.as_of,
                updated_at = excluded.updated_at, due_at = excluded.due_at
            WHERE subscription_statuses.as_of <= excluded.as_of
            """, on: connection)
    }

    /// Inserts events, each with one pending delivery (due now) per endpoint of its app that takes it.
    func insertEvents(_ events: [WebhookEvent], onlyTaken: Bool = false, on connection: PostgresConnection)
        async throws
    {
        guard !events.isEmpty else { return }
        var endpoints: [UUID: [WebhookEndpoint]] = [:]
        var kept: [WebhookEvent] = []
        var deliveries: [(event: UUID, endpoint: UUID, at: Date)] = []
        for event in events {
            if endpoints[event.appID] == nil {
                endpoints[event.appID] = try await rows(
                    "SELECT * FROM webhook_endpoints WHERE app_id = \(event.appID) ORDER BY created_at",
                    on: connection
                ).map(StoredForm.webhookEndpoint)
            }
            let takers = (endpoints[event.appID] ?? []).filter {
                $0.accepts(type: event.type, environment: event.environment)
            }
            if onlyTaken && takers.isEmpty { continue }
            kept.append(event)
            deliveries += takers.map { (event.id, $0.id, event.createdAt) }
        }
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
            FROM UNNEST(\(deliveries.map(\.event))::uuid[], \(deliveries.map(\.endpoint))::uuid[],
                \(deliveries.map(\.at))::timestamptz[]) AS d(event_id, endpoint_id, due)
            """, on: connection)
    }
}

/// A notification's writes, on the ledger writer's connection and inside its transaction.
extension PostgresLedgerWriter: NotificationWriting {
    func insertNotification(_ record: NotificationRecord) async throws -> Bool {
        let notification = record.notification
        return
            !(try await store.rows(
                """
                INSERT INTO notifications (app_id, notification_uuid, environment, notification_type, subtype, signed_date,
                    original_transaction_id, transaction_id, source, signed_payload, received_at)
                VALUES (\(appID), \(notification.uuid), \(environment), \(notification.type), \(notification.subtype),
                    \(notification.signedDate), \(notification.originalTransactionID), \(record.transaction?.transactionID),
                    \(record.source.rawValue), \(record.signedPayload), \(record.receivedAt))
                ON CONFLICT DO NOTHING RETURNING notification_uuid
                """, on: connection
            ).isEmpty)
    }

    func openConsumptionGroup(transactionID: String, uuid: String, at date: Date) async throws -> Bool {
        let rows = try await store.rows(
            """
            INSERT INTO consumption_requests (app_id, environment, transaction_id, first_notification_uuid, requests,
                first_at, last_at)
            VALUES (\(appID), \(environment), \(transactionID), \(uuid), 1, \(date), \(date))
            ON CONFLICT (app_id, environment, transaction_id) DO UPDATE SET
                requests = consumption_requests.requests + 1, last_at = excluded.last_at
            RETURNING requests
            """, on: connection)
        return try rows.first?.int("requests") == 1
    }

    func setRevocation(_ transactionID: String, to transaction: PurchaseTransaction?, asOf: Int64) async throws
        -> Bool
    {
        !(try await store.rows(
            """
            UPDATE ledger_transactions SET revocation_date = \(transaction?.revocationDate),
                revocation_reason = \(transaction?.revocationReason), revocation_type = \(transaction?.revocationType),
                revocation_percentage = \(transaction?.revocationPercentage), revocation_as_of = \(asOf)
            WHERE app_id = \(appID) AND environment = \(environment) AND transaction_id = \(transactionID)
                AND (revocation_as_of IS NULL OR revocation_as_of <= \(asOf))
            RETURNING transaction_id
            """, on: connection
        ).isEmpty)
    }

    func subscriptionStatus(of originalTransactionID: String) async throws -> SubscriptionStatus? {
        try await store.rows(
            """
            SELECT * FROM subscription_statuses
            WHERE app_id = \(appID) AND environment = \(environment) AND original_transaction_id = \(originalTransactionID)
            FOR UPDATE
            """, on: connection
        ).first.map(StoredForm.subscriptionStatus)
    }

    func saveSubscriptionStatus(_ status: SubscriptionStatus) async throws {
        try await store.saveSubscriptionStatus(status, on: connection)
    }

    func insertEvents(_ events: [WebhookEvent]) async throws {
        try await store.insertEvents(events, on: connection)
    }

    func insertLedgerEvents(_ events: [WebhookEvent]) async throws {
        try await store.insertEvents(events, onlyTaken: true, on: connection)
    }
}
