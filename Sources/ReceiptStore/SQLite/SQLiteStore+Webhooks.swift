import Foundation
import ReceiptCore
import ReceiptService
import SQLiteNIO

/// Webhook endpoints and the outbox of their events (``WebhookStore``); the connection is the only writer, so a claim
/// and its lease are one statement.
extension SQLiteStore: WebhookStore {
    public func addWebhookEndpoint(_ endpoint: WebhookEndpoint, limit: Int) async throws -> Bool {
        try await transaction {
            let held = try await self.count(
                "SELECT count(*) AS n FROM webhook_endpoints WHERE app_id = ?", [.uuid(endpoint.appID)])
            guard held < limit else { return false }
            _ = try await self.query(
                """
                INSERT INTO webhook_endpoints (id, app_id, url, environments, event_types, forwards_signed_payload,
                    secret, created_at)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                """,
                [
                    .uuid(endpoint.id), .uuid(endpoint.appID), .text(endpoint.url),
                    .text(endpoint.environments.map(\.rawValue).sorted().joined(separator: ",")),
                    .text(endpoint.eventTypes.joined(separator: ",")), .bool(endpoint.forwardsSignedPayload),
                    .bytes(endpoint.secret.bytes), .millis(endpoint.createdAt),
                ])
            return true
        }
    }

    public func webhookEndpoints(appID: UUID) async throws -> [WebhookEndpoint] {
        try await run {
            try await self.query(
                "SELECT * FROM webhook_endpoints WHERE app_id = ? ORDER BY created_at, id", [.uuid(appID)]
            ).map(StoredForm.webhookEndpoint)
        }
    }

    public func updateWebhookEndpoint(_ endpoint: WebhookEndpoint) async throws -> Bool {
        try await transaction {
            !(try await self.query(
                """
                UPDATE webhook_endpoints SET enabled = ?, secret = ?, previous_secret = ?, previous_secret_until = ?
                WHERE id = ? AND app_id = ? RETURNING id
                """,
                [
                    .bool(endpoint.isEnabled), .bytes(endpoint.secret.bytes), .bytes(endpoint.previousSecret?.bytes),
                    .millis(endpoint.previousSecretUntil), .uuid(endpoint.id), .uuid(endpoint.appID),
                ]
            ).isEmpty)
        }
    }

    public func removeWebhookEndpoint(id: UUID, appID: UUID) async throws -> Bool {
        try await transaction {
            !(try await self.query(
                "DELETE FROM webhook_endpoints WHERE id = ? AND app_id = ? RETURNING id", [.uuid(id), .uuid(appID)]
            ).isEmpty)
        }
    }

    public func recordEvents(_ events: [WebhookEvent]) async throws {
        try await transaction { try await self.insertEvents(events) }
    }

    public func claimWebhookDeliveries(dueBy now: Date, lease: Duration, limit: Int, perEndpoint: Int) async throws
        -> [WebhookDeliveryTask]
    {
        let leased = now.addingTimeInterval(Double(lease.components.seconds))
        return try await transaction {
            // Each endpoint's oldest due first (its own index), in turns across endpoints; an endpoint holds at most
            // `perEndpoint` deliveries in flight (leased and not yet recorded: a small index of their own), and a
            // paused one none. The first turn of every endpoint comes before any second turn, so when more than
            // `limit` endpoints have due deliveries, the claim is the first turn of the `limit` whose oldest is the
            // oldest: one statement picks them (an index probe per endpoint), and only those are read, never a
            // statement per endpoint with due work, nor a scan of the whole backlog (with thousands of endpoints
            // failing, a statement each held the write lock for seconds).
            let endpoints = try await self.query(
                """
                SELECT id, flying FROM (
                    SELECT w.id AS id,
                        (SELECT min(d.next_attempt_at) FROM webhook_deliveries d
                            WHERE d.endpoint_id = w.id AND d.state = 'pending') AS oldest,
                        (SELECT count(*) FROM webhook_deliveries f
                            WHERE f.endpoint_id = w.id AND f.leased_until IS NOT NULL AND f.leased_until > ?
                                AND f.state = 'pending') AS flying
                    FROM webhook_endpoints w JOIN apps a ON a.id = w.app_id
                    JOIN accounts c ON c.id = a.account_id
                    WHERE a.enabled AND c.enabled AND w.enabled AND (w.paused_until IS NULL OR w.paused_until <= ?))
                WHERE oldest <= ? AND flying < ?
                ORDER BY oldest LIMIT ?
                """, [.millis(now), .millis(now), .millis(now), .integer(perEndpoint), .integer(limit)])
            var turns: [(turn: Int, due: Date, event: SQLiteData, endpoint: SQLiteData)] = []
            for endpoint in endpoints {
                let id = try endpoint.require("id")
                let flying = try endpoint.int("flying")
                let due = try await self.query(
                    """
                    SELECT event_id, endpoint_id, next_attempt_at FROM webhook_deliveries
                    WHERE endpoint_id = ? AND state = 'pending' AND next_attempt_at <= ?
                    ORDER BY next_attempt_at LIMIT ?
                    """, [id, .millis(now), .integer(perEndpoint - flying)])
                for (turn, row) in due.enumerated() {
                    turns.append(
                        (
                            turn, try row.date("next_attempt_at"), try row.require("event_id"),
                            try row.require("endpoint_id")
                        ))
                }
            }
            turns.sort { ($0.turn, $0.due) < ($1.turn, $1.due) }
            var claimed: [(event: SQLiteData, endpoint: SQLiteData)] = []
            for chosen in turns.prefix(limit) {
                let leasedRows = try await self.query(
                    """
                    UPDATE webhook_deliveries SET next_attempt_at = ?, leased_until = ?
                    WHERE event_id = ? AND endpoint_id = ? AND state = 'pending' RETURNING event_id
                    """, [.millis(leased), .millis(leased), chosen.event, chosen.endpoint])
                if !leasedRows.isEmpty { claimed.append((chosen.event, chosen.endpoint)) }
            }
            var tasks: [WebhookDeliveryTask] = []
            for row in claimed {
                tasks += try await self.query(
                    "\(StoredForm.deliverySelect) WHERE d.event_id = ? AND d.endpoint_id = ?",
                    [row.event, row.endpoint]
                ).map(StoredForm.webhookDeliveryTask)
            }
            return tasks
        }
    }

    public func recordWebhookDeliveries(
        _ attempts: [WebhookAttempt], at date: Date, breaker: WebhookCircuitBreaker
    ) async throws {
        guard !attempts.isEmpty else { return }
        try await transaction {
            for (task, outcome) in attempts {
                let columns = StoredForm.deliveryColumns(outcome, at: date)
                let recorded = try await self.query(
                    """
                    UPDATE webhook_deliveries SET state = ?, attempts = attempts + 1, next_attempt_at = ?,
                        last_status = ?, last_error = ?, delivered_at = ?, leased_until = NULL, last_latency_ms = ?
                    WHERE event_id = ? AND endpoint_id = ? AND state = 'pending'
                    RETURNING event_id
                    """,
                    [
                        .text(columns.state), .millis(columns.next), columns.status.map { .integer($0) } ?? .null,
                        columns.error.map { .text($0) } ?? .null, .millis(columns.delivered),
                        task.latencyMilliseconds.map { .integer($0) } ?? .null, .uuid(task.event.id),
                        .uuid(task.endpointID),
                    ])
                guard !recorded.isEmpty else { continue }
                try await self.recordEndpointRun(
                    task.endpointID, delivered: columns.state == "delivered", at: date,
                    breaker: breaker)
            }
        }
    }

    /// Ends or lengthens the endpoint's run of failures; past the breaker's threshold, pauses it and moves its due
    /// deliveries (those not in flight) to the end of the pause.
    private func recordEndpointRun(_ endpointID: UUID, delivered: Bool, at date: Date, breaker: WebhookCircuitBreaker)
        async throws
    {
        guard !delivered else {
            _ = try await query(
                "UPDATE webhook_endpoints SET consecutive_failures = 0, paused_until = NULL WHERE id = ?",
                [.uuid(endpointID)])
            return
        }
        let failures =
            try await query(
                """
                UPDATE webhook_endpoints SET consecutive_failures = consecutive_failures + 1 WHERE id = ?
                RETURNING consecutive_failures
                """, [.uuid(endpointID)]
            ).first.map { try $0.int("consecutive_failures") } ?? 0
        guard let until = breaker.pauseEnd(afterFailures: failures, from: date) else { return }
        _ = try await query(
            "UPDATE webhook_endpoints SET paused_until = ? WHERE id = ?", [.millis(until), .uuid(endpointID)])
        _ = try await query(
            """
            UPDATE webhook_deliveries SET next_attempt_at = ?
            WHERE endpoint_id = ? AND state = 'pending' AND next_attempt_at < ?
                AND (leased_until IS NULL OR leased_until <= ?)
            """, [.millis(until), .uuid(endpointID), .millis(until), .millis(date)])
    }

    public func webhookEvents(_ query: WebhookEventQuery) async throws -> [WebhookEventRecord] {
        let (conditions, binds) = Self.eventConditions(query)
        return try await run {
            let events = try await self.query(
                """
                SELECT * FROM webhook_events e WHERE \(conditions)
                ORDER BY e.created_at DESC, e.id LIMIT ?
                """, binds + [.integer(query.limit)]
            ).map(StoredForm.webhookEvent)
            var records: [WebhookEventRecord] = []
            for event in events {
                let deliveries = try await self.query(
                    "SELECT * FROM webhook_deliveries WHERE event_id = ? ORDER BY endpoint_id", [.uuid(event.id)]
                ).map(StoredForm.webhookDelivery)
                records.append(WebhookEventRecord(event: event, deliveries: deliveries))
            }
            return records
        }
    }

    public func redeliverWebhookEvents(_ query: WebhookEventQuery, at date: Date) async throws -> Int {
        let (conditions, binds) = Self.eventConditions(query)
        let states = query.state.map { [$0.rawValue] } ?? ["pending", "dead"]
        return try await transaction {
            try await self.query(
                """
                UPDATE webhook_deliveries SET state = 'pending', next_attempt_at = ?, delivered_at = NULL,
                    attempts = 0, started_at = ?
                WHERE state IN (\(Self.placeholders(states.count))) AND (leased_until IS NULL OR leased_until <= ?)
                    AND event_id IN (
                        SELECT e.id FROM webhook_events e WHERE \(conditions) ORDER BY e.created_at DESC LIMIT ?)
                RETURNING event_id
                """,
                [.millis(date), .millis(date)] + states.map { .text($0) } + [.millis(date)] + binds
                    + [.integer(query.limit)]
            ).count
        }
    }

    public func webhookBacklog() async throws -> (pending: Int, oldest: Date?) {
        try await run {
            let row = try await self.query(
                """
                SELECT count(*) AS pending, min(e.created_at) AS oldest FROM webhook_deliveries d
                JOIN webhook_events e ON e.id = d.event_id WHERE d.state = 'pending'
                """
            ).first
            return (try row?.int("pending") ?? 0, try row?.optionalDate("oldest"))
        }
    }

    /// The conditions of an event query over `webhook_events e`, with their binds.
    private static func eventConditions(_ query: WebhookEventQuery) -> (String, [SQLiteData]) {
        var conditions = ["e.app_id = ?"]
        var binds: [SQLiteData] = [.uuid(query.appID)]
        if let since = query.since {
            conditions.append("e.created_at >= ?")
            binds.append(.millis(since))
        }
        if let ids = query.eventIDs {
            conditions.append("e.id IN (\(placeholders(max(1, ids.count))))")
            binds += ids.isEmpty ? [.null] : ids.map { .uuid($0) }
        }
        if let state = query.state {
            conditions.append("EXISTS (SELECT 1 FROM webhook_deliveries s WHERE s.event_id = e.id AND s.state = ?)")
            binds.append(.text(state.rawValue))
        }
        return (conditions.joined(separator: " AND "), binds)
    }
}
