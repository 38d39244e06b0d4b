import Foundation

/// What is deleted once it is old enough (docs/operations.md, "Retention"), in small batches: each batch a short
/// transaction over rows no request touches any more, so the API never waits on a purge.
public protocol RetentionStore: StoreLifecycle {
    /// Deletes up to `limit` rows of `kind` older than `before`; returns how many.
    func purge(_ kind: PurgeKind, before: Date, limit: Int) async throws -> Int
}

/// A kind of row the retention deletes.
public enum PurgeKind: String, Sendable, CaseIterable {
    /// Browser sessions that expired before the date.
    case sessions
    /// Sign-in links that expired before the date (used or not).
    case signInLinks = "sign_in_links"
    /// Apple's notifications received before the date (their effects on the ledger and statuses stay).
    case notifications
    /// Google Play's Real-time Developer Notifications received before the date (kept as long as Apple's: Pub/Sub
    /// retries a message for seven days at most, and one deleted sooner could be taken in again).
    case googleNotifications = "google_notifications"
    /// Webhook events made before the date whose deliveries are all delivered or dead (with those deliveries).
    case events
    /// Audit entries made before the date.
    case audit
    /// Renewal-date extensions Apple answered (all but those being sent or polled) last changed before the date: kept
    /// as long as the audit entries that name them.
    case renewalExtensions = "renewal_extensions"
}

/// How long each kind is kept; nil keeps it for ever.
public struct RetentionPolicy: Sendable, Equatable {
    /// Notifications, Apple's and Google's (default 90 days; at least 8, past Apple's retries and the reconciliation's
    /// window, and Pub/Sub's seven days).
    public var notifications: Duration?
    /// Delivered and dead webhook events (default 30 days).
    public var events: Duration?
    /// Audit entries (default two years: kept longest).
    public var audit: Duration?
    /// Expired sessions and sign-in links (a day after they expire).
    public var expiredSessions: Duration

    /// The shortest notification retention: Apple retries a notification for about six days, and the reconciliation
    /// looks seven days back; a notification deleted sooner could be taken in again.
    public static let shortestNotificationRetention = Duration.seconds(8 * 86_400)

    /// Creates a policy.
    public init(
        notifications: Duration? = .seconds(90 * 86_400), events: Duration? = .seconds(30 * 86_400),
        audit: Duration? = .seconds(730 * 86_400), expiredSessions: Duration = .seconds(86_400)
    ) {
        self.notifications = notifications
        self.events = events
        self.audit = audit
        self.expiredSessions = expiredSessions
    }

    /// How long rows of `kind` are kept.
    public func keep(_ kind: PurgeKind) -> Duration? {
        switch kind {
        case .sessions, .signInLinks: expiredSessions
        case .notifications, .googleNotifications: notifications
        case .events: events
        case .audit, .renewalExtensions: audit
        }
    }
}
