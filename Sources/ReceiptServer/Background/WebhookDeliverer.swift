import Clients
import CoreMetrics
import Foundation
import Logging
import ReceiptCore
import ReceiptService
import ServiceLifecycle

/// Delivers the outbox's events to the customers' webhook endpoints (docs/webhooks.md, "Deliveries").
///
/// It keeps up to ``concurrency`` deliveries in flight and fills the places as they free up (half of them at a time,
/// or every ``interval``), claiming at most ``perSecond`` a second (leased, so that several servers share them and each
/// is attempted by one: a backlog drains beside the requests, not instead of them). The store's claim takes due
/// deliveries in turns across endpoints, at most two in flight per endpoint, none of an endpoint the circuit breaker
/// paused (``WebhookCircuitBreaker``): a receiver that hangs holds two places for at most the client's timeout, and
/// other tenants' fresh events go out beside its backlog. Each is POSTed signed, and the outcomes are recorded a
/// lot at a time (one transaction): delivered on a 2xx; otherwise retried by ``policy`` with jitter (a 3xx too:
/// redirects are not followed) until its budget of time ends (72 hours from the event, or from its redelivery), then
/// dead. A delivery whose outcome cannot be recorded is claimed again when its lease ends: at least once, never lost.
struct WebhookDeliverer: Service {
    let store: any DataStore
    let tenancy: TenancyService
    let client: WebhookClient
    let policy: RetryPolicy
    var interval: Duration = .seconds(1)
    /// Deliveries attempted a second, at most (`--webhook-deliveries-per-second`).
    var perSecond = 100
    /// Deliveries in flight at once.
    var concurrency = 16
    /// When an endpoint that keeps failing is paused.
    var breaker = WebhookCircuitBreaker()
    let deadline: StoreDeadline
    let metrics: any MetricsFactory
    let logger: Logger

    /// How long a claim holds its deliveries from other servers: longer than one attempt may take.
    var lease: Duration { client.timeout + .seconds(30) }

    /// What ended a wait: an attempt, or the interval.
    private enum Step: Sendable {
        case attempt(WebhookAttempt)
        case tick
    }

    func run() async throws {
        var backlogReadAt = ContinuousClock.now - .seconds(60)
        var window = (start: ContinuousClock.now, claimed: 0)
        await withTaskGroup(of: Step.self) { group in
            var running = 0
            var attempted: [WebhookAttempt] = []
            var oldestUnrecorded: ContinuousClock.Instant?
            // A pause first: the store is migrated while the server starts.
            group.addTask { await Self.tick(after: interval) }
            var ticking = true
            while let step = await group.next() {
                var ticked = false
                switch step {
                case .tick:
                    ticking = false
                    ticked = true
                case .attempt(let attempt):
                    running -= 1
                    attempted.append(attempt)
                    oldestUnrecorded = oldestUnrecorded ?? .now
                }
                let stopping = Task.isShuttingDownGracefully || Task.isCancelled
                // Outcomes are recorded a lot at a time (all the places' worth, or once the first waited a second, or
                // when nothing else runs): on SQLite every commit makes the server's cached reads look again, so a
                // commit per delivery would halve /api's rate while a backlog drains.
                if let since = oldestUnrecorded,
                    attempted.count >= concurrency || ContinuousClock.now - since >= .seconds(1) || running == 0
                        || stopping
                {
                    await record(attempted)
                    attempted.removeAll()
                    oldestUnrecorded = nil
                }
                if stopping {
                    if running == 0 { break }
                    continue
                }
                // The places freed are filled (half of them at a time, or on the interval), within the rate: a claim
                // is a commit too.
                let free = concurrency - running
                if ContinuousClock.now - window.start >= .seconds(1) { window = (.now, 0) }
                let allowed = min(free, perSecond - window.claimed)
                if allowed > 0, ticked || free >= max(1, concurrency / 2) {
                    for task in await claim(allowed) {
                        group.addTask { .attempt(await deliver(task)) }
                        running += 1
                        window.claimed += 1
                    }
                }
                if !ticking {
                    group.addTask { await Self.tick(after: interval) }
                    ticking = true
                }
                if ContinuousClock.now - backlogReadAt >= .seconds(10) {
                    backlogReadAt = ContinuousClock.now
                    await recordBacklog()
                }
            }
            group.cancelAll()
        }
        try? await client.shutdown()
    }

    private static func tick(after interval: Duration) async -> Step {
        try? await Task.sleep(for: interval)
        return .tick
    }

    /// Claims up to `limit` due deliveries.
    func claim(_ limit: Int, now: Date = Date()) async -> [WebhookDeliveryTask] {
        do {
            return try await deadline.run("claiming webhook deliveries") { [store, lease] in
                try await store.claimWebhookDeliveries(
                    dueBy: now, lease: lease, limit: limit, perEndpoint: WebhookCircuitBreaker.inFlightPerEndpoint)
            }
        } catch {
            logger.warning("webhook deliveries could not be claimed", metadata: ["error": "\(error)"])
            return []
        }
    }

    /// Records the attempts' outcomes in one transaction.
    func record(_ attempts: [WebhookAttempt]) async {
        guard !attempts.isEmpty else { return }
        do {
            try await deadline.run("recording webhook deliveries") { [store] in
                try await store.recordWebhookDeliveries(attempts, at: Date(), breaker: breaker)
            }
        } catch {
            logger.warning(
                "webhook deliveries could not be recorded",
                metadata: ["error": "\(error)", "deliveries": "\(attempts.count)"])
        }
    }

    /// One attempt, counted and logged; its outcome is recorded by the caller.
    func deliver(_ task: WebhookDeliveryTask) async -> WebhookAttempt {
        let started = ContinuousClock.now
        let outcome = await attempt(task)
        var task = task
        task.latencyMilliseconds = Int((ContinuousClock.now - started).nanoseconds / 1_000_000)
        let result: String
        switch outcome {
        case .delivered: result = "delivered"
        case .retry(_, let status, let error):
            result = "retry"
            logger.info(
                "webhook delivery failed; retried later",
                metadata: [
                    "event.id": "\(task.event.idText)", "endpoint.id": "\(task.endpointID)",
                    "status": "\(status.map(String.init) ?? "-")", "error": "\(error)",
                ])
        case .dead(_, let error):
            result = "dead"
            logger.warning(
                "webhook delivery dead: retries ran out",
                metadata: [
                    "event.id": "\(task.event.idText)", "endpoint.id": "\(task.endpointID)", "error": "\(error)",
                ])
        }
        Counter(label: "receiptverify_webhook_deliveries_total", dimensions: [("result", result)], factory: metrics)
            .increment()
        Timer(label: "receiptverify_webhook_delivery_duration_seconds", factory: metrics)
            .recordNanoseconds((ContinuousClock.now - started).nanoseconds)
        return (task, outcome)
    }

    /// Sends the task and judges the answer.
    func attempt(_ task: WebhookDeliveryTask, now: Date = Date()) async -> WebhookDeliveryOutcome {
        var secrets: [[UInt8]]
        do {
            secrets = [try tenancy.webhookSecret(task.secret, endpointID: task.endpointID)]
            // During a rotation's grace period the previous secret signs too, so the receiver may still hold it.
            if let previous = task.previousSecret, let until = task.previousSecretUntil, until > now {
                secrets.append(try tenancy.webhookSecret(previous, endpointID: task.endpointID))
            }
        } catch {
            return task.outcome(
                status: nil, error: "the endpoint's secret does not open with this master key", policy: policy,
                now: now)
        }
        let body = task.event.body(signedPayload: task.signedPayload)
        let answer = await client.deliver(
            body, eventID: task.event.idText, eventType: task.event.type, to: task.url, secrets: secrets, now: now)
        switch answer {
        case .answered(let status): return task.outcome(status: status, error: nil, policy: policy, now: Date())
        case .failed(let error): return task.outcome(status: nil, error: error, policy: policy, now: Date())
        }
    }

    /// Sets the backlog gauges: deliveries pending, and the age of the oldest event among them.
    func recordBacklog() async {
        guard
            let backlog = try? await deadline.run(
                "the webhook backlog", { [store] in try await store.webhookBacklog() })
        else { return }
        Gauge(label: "receiptverify_webhook_backlog", factory: metrics).record(backlog.pending)
        Gauge(label: "receiptverify_webhook_backlog_oldest_seconds", factory: metrics)
            .record(backlog.oldest.map { max(0, Date().timeIntervalSince($0)) } ?? 0)
    }
}
