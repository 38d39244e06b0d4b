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
        }
        return try await transaction {
            try await self.query(statement, [.millis(before), .integer(limit)]).count
        }
    }
}
