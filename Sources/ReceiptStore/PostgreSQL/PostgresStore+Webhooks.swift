import Foundation
import PostgresNIO
import ReceiptCore
import ReceiptService

/// Webhook endpoints and the outbox of their events (``WebhookStore``). A claim locks the due deliveries it takes and
/// skips those another server's claim holds, then leases them past `lease`: each delivery is attempted by one server
/// at a time. Deliveries of a disabled app or account wait, and are claimed again once it is enabled.
extension PostgresStore: WebhookStore {
    public func addWebhookEndpoint(_ endpoint: WebhookEndpoint, limit: Int) async throws -> Bool {
        try await transaction { connection in
            let held = try await self.lockAndCount(
                "SELECT id FROM apps WHERE id = \(endpoint.appID) FOR UPDATE",
                "SELECT count(*)::int8 AS n FROM webhook_endpoints WHERE app_id = \(endpoint.appID)", on: connection)
            guard held < limit else { return false }
            try await self.rows(
                """
                INSERT INTO webhook_endpoints (id, app_id, url, environments, event_types, forwards_signed_payload,
                    secret, created_at)
                VALUES (\(endpoint.id), \(endpoint.appID), \(endpoint.url),
                    \(endpoint.environments.map(\.rawValue).sorted().joined(separator: ",")),
                    \(endpoint.eventTypes.joined(separator: ",")), \(endpoint.forwardsSignedPayload),
                    \(Data(endpoint.secret.bytes)), \(endpoint.createdAt))
                """, on: connection)
            return true
        }
    }

    public func webhookEndpoints(appID: UUID) async throws -> [WebhookEndpoint] {
        try await run {
            try await rows("SELECT * FROM webhook_endpoints WHERE app_id = \(appID) ORDER BY created_at, id").map(
                StoredForm.webhookEndpoint)
        }
    }

    public func updateWebhookEndpoint(_ endpoint: WebhookEndpoint) async throws -> Bool {
        let previous = endpoint.previousSecret.map { Data($0.bytes) }
        return try await run {
            !(try await rows(
                """
                UPDATE webhook_endpoints SET enabled = \(endpoint.isEnabled), secret = \(Data(endpoint.secret.bytes)),
                    previous_secret = \(previous), previous_secret_until = \(endpoint.previousSecretUntil)
                WHERE id = \(endpoint.id) AND app_id = \(endpoint.appID) RETURNING id
                """
            ).isEmpty)
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

    public func claimWebhookDeliveries(dueBy now: Date, lease: Duration, limit: Int, perEndpoint: Int) async throws
        -> [WebhookDeliveryTask]
    {
        let leased = now.addingTimeInterval(Double(lease.components.seconds))
        return try await transaction { connection in
            // Each endpoint's oldest due first (its own index), in turns across endpoints; an endpoint holds at most
            // `perEndpoint` deliveries in flight (leased and not yet recorded), and a paused one none. The endpoint
            // rows are locked, so that two servers' claims do not both fill one endpoint's places; a row another
            // claim leased meanwhile is no longer due, and the update's own condition skips it.
            let claimed = try await self.rows(
                """
                UPDATE webhook_deliveries SET next_attempt_at = \(leased), leased_until = \(leased)
                WHERE (event_id, endpoint_id) IN (
                    SELECT x.event_id, x.endpoint_id FROM webhook_endpoints w
                    JOIN apps a ON a.id = w.app_id JOIN accounts c ON c.id = a.account_id
                    CROSS JOIN LATERAL (
                        SELECT d.event_id, d.endpoint_id, d.next_attempt_at,
                            row_number() OVER (ORDER BY d.next_attempt_at) AS turn
                        FROM webhook_deliveries d
                        WHERE d.endpoint_id = w.id AND d.state = 'pending' AND d.next_attempt_at <= \(now)
                        ORDER BY d.next_attempt_at LIMIT \(perEndpoint)) x
                    WHERE a.enabled AND c.enabled AND w.enabled AND (w.paused_until IS NULL OR w.paused_until <= \(now))
                        AND x.turn <= \(perEndpoint) - (
                            SELECT count(*) FROM webhook_deliveries f
                            WHERE f.endpoint_id = w.id AND f.state = 'pending' AND f.leased_until > \(now))
                    ORDER BY x.turn, x.next_attempt_at LIMIT \(limit) FOR UPDATE OF w SKIP LOCKED)
                    AND state = 'pending' AND next_attempt_at <= \(now)
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

    public func recordWebhookDeliveries(
        _ attempts: [WebhookAttempt], at date: Date, breaker: WebhookCircuitBreaker
    ) async throws {
        guard !attempts.isEmpty else { return }
        try await transaction { connection in
            for (task, outcome) in attempts {
                let columns = StoredForm.deliveryColumns(outcome, at: date)
                let recorded = try await self.rows(
                    """
                    UPDATE webhook_deliveries SET state = \(columns.state), attempts = attempts + 1,
                        next_attempt_at = \(columns.next), last_status = \(columns.status),
                        last_error = \(columns.error), delivered_at = \(columns.delivered), leased_until = NULL,
                        last_latency_ms = \(task.latencyMilliseconds)
                    WHERE event_id = \(task.event.id) AND endpoint_id = \(task.endpointID) AND state = 'pending'
                    RETURNING event_id
                    """, on: connection)
                guard !recorded.isEmpty else { continue }
                try await self.recordEndpointRun(
                    task.endpointID, delivered: columns.state == "delivered", at: date, breaker: breaker,
                    on: connection)
            }
        }
    }

    /// Ends or lengthens the endpoint's run of failures; past the breaker's threshold, pauses it and moves its due
    /// deliveries (those not in flight) to the end of the pause.
    private func recordEndpointRun(
        _ endpointID: UUID, delivered: Bool, at date: Date, breaker: WebhookCircuitBreaker,
        on connection: PostgresConnection
    ) async throws {
        guard !delivered else {
            try await rows(
                "UPDATE webhook_endpoints SET consecutive_failures = 0, paused_until = NULL WHERE id = \(endpointID)",
                on: connection)
            return
        }
        let failures =
            try await rows(
                """
                UPDATE webhook_endpoints SET consecutive_failures = consecutive_failures + 1 WHERE id = \(endpointID)
                RETURNING consecutive_failures
                """, on: connection
            ).first.map { try $0.int("consecutive_failures") } ?? 0
        guard let until = breaker.pauseEnd(afterFailures: failures, from: date) else { return }
        try await rows(
            "UPDATE webhook_endpoints SET paused_until = \(until) WHERE id = \(endpointID)", on: connection)
        try await rows(
            """
            UPDATE webhook_deliveries SET next_attempt_at = \(until)
            WHERE endpoint_id = \(endpointID) AND state = 'pending' AND next_attempt_at < \(until)
                AND (leased_until IS NULL OR leased_until <= \(date))
            """, on: connection)
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
                UPDATE webhook_deliveries SET state = 'pending', next_attempt_at = \(date), delivered_at = NULL,
                    attempts = 0, started_at = \(date)
                WHERE state = ANY(\(states)::text[]) AND (leased_until IS NULL OR leased_until <= \(date))
                    AND event_id IN (
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
