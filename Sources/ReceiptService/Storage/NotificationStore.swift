import Foundation
import ReceiptCore

/// App Store Server Notifications and the subscription statuses they keep (docs/notifications.md).
///
/// Every method is atomic. A notification is recorded once by its UUID, whatever the number of servers receiving
/// its retries at once; its effects on the ledger and on its subscription's status, and its events with their
/// deliveries (``WebhookStore``), are written by the same transaction, so a notification answered 2xx is never
/// without them. Statuses are ordered by signed date: a statement signed before the stored one changes nothing.
public protocol NotificationStore: StoreLifecycle {
    /// Records a notification and its effects; ``NotificationRecorded/duplicate`` when its UUID is known.
    func recordNotification(_ record: NotificationRecord) async throws -> NotificationRecorded
    /// The stored statuses of these original transactions of the app (in any environment).
    func subscriptionStatuses(appID: UUID, originalTransactionIDs: [String]) async throws -> [SubscriptionStatus]
    /// Moves up to `limit` subscriptions whose expiry (grace period included) passed before `now` with no newer
    /// statement to `expired`, with their events; returns how many moved.
    func expireSubscriptions(dueBy now: Date, limit: Int) async throws -> Int
    /// The app's latest `limit` recorded notifications, Apple's and Google Play's, newest received first.
    func recentNotifications(appID: UUID, limit: Int) async throws -> [ReceivedNotification]
    /// The UUIDs among `uuids` already recorded for the app (reconciliation skips them).
    func knownNotifications(appID: UUID, uuids: [String]) async throws -> Set<String>
    /// A value that moves whenever a subscription status is written, by any process or server (as
    /// ``LedgerStore/ledgerChangeMarker()`` does for the ledger, which status writes leave alone); nil when the store
    /// cannot tell (nothing is then reused).
    func statusChangeMarker() -> Int?
    /// A value that moves whenever a customer's facts may have changed, once the change is committed, in this process
    /// or another: whenever ``LedgerStore/ledgerChangeMarker()`` or ``statusChangeMarker()`` moves, and whenever a
    /// recording inserts ledger rows or records for a user (a new purchase, a first claim). Taken without a round
    /// trip; nil while changes cannot be observed (nothing read about customers may then be reused).
    func customerChangeMarker() -> Int?
}

/// The customers' webhook endpoints and the outbox of events to deliver to them (docs/webhooks.md).
///
/// An event is written with one delivery per endpoint that takes it, in the transaction that makes the event. Several
/// servers on one database share the deliveries: a claim leases the due ones it returns (their next attempt moves past
/// the lease), and PostgreSQL skips rows another claim holds, so each attempt is made by one server.
public protocol WebhookStore: StoreLifecycle {
    /// Adds an endpoint unless its app has `limit` endpoints already (false then); adds under one app count one after
    /// another, on every server.
    func addWebhookEndpoint(_ endpoint: WebhookEndpoint, limit: Int) async throws -> Bool
    /// The app's endpoints, oldest first.
    func webhookEndpoints(appID: UUID) async throws -> [WebhookEndpoint]
    /// Stores an endpoint's switch and secrets (enabled, secret, previous secret and its end); false when the app has
    /// no such endpoint.
    func updateWebhookEndpoint(_ endpoint: WebhookEndpoint) async throws -> Bool
    /// Removes an endpoint of the app with its pending deliveries; false when the app has no such endpoint.
    func removeWebhookEndpoint(id: UUID, appID: UUID) async throws -> Bool
    /// Records events made outside a notification (a test, a ledger change), each with its deliveries.
    func recordEvents(_ events: [WebhookEvent]) async throws
    /// Up to `limit` pending deliveries due by `now`, each leased until `now + lease`: taken in turns across endpoints
    /// (each endpoint's oldest due first), at most `perEndpoint` in flight per endpoint (those leased by any server
    /// count), none of a paused endpoint (``WebhookCircuitBreaker``) or of a disabled app or account.
    func claimWebhookDeliveries(dueBy now: Date, lease: Duration, limit: Int, perEndpoint: Int) async throws
        -> [WebhookDeliveryTask]
    /// Records attempts' outcomes, in one transaction (one commit: on SQLite every commit makes the server's cached
    /// reads look again), and each endpoint's run of failures: a delivery clears it, a failure lengthens it, and past
    /// the breaker's threshold the endpoint is paused and its due deliveries wait for the end of the pause.
    func recordWebhookDeliveries(_ attempts: [WebhookAttempt], at date: Date, breaker: WebhookCircuitBreaker)
        async throws
    /// The app's events with their deliveries, newest first.
    func webhookEvents(_ query: WebhookEventQuery) async throws -> [WebhookEventRecord]
    /// Makes the deliveries of the query's events (those in the query's state, if it names one; else those not
    /// delivered) pending and due at `date`, with a fresh budget of attempts and time (counted from `date`); a
    /// delivery in flight (leased) is left to its attempt, never sent twice. Returns how many.
    func redeliverWebhookEvents(_ query: WebhookEventQuery, at date: Date) async throws -> Int
    /// The pending deliveries: how many, and when the oldest event among them was made.
    func webhookBacklog() async throws -> (pending: Int, oldest: Date?)
}

/// An attempt at a delivery, and its outcome.
public typealias WebhookAttempt = (task: WebhookDeliveryTask, outcome: WebhookDeliveryOutcome)

extension WebhookStore {
    /// Records one attempt's outcome.
    public func recordWebhookDelivery(_ task: WebhookDeliveryTask, outcome: WebhookDeliveryOutcome, at date: Date)
        async throws
    {
        try await recordWebhookDeliveries([(task, outcome)], at: date, breaker: WebhookCircuitBreaker())
    }

    /// ``claimWebhookDeliveries(dueBy:lease:limit:perEndpoint:)`` with the deliverer's cap per endpoint.
    public func claimWebhookDeliveries(dueBy now: Date, lease: Duration, limit: Int) async throws
        -> [WebhookDeliveryTask]
    {
        try await claimWebhookDeliveries(
            dueBy: now, lease: lease, limit: limit, perEndpoint: WebhookCircuitBreaker.inFlightPerEndpoint)
    }
}

extension WebhookStore {
    /// Adds an endpoint, whatever the app has.
    public func addWebhookEndpoint(_ endpoint: WebhookEndpoint) async throws {
        _ = try await addWebhookEndpoint(endpoint, limit: .max)
    }
}

/// A notification as recorded: what the customer sees of the ones that arrived (`notifications list`, the account
/// screen).
public struct ReceivedNotification: Sendable, Equatable {
    /// Apple's `notificationUUID`.
    public var uuid: String
    /// `notificationType` and `subtype`.
    public var type: String
    public var subtype: String?
    /// Where it was signed for.
    public var environment: StoreEnvironment
    /// When Apple signed it.
    public var signedDate: Date
    /// When it was recorded here.
    public var receivedAt: Date
    /// `apple` (Apple sent it), `history` (recovered from Apple's Notification History) or `google` (a Google Play
    /// Real-time Developer Notification: its uuid is Pub/Sub's message id, its signed date Google's event time).
    public var source: String

    /// Creates one.
    public init(
        uuid: String, type: String, subtype: String?, environment: StoreEnvironment, signedDate: Date,
        receivedAt: Date, source: String
    ) {
        self.uuid = uuid
        self.type = type
        self.subtype = subtype
        self.environment = environment
        self.signedDate = signedDate
        self.receivedAt = receivedAt
        self.source = source
    }

    /// As `notifications list --json` shows it.
    public var json: JSONObject {
        var object = JSONObject(capacity: 7)
        object.append("notification_uuid", .string(uuid))
        object.append("notification_type", .string(type))
        object.append("subtype", subtype.map { .string($0) } ?? .null)
        object.append("environment", .string(environment.rawValue))
        object.append("signed_date", .string(LedgerEntry.rfc3339(signedDate)))
        object.append("received_at", .string(LedgerEntry.rfc3339(receivedAt)))
        object.append("source", .string(source))
        return object
    }
}
