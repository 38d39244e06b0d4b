import Foundation
import PostgresNIO
import ReceiptCore
import ReceiptService

/// Webhook endpoints and the outbox of their events (``WebhookStore``). A claim locks the due deliveries it takes and
/// skips those another server's claim holds, then leases them past `lease`: each delivery is attempted by one server
/// at a time. Deliveries of a disabled app or account wait, and are claimed again once it is enabled.
extension PostgresStore: WebhookStore {
    public func addWebhookEndpoint(_ endpoint: WebhookEndpoint) async throws {
        try await run {
            try await rows(
                """
                INSERT INTO webhook_endpoints (id, app_id, url, environments, event_types, forwards_signed_payload,
                    secret, created_at)
                VALUES (\(endpoint.id), \(endpoint.appID), \(endpoint.url),
                    \(endpoint.environments.map(\.rawValue).sorted().joined(separator: ",")),
                    \(endpoint.eventTypes.joined(separator: ",")), \(endpoint.forwardsSignedPayload),
                    \(Data(endpoint.secret.bytes)), \(endpoint.createdAt))
                """)
        }
    }

    public func webhookEndpoints(appID: UUID) async throws -> [WebhookEndpoint] {
        try await run {
            try await rows("SELECT * FROM webhook_endpoints WHERE app_id = \(appID) ORDER BY created_at, id").map(
                StoredForm.webhookEndpoint)
        }
    }

    public func removeWebhookEndpoint(id: UUID, appID: UUID) async throws -> Bool {
        try await run {
            !(try await rows("DELETE FROM webhook_endpoints WHERE id = \(id) AND app_id = \(appID) RETURNING id")
                .isEmpty)
        }
    }

    public func recordEvents(_ events: [WebhookEvent]) async throws {
        try await transaction { connection in try await self.insertEvents(events, on: connection) }
    }

    public func claimWebhookDeliveries(dueBy now: Date, lease: Duration, limit: Int) async throws
        -> [WebhookDeliveryTask]
    {
        let leased = now.addingTimeInterval(Double(lease.components.seconds))
        return try await transaction { connection in
            let claimed = try await self.rows(
                """
                UPDATE webhook_deliveries SET next_attempt_at = \(leased)
                WHERE (event_id, endpoint_id) IN (
                    SELECT d.event_id, d.endpoint_id FROM webhook_deliveries d
                    JOIN webhook_endpoints w ON w.id = d.endpoint_id JOIN apps a ON a.id = w.app_id
                    JOIN accounts c ON c.id = a.account_id
                    WHERE d.state = 'pending' AND d.next_attempt_at <= \(now) AND a.enabled AND c.enabled
                    ORDER BY d.next_attempt_at LIMIT \(limit) FOR UPDATE OF d SKIP LOCKED)
                RETURNING event_id, endpoint_id
                """, on: connection)
            guard !claimed.isEmpty else { return [] }
            let events = try claimed.map { try $0.uuid("event_id") }
            let endpoints = try claimed.map { try $0.uuid("endpoint_id") }
            return try await self.rows(
                """
                \(unescaped: StoredForm.deliverySelect)
                JOIN UNNEST(\(events)::uuid[], \(endpoints)::uuid[]) AS c(event_id, endpoint_id)
                    ON c.event_id = d.event_id AND c.endpoint_id = d.endpoint_id
                """, on: connection
            ).map(StoredForm.webhookDeliveryTask)
        }
    }

    public func recordWebhookDeliveries(_ attempts: [WebhookAttempt], at date: Date) async throws {
        guard !attempts.isEmpty else { return }
        try await transaction { connection in
            for (task, outcome) in attempts {
                let columns = StoredForm.deliveryColumns(outcome, at: date)
                try await self.rows(
                    """
                    UPDATE webhook_deliveries SET state = \(columns.state), attempts = attempts + 1,
                        next_attempt_at = \(columns.next), last_status = \(columns.status),
                        last_error = \(columns.error), delivered_at = \(columns.delivered)
                    WHERE event_id = \(task.event.id) AND endpoint_id = \(task.endpointID) AND state = 'pending'
                    """, on: connection)
            }
        }
    }

    public func webhookEvents(_ query: WebhookEventQuery) async throws -> [WebhookEventRecord] {
        let (since, ids, state) = (query.since, query.eventIDs, query.state?.rawValue)
        return try await run {
            // Absent filters are NULL and match everything; one statement, planned once.
            let events = try await rows(
                """
                SELECT * FROM webhook_events e
                WHERE e.app_id = \(query.appID) AND (\(since)::timestamptz IS NULL OR e.created_at >= \(since))
                    AND (\(ids)::uuid[] IS NULL OR e.id = ANY(\(ids)::uuid[]))
                    AND (\(state)::text IS NULL OR EXISTS (
                        SELECT 1 FROM webhook_deliveries s WHERE s.event_id = e.id AND s.state = \(state)))
                ORDER BY e.created_at DESC, e.id LIMIT \(query.limit)
                """
            ).map(StoredForm.webhookEvent)
            guard !events.isEmpty else { return [] }
            let deliveries = try await rows(
                """
                SELECT * FROM webhook_deliveries WHERE event_id = ANY(\(events.map(\.id))::uuid[]) ORDER BY endpoint_id
                """)
            var byEvent: [UUID: [WebhookEventRecord.Delivery]] = [:]
            for row in deliveries {
                byEvent[try row.uuid("event_id"), default: []].append(try StoredForm.webhookDelivery(row))
            }
            return events.map { WebhookEventRecord(event: $0, deliveries: byEvent[$0.id] ?? []) }
        }
    }

    public func redeliverWebhookEvents(_ query: WebhookEventQuery, at date: Date) async throws -> Int {
        let (since, ids, state) = (query.since, query.eventIDs, query.state?.rawValue)
        let states = query.state.map { [$0.rawValue] } ?? ["pending", "dead"]
        return try await run {
            try await rows(
                """
                UPDATE webhook_deliveries SET state = 'pending', next_attempt_at = \(date), delivered_at = NULL
                WHERE state = ANY(\(states)::text[]) AND event_id IN (
                    SELECT e.id FROM webhook_events e
                    WHERE e.app_id = \(query.appID) AND (\(since)::timestamptz IS NULL OR e.created_at >= \(since))
                        AND (\(ids)::uuid[] IS NULL OR e.id = ANY(\(ids)::uuid[]))
                        AND (\(state)::text IS NULL OR EXISTS (
                            SELECT 1 FROM webhook_deliveries s WHERE s.event_id = e.id AND s.state = \(state)))
                    ORDER BY e.created_at DESC LIMIT \(query.limit))
                RETURNING event_id
                """
            ).count
        }
    }

    public func webhookBacklog() async throws -> (pending: Int, oldest: Date?) {
        try await run {
            let row = try await rows(
                """
                SELECT count(*)::int8 AS pending, min(e.created_at) AS oldest FROM webhook_deliveries d
                JOIN webhook_events e ON e.id = d.event_id WHERE d.state = 'pending'
                """
            ).first
            return (try row?.int("pending") ?? 0, try row?.optionalDate("oldest"))
        }
    }
}
