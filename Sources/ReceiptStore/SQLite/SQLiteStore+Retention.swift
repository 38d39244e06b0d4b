import Foundation
import ReceiptService
import SQLiteNIO

/// The retention's purge (``RetentionStore``): one short transaction per batch, by the rows' keys, over rows old
/// enough that no request touches them.
extension SQLiteStore: RetentionStore {
    public func purge(_ kind: PurgeKind, before: Date, limit: Int) async throws -> Int {
        let statement: String
        switch kind {
        case .sessions:
            statement = """
                DELETE FROM account_sessions WHERE id IN (
                    SELECT id FROM account_sessions WHERE expires_at < ? LIMIT ?)
                RETURNING 1
                """
        case .signInLinks:
            statement = """
                DELETE FROM sign_in_links WHERE token_hash IN (
                    SELECT token_hash FROM sign_in_links WHERE expires_at < ? LIMIT ?)
                RETURNING 1
                """
        case .notifications:
            statement = """
                DELETE FROM notifications WHERE (app_id, notification_uuid) IN (
                    SELECT app_id, notification_uuid FROM notifications WHERE received_at < ? LIMIT ?)
                RETURNING 1
                """
        case .googleNotifications:
            statement = """
                DELETE FROM google_notifications WHERE (app_id, message_id) IN (
                    SELECT app_id, message_id FROM google_notifications WHERE received_at < ? LIMIT ?)
                RETURNING 1
                """
        case .events:
            statement = """
                DELETE FROM webhook_events WHERE id IN (
                    SELECT e.id FROM webhook_events e WHERE e.created_at < ?
                        AND NOT EXISTS (
                            SELECT 1 FROM webhook_deliveries d WHERE d.event_id = e.id AND d.state = 'pending')
                    LIMIT ?)
                RETURNING 1
                """
        case .audit:
            statement = """
                DELETE FROM audit_log WHERE id IN (SELECT id FROM audit_log WHERE at < ? LIMIT ?)
                RETURNING 1
                """
        case .renewalExtensions:
            statement = """
                DELETE FROM renewal_extensions WHERE (app_id, request_identifier) IN (
                    SELECT app_id, request_identifier FROM renewal_extensions
                    WHERE updated_at < ? AND state NOT IN ('sending', 'requested') LIMIT ?)
                RETURNING 1
                """
        }
        return try await transaction {
            try await self.query(statement, [.millis(before), .integer(limit)]).count
        }
    }
}

/// Each app's reconciliation lease and cursor (``ReconciliationStore``).
extension SQLiteStore: ReconciliationStore {
    public func claimReconciliation(appID: UUID, now: Date, until: Date) async throws -> ReconciliationState? {
        try await transaction {
            try await self.query(
                """
                INSERT INTO reconciliations (app_id, leased_until) VALUES (?, ?)
                ON CONFLICT (app_id) DO UPDATE SET leased_until = excluded.leased_until
                    WHERE reconciliations.leased_until IS NULL OR reconciliations.leased_until <= ?
                RETURNING cursor, finished_at
                """, [.uuid(appID), .millis(until), .millis(now)]
            ).first.map {
                ReconciliationState(
                    cursor: try $0.optionalText("cursor"), finishedAt: try $0.optionalDate("finished_at"))
            }
        }
    }

    public func saveReconciliation(appID: UUID, cursor: String?, now: Date, leaseUntil: Date?) async throws {
        _ = try await transaction {
            try await self.query(
                """
                UPDATE reconciliations SET cursor = ?, leased_until = ?, finished_at = COALESCE(?, finished_at)
                WHERE app_id = ?
                """,
                [
                    cursor.map { .text($0) } ?? .null, .millis(leaseUntil), .millis(cursor == nil ? now : nil),
                    .uuid(appID),
                ])
        }
    }
}
