import Foundation
import ReceiptCore

/// One event to deliver to one endpoint, as a claim of ``WebhookStore`` hands it to ``WebhookDeliverer``.
public struct WebhookDeliveryTask: Sendable, Equatable {
    /// The event.
    public var event: WebhookEvent
    /// The endpoint's id.
    public var endpointID: UUID
    /// Where to POST.
    public var url: String
    /// The endpoint's sealed secret.
    public var secret: SealedSecret
    /// Apple's `signedPayload`, when the event came from a notification and the endpoint forwards it.
    public var signedPayload: String?
    /// Attempts made so far.
    public var attempts: Int
    /// When its budget of time began: the event's creation, or its last redelivery.
    public var startedAt: Date
    /// The endpoint's previous secret, sealed like ``secret``, and when it stops signing (a rotation's grace period).
    public var previousSecret: SealedSecret?
    public var previousSecretUntil: Date?
    /// How long the attempt took, once made (recorded with its outcome).
    public var latencyMilliseconds: Int?

    /// Creates a task.
    public init(
        event: WebhookEvent, endpointID: UUID, url: String, secret: SealedSecret, signedPayload: String?,
        attempts: Int, startedAt: Date? = nil, previousSecret: SealedSecret? = nil, previousSecretUntil: Date? = nil
    ) {
        self.previousSecret = previousSecret
        self.previousSecretUntil = previousSecretUntil
        self.event = event
        self.endpointID = endpointID
        self.url = url
        self.secret = secret
        self.signedPayload = signedPayload
        self.attempts = attempts
        self.startedAt = startedAt ?? event.createdAt
    }
}

/// What one delivery attempt came to.
public enum WebhookDeliveryOutcome: Sendable, Equatable {
    /// The receiver answered 2xx.
    case delivered(status: Int)
    /// It failed for now (`status` when the receiver answered); the next attempt is at `next`.
    case retry(next: Date, status: Int?, error: String)
    /// Retries ran out: the delivery is dead (a dead letter, redeliverable by the operator).
    case dead(status: Int?, error: String)
}

/// A delivery's state.
public enum WebhookDeliveryState: String, Sendable, CaseIterable {
    /// Waiting for its next attempt.
    case pending
    /// The receiver took it.
    case delivered
    /// Retries ran out.
    case dead
}

extension WebhookDeliveryTask {
    /// What an attempt came to when the receiver answered HTTP `status`, or (nil) failed with `error` before
    /// answering: a 2xx is delivered; anything else, a redirect included (never followed), is retried under `policy`
    /// or dead once it gives up (its time counted from ``startedAt``).
    public func outcome(status: Int?, error: String?, policy: RetryPolicy, now: Date) -> WebhookDeliveryOutcome {
        if let status, (200...299).contains(status) { return .delivered(status: status) }
        let reason =
            status.map { (300...399).contains($0) ? "redirects are not followed" : "HTTP \($0)" }
            ?? error ?? "no answer"
        return policy.failure(attempts: attempts + 1, created: startedAt, now: now, status: status, error: reason)
    }
}

extension RetryPolicy {
    /// The outcome of a failed delivery attempt, the `attempts`-th (from 1), of an event created at `created`: a retry,
    /// or dead once the policy gives up.
    public func failure(attempts: Int, created: Date, now: Date, status: Int?, error: String)
        -> WebhookDeliveryOutcome
    {
        guard let next = nextAttempt(afterFailures: attempts, since: created, now: now) else {
            return .dead(status: status, error: error)
        }
        return .retry(next: next, status: status, error: error)
    }
}

/// An event with its deliveries, as `receiptverify events list` shows it.
public struct WebhookEventRecord: Sendable, Equatable {
    /// One delivery of the event.
    public struct Delivery: Sendable, Equatable {
        /// The endpoint.
        public var endpointID: UUID
        /// Its state.
        public var state: WebhookDeliveryState
        /// Attempts made.
        public var attempts: Int
        /// The receiver's last HTTP status, when it answered.
        public var lastStatus: Int?
        /// The last failure.
        public var lastError: String?
        /// The next attempt (pending).
        public var nextAttemptAt: Date?
        /// When the receiver took it.
        public var deliveredAt: Date?
        /// How long the last attempt took, in milliseconds.
        public var latencyMilliseconds: Int?

        /// Creates a delivery.
        public init(
            endpointID: UUID, state: WebhookDeliveryState, attempts: Int, lastStatus: Int?, lastError: String?,
            nextAttemptAt: Date?, deliveredAt: Date?, latencyMilliseconds: Int? = nil
        ) {
            self.latencyMilliseconds = latencyMilliseconds
            self.endpointID = endpointID
            self.state = state
            self.attempts = attempts
            self.lastStatus = lastStatus
            self.lastError = lastError
            self.nextAttemptAt = nextAttemptAt
            self.deliveredAt = deliveredAt
        }
    }

    /// The event.
    public var event: WebhookEvent
    /// Its deliveries, one per endpoint that takes it.
    public var deliveries: [Delivery]

    /// Creates a record.
    public init(event: WebhookEvent, deliveries: [Delivery]) {
        self.event = event
        self.deliveries = deliveries
    }
}

/// Which events to list or redeliver.
public struct WebhookEventQuery: Sendable, Equatable {
    /// The app.
    public var appID: UUID
    /// Only events with a delivery in this state.
    public var state: WebhookDeliveryState?
    /// Only events created at or after this.
    public var since: Date?
    /// Only these events.
    public var eventIDs: [UUID]?
    /// At most this many, newest first.
    public var limit: Int

    /// Creates a query.
    public init(
        appID: UUID, state: WebhookDeliveryState? = nil, since: Date? = nil, eventIDs: [UUID]? = nil,
        limit: Int = 100
    ) {
        self.appID = appID
        self.state = state
        self.since = since
        self.eventIDs = eventIDs
        self.limit = limit
    }
}

extension WebhookEventRecord {
    /// The event and its deliveries as `events list --json` shows them.
    public var json: JSONObject {
        var object = JSONObject(capacity: 7)
        object.append("id", .string(event.idText))
        object.append("type", .string(event.type))
        object.append("environment", .string(event.environment.rawValue))
        object.append("created_at", .string(LedgerEntry.rfc3339(event.createdAt)))
        if let uuid = event.notificationUUID { object.append("notification_uuid", .string(uuid)) }
        object.append("data", .object(event.data))
        object.append(
            "deliveries",
            .array(
                deliveries.map { delivery in
                    var item = JSONObject(capacity: 7)
                    item.append("endpoint_id", .string(delivery.endpointID.uuidString.lowercased()))
                    item.append("state", .string(delivery.state.rawValue))
                    item.append("attempts", .integer(Int64(delivery.attempts)))
                    if let status = delivery.lastStatus { item.append("last_status", .integer(Int64(status))) }
                    if let error = delivery.lastError { item.append("last_error", .string(error)) }
                    if let latency = delivery.latencyMilliseconds {
                        item.append("latency_ms", .integer(Int64(latency)))
                    }
                    if let next = delivery.nextAttemptAt, delivery.state == .pending {
                        item.append("next_attempt_at", .string(LedgerEntry.rfc3339(next)))
                    }
                    if let delivered = delivery.deliveredAt {
                        item.append("delivered_at", .string(LedgerEntry.rfc3339(delivered)))
                    }
                    return .object(item)
                }))
        return object
    }
}

/// When an endpoint that keeps failing is paused: after ``threshold`` failed attempts in a row (no delivery between)
/// its deliveries wait ``firstPause``, doubling with each further round of failures up to ``longestPause``, jittered so that
/// endpoints paused together do not come back together. A delivery ends the run. Deliveries in flight are capped per
/// endpoint (``inFlightPerEndpoint``), so that a receiver that hangs holds few of a server's slots.
public struct WebhookCircuitBreaker: Sendable, Equatable {
    /// Failures in a row that pause the endpoint.
    public var threshold: Int
    /// The first pause.
    public var firstPause: Duration
    /// The longest pause.
    public var longestPause: Duration

    /// Deliveries of one endpoint in flight at once, across servers.
    public static let inFlightPerEndpoint = 2

    /// Creates a breaker.
    public init(threshold: Int = 5, firstPause: Duration = .seconds(30), longestPause: Duration = .seconds(3_600)) {
        self.threshold = threshold
        self.firstPause = firstPause
        self.longestPause = longestPause
    }

    /// The pause after `failures` failures in a row, or nil below the threshold; `jitter` in 0...1 picks where in
    /// 80–120 % of the doubling pause it falls.
    public func pause(afterFailures failures: Int, jitter: Double = Double.random(in: 0...1)) -> Duration? {
        guard failures >= threshold else { return nil }
        let first = Double(firstPause.components.seconds)
        let longest = Double(longestPause.components.seconds)
        // Doubled for each round of attempts after a pause (as many as may be in flight), not for each failure.
        let rounds = (failures - threshold) / Self.inFlightPerEndpoint
        let doubled = min(longest, first * pow(2, Double(min(rounds, 30))))
        return .milliseconds(Int64(doubled * (0.8 + 0.4 * jitter) * 1_000))
    }

    /// When the pause after `failures` failures in a row, starting at `date`, ends; nil below the threshold.
    public func pauseEnd(afterFailures failures: Int, from date: Date) -> Date? {
        pause(afterFailures: failures).map {
            date.addingTimeInterval(Double($0.components.seconds) + Double($0.components.attoseconds) / 1e18)
        }
    }
}
