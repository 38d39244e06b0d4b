import Foundation
import ReceiptCore

/// Google Play's Real-time Developer Notifications as received (docs/google-play.md, "Real-time Developer
/// Notifications"): each Pub/Sub message recorded once per app by its `messageId`, with its `notification` event.
///
/// A message's effects are the ledger's own recordings of what Google's API says (each idempotent), made before the
/// message is recorded: a message whose recording failed is pushed again by Pub/Sub and its effects made again,
/// changing nothing twice; one recorded is answered as a duplicate.
public protocol GoogleNotificationStore: StoreLifecycle {
    /// Whether the app recorded the message.
    func isGoogleNotificationRecorded(appID: UUID, messageID: String) async throws -> Bool
    /// Records the message with its events (and their deliveries) in one transaction; false, writing nothing, when the
    /// app recorded it before.
    func recordGoogleNotification(_ notification: GoogleNotificationRecord, events: [WebhookEvent]) async throws
        -> Bool
}

/// One Real-time Developer Notification, as recorded.
public struct GoogleNotificationRecord: Sendable, Equatable {
    /// The app.
    public var appID: UUID
    /// Pub/Sub's `messageId`.
    public var messageID: String
    /// The package it is about.
    public var packageName: String
    /// Its kind and type (``GoogleDeveloperNotification/typeName``).
    public var type: String
    /// The purchase it is about (none for a test).
    public var purchaseToken: String?
    /// The purchase's environment (Production when none was read).
    public var environment: StoreEnvironment
    /// When Google says it happened (`eventTimeMillis`).
    public var eventTime: Date
    /// When it arrived.
    public var receivedAt: Date

    /// Creates a record.
    public init(
        appID: UUID, messageID: String, packageName: String, type: String, purchaseToken: String?,
        environment: StoreEnvironment, eventTime: Date, receivedAt: Date
    ) {
        self.environment = environment
        self.appID = appID
        self.messageID = messageID
        self.packageName = packageName
        self.type = type
        self.purchaseToken = purchaseToken
        self.eventTime = eventTime.roundedToMilliseconds
        self.receivedAt = receivedAt.roundedToMilliseconds
    }
}
