import Foundation
import PostgresNIO
import ReceiptService

/// The retention's purge (``RetentionStore``): one short statement per batch, by the rows' keys, over rows old enough
/// that no request touches them.
extension PostgresStore: RetentionStore {
    public func purge(_ kind: PurgeKind, before: Date, limit: Int) async throws -> Int {
        try await run {
            let deleted: [PostgresRandomAccessRow]
            switch kind {
            case .sessions:
                deleted = try await rows(
                    """
                    DELETE FROM account_sessions WHERE id IN (
                        SELECT id FROM account_sessions WHERE expires_at < \(before) LIMIT \(limit))
                    RETURNING 1
                    """)
            case .signInLinks:
                deleted = try await rows(
                    """
                    DELETE FROM sign_in_links WHERE token_hash IN (
                        SELECT token_hash FROM sign_in_links WHERE expires_at < \(before) LIMIT \(limit))
                    RETURNING 1
                    """)
            case .notifications:
                deleted = try await rows(
                    """
                    DELETE FROM notifications WHERE (app_id, notification_uuid) IN (
                        SELECT app_id, notification_uuid FROM notifications WHERE received_at < \(before)
                        LIMIT \(limit))
                    RETURNING 1
                    """)
            case .googleNotifications:
                deleted = try await rows(
                    """
                    DELETE FROM google_notifications WHERE (app_id, message_id) IN (
                        SELECT app_id, message_id FROM google_notifications WHERE received_at < \(before)
                        LIMIT \(limit))
                    RETURNING 1
                    """)
            case .events:
                deleted = try await rows(
                    """
                    DELETE FROM webhook_events WHERE id IN (
                        SELECT e.id FROM webhook_events e WHERE e.created_at < \(before)
                            AND NOT EXISTS (
                                SELECT 1 FROM webhook_deliveries d WHERE d.event_id = e.id AND d.state = 'pending')
                        LIMIT \(limit))
                    RETURNING 1
                    """)
            case .audit:
                deleted = try await rows(
                    """
                    DELETE FROM audit_log WHERE id IN (SELECT id FROM audit_log WHERE at < \(before) LIMIT \(limit))
                    RETURNING 1
                    """)
            case .renewalExtensions:
                deleted = try await rows(
                    """
                    DELETE FROM renewal_extensions WHERE (app_id, request_identifier) IN (
                        SELECT app_id, request_identifier FROM renewal_extensions
                        WHERE updated_at < \(before) AND state NOT IN ('sending', 'requested') LIMIT \(limit))
                    RETURNING 1
                    """)
            }
            return deleted.count
        }
    }
}

/// Each app's reconciliation lease and cursor (``ReconciliationStore``): a claim takes a lease that is free or has
/// run out, in one statement, so that two servers never reconcile an app at once.
extension PostgresStore: ReconciliationStore {
    public func claimReconciliation(appID: UUID, now: Date, until: Date) async throws -> ReconciliationState? {
        try await run {
            try await rows(
                """
                INSERT INTO reconciliations (app_id, leased_until) VALUES (\(appID), \(until))
                ON CONFLICT (app_id) DO UPDATE SET leased_until = EXCLUDED.leased_until
                    WHERE reconciliations.leased_until IS NULL OR reconciliations.leased_until <= \(now)
                RETURNING cursor, finished_at
                """
            ).first.map {
                ReconciliationState(
                    cursor: try $0.optionalText("cursor"), finishedAt: try $0.optionalDate("finished_at"))
            }
        }
    }

    public func saveReconciliation(appID: UUID, cursor: String?, now: Date, leaseUntil: Date?) async throws {
        let finished: Date? = cursor == nil ? now : nil
        try await run {
            try await rows(
                """
                UPDATE reconciliations SET cursor = \(cursor), leased_until = \(leaseUntil),
                    finished_at = COALESCE(\(finished), finished_at)
                WHERE app_id = \(appID)
                """)
        }
    }
}
