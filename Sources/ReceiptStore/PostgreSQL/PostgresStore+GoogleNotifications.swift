import Foundation
import PostgresNIO
import ReceiptCore
import ReceiptService

/// Google Play's Real-time Developer Notifications (``GoogleNotificationStore``): a message and its events in one
/// transaction, the message once per app (the primary key decides between servers).
extension PostgresStore: GoogleNotificationStore {
    public func isGoogleNotificationRecorded(appID: UUID, messageID: String) async throws -> Bool {
        try await run {
            !(try await rows(
                "SELECT 1 FROM google_notifications WHERE app_id = \(appID) AND message_id = \(messageID)"
            ).isEmpty)
        }
    }

    public func recordGoogleNotification(_ notification: GoogleNotificationRecord, events: [WebhookEvent])
        async throws -> Bool
    {
        try await transaction { connection in
            let inserted = try await self.rows(
                """
                INSERT INTO google_notifications (app_id, message_id, package_name, notification_type, purchase_token,
                    environment, event_time, received_at)
                VALUES (\(notification.appID), \(notification.messageID), \(notification.packageName),
                    \(notification.type), \(notification.purchaseToken), \(notification.environment.rawValue),
                    \(notification.eventTime.millisecondsSince1970), \(notification.receivedAt))
                ON CONFLICT DO NOTHING RETURNING 1
                """, on: connection)
            guard !inserted.isEmpty else { return false }
            try await self.insertEvents(events, on: connection)
            return true
        }
    }
}
