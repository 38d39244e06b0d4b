import Foundation
import ReceiptCore
import ReceiptService
import SQLiteNIO

/// Notifications and subscription statuses (``NotificationStore``). Notifications are recorded in groups
/// (``GroupCommit``), each group in one transaction (`BEGIN IMMEDIATE`: the write lock), so a notification's UUID, its
/// ledger effects, its status and its events go together.
extension SQLiteStore: NotificationStore {
    public func recordNotification(_ record: NotificationRecord) async throws -> NotificationRecorded {
        try await notificationGroups.commit(
            record,
            with: .init(
                group: { try await self.commitNotifications($0) },
                alone: { try await self.commitNotifications([$0])[0] },
                announceChange: { self.announceLedgerChange() }))
    }

    /// Records notifications in one transaction, and announces the statuses it wrote and the customers it changed once
    /// it committed.
    private func commitNotifications(_ records: [NotificationRecord]) async throws -> [NotificationRecorder.Outcome] {
        let recorded = try await transaction {
            try await NotificationRecorder.recordTogether(records, writer: self.notificationWriter)
        }
        if recorded.statusesChanged { announceStatusChange() }
        if recorded.customersChanged { announceCustomerChange() }
        return recorded.outcomes
    }

    private func notificationWriter(_ record: NotificationRecord) -> SQLiteLedgerWriter {
        SQLiteLedgerWriter(
            store: self, appID: record.appID, purchaseStore: .appStore, environment: record.notification.environment)
    }

    public func subscriptionStatuses(appID: UUID, originalTransactionIDs: [String]) async throws
        -> [SubscriptionStatus]
    {
        guard !originalTransactionIDs.isEmpty else { return [] }
        return try await run {
            var statuses: [SubscriptionStatus] = []
            for chunk in originalTransactionIDs.chunked(StoredForm.ledgerChunk) {
                statuses += try await self.query(
                    """
                    SELECT * FROM subscription_statuses
                    WHERE app_id = ? AND original_transaction_id IN (\(Self.placeholders(chunk.count)))
                    ORDER BY original_transaction_id, environment
                    """, [.uuid(appID)] + chunk.map { .text($0) }
                ).map(StoredForm.subscriptionStatus)
            }
            return statuses
        }
    }

    public func expireSubscriptions(dueBy now: Date, limit: Int) async throws -> Int {
        let expired = try await transaction {
            let due = try await self.query(
                "SELECT * FROM subscription_statuses WHERE due_at <= ? ORDER BY due_at LIMIT ?",
                [.integer(StoredForm.millis(now)), .integer(limit)]
            ).map(StoredForm.subscriptionStatus)
            let expired = NotificationRecorder.expiring(due, at: now)
            try await self.saveSubscriptionStatuses(expired.map(\.0))
            try await self.insertEvents(NotificationRecorder.expiryEvents(expired, at: now))
            return expired.count
        }
        if expired > 0 { announceStatusChange() }
        return expired
    }

    public func recentNotifications(appID: UUID, limit: Int) async throws -> [ReceivedNotification] {
        try await run {
            try await self.query(
                """
                SELECT notification_uuid, notification_type, subtype, environment, signed_date, received_at, source
                FROM notifications WHERE app_id = ?
                UNION ALL
                SELECT message_id, notification_type, NULL, environment, event_time, received_at, 'google'
                FROM google_notifications WHERE app_id = ?
                ORDER BY received_at DESC, notification_uuid LIMIT ?
                """, [.uuid(appID), .uuid(appID), .integer(limit)]
            ).map(StoredForm.receivedNotification)
        }
    }

    public func knownNotifications(appID: UUID, uuids: [String]) async throws -> Set<String> {
        guard !uuids.isEmpty else { return [] }
        return try await run {
            var known = Set<String>()
            for chunk in uuids.chunked(StoredForm.ledgerChunk) {
                for row in try await self.query(
                    """
                    SELECT notification_uuid FROM notifications
                    WHERE app_id = ? AND notification_uuid IN (\(Self.placeholders(chunk.count)))
                    """, [.uuid(appID)] + chunk.map { .text($0) })
                {
                    known.insert(try row.text("notification_uuid"))
                }
            }
            return known
        }
    }

    /// Inserts or replaces subscriptions' statuses (one each), unless a stored one was signed later, with the time
    /// the scheduler should look at each.
    func saveSubscriptionStatuses(_ statuses: [SubscriptionStatus]) async throws {
        let optional: (Int64?) -> SQLiteData = { $0.map { .integer(Int($0)) } ?? .null }
        for chunk in statuses.chunked(StoredForm.ledgerChunk / 4) {
            _ = try await query(
                """
                INSERT INTO subscription_statuses (app_id, store, environment, original_transaction_id, product_id, status,
                    expires_date, grace_period_expires_date, auto_renews, auto_renew_product_id, as_of, updated_at,
                    due_at, billing_issue_detected_at, unsubscribe_detected_at)
                VALUES \(Array(repeating: Self.statusPlaceholders, count: chunk.count).joined(separator: ", "))
                \(StoredForm.statusUpsert)
                """,
                chunk.flatMap { status -> [SQLiteData] in
                    [
                        .uuid(status.appID), .text(status.store.rawValue), .text(status.environment.rawValue),
                        .text(status.originalTransactionID),
                        .text(status.productID), .text(status.state.rawValue), optional(status.expiresDate),
                        optional(status.gracePeriodExpiresDate), status.autoRenews.map { .bool($0) } ?? .null,
                        status.autoRenewProductID.map { .text($0) } ?? .null, .integer(Int(status.asOf)),
                        .millis(status.updatedAt), optional(StoredForm.dueAt(status)),
                        optional(status.state.hasBillingIssue ? status.asOf : nil),
                        optional(status.autoRenews == false ? status.asOf : nil),
                    ]
                })
        }
    }

    private static let statusPlaceholders = "(" + Array(repeating: "?", count: 15).joined(separator: ", ") + ")"

    /// Inserts events, each with one pending delivery (due now) per endpoint of its app that takes it.
    func insertEvents(_ events: [WebhookEvent], onlyTaken: Bool = false) async throws {
        guard !events.isEmpty else { return }
        let fanOut = try await WebhookFanOut(events, onlyTaken: onlyTaken) { appID in
            try await query("SELECT * FROM webhook_endpoints WHERE app_id = ? ORDER BY created_at", [.uuid(appID)])
                .map(StoredForm.webhookEndpoint)
        }
        // One statement for the events and one for their deliveries (per chunk): each is a hop to the connection.
        for chunk in fanOut.events.chunked(StoredForm.ledgerChunk / 8) {
            _ = try await query(
                """
                INSERT INTO webhook_events (id, app_id, environment, event_type, data, notification_uuid, created_at)
                VALUES \(Array(repeating: "(?, ?, ?, ?, ?, ?, ?)", count: chunk.count).joined(separator: ", "))
                """,
                chunk.flatMap { event -> [SQLiteData] in
                    [
                        .uuid(event.id), .uuid(event.appID), .text(event.environment.rawValue), .text(event.type),
                        .text(JSONValue.object(event.data).encodedString),
                        event.notificationUUID.map { .text($0) } ?? .null, .millis(event.createdAt),
                    ]
                })
        }
        for chunk in fanOut.deliveries.chunked(StoredForm.ledgerChunk / 4) {
            _ = try await query(
                """
                INSERT INTO webhook_deliveries (event_id, endpoint_id, state, attempts, next_attempt_at)
                VALUES \(Array(repeating: "(?, ?, 'pending', 0, ?)", count: chunk.count).joined(separator: ", "))
                """, chunk.flatMap { [.uuid($0.event.id), .uuid($0.endpointID), .millis($0.event.createdAt)] })
        }
    }
}

/// A notification's writes, on the ledger writer's connection and inside its transaction.
extension SQLiteLedgerWriter: NotificationWriting {
    func insertNotifications(_ records: [NotificationRecord]) async throws -> Set<String> {
        var inserted = Set<String>()
        for chunk in records.chunked(StoredForm.ledgerChunk / 4) {
            let rows = try await store.query(
                """
                INSERT INTO notifications (app_id, notification_uuid, environment, notification_type, subtype, signed_date,
                    original_transaction_id, transaction_id, source, signed_payload, received_at)
                VALUES \(Array(repeating: Self.notificationPlaceholders, count: chunk.count).joined(separator: ", "))
                ON CONFLICT DO NOTHING RETURNING notification_uuid
                """,
                chunk.flatMap { record -> [SQLiteData] in
                    let notification = record.notification
                    return [
                        .uuid(appID), .text(notification.uuid), .text(environment.rawValue), .text(notification.type),
                        notification.subtype.map { .text($0) } ?? .null, .integer(Int(notification.signedDate)),
                        notification.originalTransactionID.map { .text($0) } ?? .null,
                        record.transaction.map { .text($0.transactionID) } ?? .null, .text(record.source.rawValue),
                        .uuid(appID), .text(record.signedPayload), .millis(record.receivedAt),
                    ]
                })
            for row in rows { inserted.insert(try row.text("notification_uuid")) }
        }
        return inserted
    }

    /// A notification's values; its signed payload is kept only while an endpoint of the app forwards it (else '').
    private static let notificationPlaceholders = """
        (?, ?, ?, ?, ?, ?, ?, ?, ?,
            CASE WHEN EXISTS (SELECT 1 FROM webhook_endpoints WHERE app_id = ? AND forwards_signed_payload) THEN ?
            ELSE '' END, ?)
        """

    func openConsumptionGroup(transactionID: String, uuid: String, at date: Date, answering: Bool) async throws
        -> Bool
    {
        let rows = try await store.query(
            """
            INSERT INTO consumption_requests (app_id, environment, transaction_id, first_notification_uuid, requests,
                first_at, last_at, answer_state, answer_due_at)
            VALUES (?, ?, ?, ?, 1, ?, ?, ?, ?)
            ON CONFLICT (app_id, environment, transaction_id) DO UPDATE SET
                requests = requests + 1, last_at = excluded.last_at,
                answer_state = COALESCE(consumption_requests.answer_state, excluded.answer_state),
                answer_due_at = CASE WHEN consumption_requests.answer_state IS NULL THEN excluded.answer_due_at
                    ELSE consumption_requests.answer_due_at END
            RETURNING requests
            """,
            [
                .uuid(appID), .text(environment.rawValue), .text(transactionID), .text(uuid), .millis(date),
                .millis(date), answering ? .text("pending") : .null, .millis(answering ? date : nil),
            ])
        return try rows.first?.int("requests") == 1
    }

    func setRevocation(_ transactionID: String, to transaction: PurchaseTransaction?, asOf: Int64) async throws
        -> Bool
    {
        let optional: (Int64?) -> SQLiteData = { $0.map { .integer(Int($0)) } ?? .null }
        // First only where the state flips, else the newer statement's stamp alone.
        let flips = transaction == nil ? "revocation_date IS NOT NULL" : "revocation_date IS NULL"
        for condition in [flips, "1"] {
            let written = try await store.query(
                """
                UPDATE ledger_transactions SET revocation_date = ?, revocation_reason = ?, revocation_type = ?,
                    revocation_percentage = ?, revocation_as_of = ?
                WHERE app_id = ? AND store = ? AND environment = ? AND transaction_id = ? AND \(condition)
                    AND (revocation_as_of IS NULL OR revocation_as_of <= ?)
                RETURNING transaction_id
                """,
                [
                    optional(transaction?.revocationDate), optional(transaction?.revocationReason.map(Int64.init)),
                    transaction?.revocationType.map { .text($0) } ?? .null,
                    optional(transaction?.revocationPercentage.map(Int64.init)), .integer(Int(asOf)),
                ] + key + [.text(transactionID), .integer(Int(asOf))])
            if !written.isEmpty { return condition != "1" }
        }
        return false
    }

    func subscriptionStatuses(of originalTransactionIDs: [String]) async throws -> [String: SubscriptionStatus] {
        var statuses: [String: SubscriptionStatus] = [:]
        for chunk in originalTransactionIDs.chunked(StoredForm.ledgerChunk) {
            for row in try await store.query(
                """
                SELECT * FROM subscription_statuses
                WHERE app_id = ? AND store = ? AND environment = ?
                    AND original_transaction_id IN (\(SQLiteStore.placeholders(chunk.count)))
                """, key + chunk.map { .text($0) })
            {
                let status = try StoredForm.subscriptionStatus(row)
                statuses[status.originalTransactionID] = status
            }
        }
        return statuses
    }

    func saveSubscriptionStatuses(_ statuses: [SubscriptionStatus]) async throws {
        try await store.saveSubscriptionStatuses(statuses)
    }

    func insertEvents(_ events: [WebhookEvent]) async throws {
        try await store.insertEvents(events)
    }

    func insertLedgerEvents(_ events: [WebhookEvent]) async throws {
        try await store.insertEvents(events, onlyTaken: true)
    }
}
