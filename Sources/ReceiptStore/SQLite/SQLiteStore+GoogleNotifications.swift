import Foundation
import ReceiptCore
import ReceiptService
import SQLiteNIO

/// Google Play's Real-time Developer Notifications (``GoogleNotificationStore``): a message and its events in one
/// transaction, the message once per app.
extension SQLiteStore: GoogleNotificationStore {
    public func isGoogleNotificationRecorded(appID: UUID, messageID: String) async throws -> Bool {
        try await run {
            !(try await self.query(
                "SELECT 1 FROM google_notifications WHERE app_id = ? AND message_id = ?",
                [.uuid(appID), .text(messageID)]
            ).isEmpty)
        }
    }

    public func recordGoogleNotification(_ notification: GoogleNotificationRecord, events: [WebhookEvent])
        async throws -> Bool
    {
        try await transaction {
            let inserted = try await self.query(
                """
                INSERT INTO google_notifications (app_id, message_id, package_name, notification_type, purchase_token,
                    environment, event_time, received_at)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT DO NOTHING RETURNING 1
                """,
                [
                    .uuid(notification.appID), .text(notification.messageID), .text(notification.packageName),
                    .text(notification.type), notification.purchaseToken.map { .text($0) } ?? .null,
                    .text(notification.environment.rawValue), .millis(notification.eventTime),
                    .millis(notification.receivedAt),
                ])
            guard !inserted.isEmpty else { return false }
            try await self.insertEvents(events)
            return true
        }
    }
}
