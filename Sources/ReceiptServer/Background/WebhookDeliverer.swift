import AppleClients
import CoreMetrics
import Foundation
import Logging
import ReceiptCore
import ReceiptService
import ServiceLifecycle

/// Delivers the outbox's events to the customers' webhook endpoints (docs/webhooks.md, "Deliveries").
///
/// Every ``interval`` it claims the due deliveries, at most ``perSecond`` a second (leased, so that several servers
/// share them and each is attempted by one: a backlog drains beside the requests, not instead of them), POSTs each
/// signed, at most ``concurrency`` at a time so that a receiver that hangs holds one slot for at most the client's
/// timeout, and records the outcomes (a slot's worth in one transaction): delivered on a 2xx;
/// otherwise retried by ``policy`` (a 3xx too: redirects are not followed) until the event is 72 hours old, then
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
    let deadline: StoreDeadline
    let metrics: any MetricsFactory
    let logger: Logger

    /// How long a claim holds its deliveries from other servers: longer than its whole batch may take, every
    /// attempt waiting for the client's timeout, `concurrency` at a time.
    func lease(for claimed: Int) -> Duration {
        client.timeout * max(1, (claimed + concurrency - 1) / concurrency) + .seconds(30)
    }

    func run() async throws {
        var backlogReadAt = ContinuousClock.now - .seconds(60)
        while !Task.isShuttingDownGracefully && !Task.isCancelled {
            // A pause first (the store is migrated while the server starts), none after a full batch.
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: interval) }
            guard !Task.isShuttingDownGracefully && !Task.isCancelled else { break }
            _ = await runOnce(now: Date())
            if ContinuousClock.now - backlogReadAt >= .seconds(10) {
                backlogReadAt = ContinuousClock.now
                await recordBacklog()
            }
        }
        try? await client.shutdown()
    }

    /// Claims the due deliveries and attempts each; returns how many were claimed.
    func runOnce(now: Date) async -> Int {
        let tasks: [WebhookDeliveryTask]
        do {
            let limit = max(1, Int(Double(perSecond) * Double(interval.components.seconds)))
            let lease = lease(for: limit)
            tasks = try await deadline.run("claiming webhook deliveries") { [store] in
                try await store.claimWebhookDeliveries(dueBy: now, lease: lease, limit: limit)
            }
        } catch {
            logger.warning("webhook deliveries could not be claimed", metadata: ["error": "\(error)"])
            return 0
        }
        // Outcomes are recorded a slot's worth at a time (or once the first of them waited a second), each lot in
        // one transaction: on SQLite every commit makes the server's cached reads (an account's standing) look again,
        // so one commit per delivery would cost /api. An outcome not recorded is attempted again after the lease.
        await withTaskGroup(of: WebhookAttempt.self) { group in
            var running = 0
            var attempted: [WebhookAttempt] = []
            var waitingSince: ContinuousClock.Instant?
            func add(_ attempt: WebhookAttempt) async {
                attempted.append(attempt)
                let since = waitingSince ?? .now
                waitingSince = since
                if attempted.count >= concurrency || ContinuousClock.now - since >= .seconds(1) {
                    await record(attempted)
                    attempted.removeAll()
                    waitingSince = nil
                }
            }
            for task in tasks {
                if running == concurrency, let attempt = await group.next() {
                    running -= 1
                    await add(attempt)
                }
                group.addTask { await deliver(task) }
                running += 1
            }
            for await attempt in group { await add(attempt) }
            await record(attempted)
        }
        return tasks.count
    }

    /// Records the attempts' outcomes in one transaction.
    func record(_ attempts: [WebhookAttempt]) async {
        guard !attempts.isEmpty else { return }
        do {
            try await deadline.run("recording webhook deliveries") { [store] in
                try await store.recordWebhookDeliveries(attempts, at: Date())
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
        let secret: [UInt8]
        do {
            secret = try tenancy.webhookSecret(task.secret, endpointID: task.endpointID)
        } catch {
            return task.outcome(
                status: nil, error: "the endpoint's secret does not open with this master key", policy: policy,
                now: now)
        }
        let body = task.event.body(signedPayload: task.signedPayload)
        let answer = await client.deliver(
            body, eventID: task.event.idText, eventType: task.event.type, to: task.url, secret: secret, now: now)
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
