import CoreMetrics
import Foundation
import Logging
import ReceiptCore
import ReceiptService
import ServiceLifecycle

/// Answers Apple's refund requests for apps whose refund policy answers (docs/notifications.md, "Refund requests").
///
/// Recording the first `CONSUMPTION_REQUEST` about a transaction made its answer due (once, however often Apple
/// re-sends it); every ``interval`` this service claims the due answers (leased, so that several servers share
/// them), builds each body from the ledger and the backend's report under the app's policy (``ConsumptionRules``),
/// sends it with Send Consumption Information (v2), and records the outcome with a `consumption.answered` event when
/// it is final: sent; retried after the ``policy``'s backoff when Apple or the network fails (5xx, 429, a timeout, a
/// transaction Apple does not know yet); failed for good when Apple refuses the body (another 4xx), the app no longer
/// answers, or the retries would pass 11 hours after Apple asked (Apple waits 12).
/// `receiptverify_consumption_answers_total{result}` counts the outcomes.
struct ConsumptionAnswerer: Service {
    let store: any DataStore
    let tenancy: TenancyService
    let storeKit: any AppStoreServerLooking
    var interval: Duration = .seconds(1)
    /// When a failed answer is sent again, and when it is given up.
    var policy = RetryPolicy(first: .seconds(30), giveUpAfter: .seconds(11 * 3_600))
    var batch = 20
    /// The longest one call to Apple may take (`--storekit-timeout`).
    var callTimeout: Duration = .seconds(10)
    let deadline: StoreDeadline
    let metrics: any MetricsFactory
    let logger: Logger

    /// How long a claim holds its groups from other servers: longer than the whole batch may take.
    var lease: Duration { callTimeout * batch + .seconds(30) }

    func run() async throws {
        while !Task.isShuttingDownGracefully && !Task.isCancelled {
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: interval) }
            guard !Task.isShuttingDownGracefully && !Task.isCancelled else { break }
            _ = await runOnce(now: Date())
        }
    }

    /// Claims the due answers and attempts each; returns how many were attempted.
    func runOnce(now: Date) async -> Int {
        let tasks: [ConsumptionAnswerTask]
        do {
            tasks = try await deadline.run("claiming consumption answers") { [store, batch, lease] in
                try await store.claimConsumptionAnswers(dueBy: now, lease: lease, limit: batch)
            }
        } catch {
            logger.warning("consumption answers could not be claimed", metadata: ["error": "\(error)"])
            return 0
        }
        for task in tasks {
            let (outcome, body) = await attempt(task)
            let result: String
            var event: WebhookEvent?
            switch outcome {
            case .sent(_, let status):
                result = "sent"
                event = Self.event(task, state: "sent", body: body, status: status, error: nil)
            case .retry(_, let error, _):
                result = "retry"
                logger.info(
                    "a consumption answer failed; sent again later",
                    metadata: [
                        "app.id": "\(task.appID)", "transaction_id": "\(task.transactionID)", "error": "\(error)",
                    ])
            case .failed(let error, _, let status):
                result = "failed"
                event = Self.event(task, state: "failed", body: body, status: status, error: error)
                logger.warning(
                    "a consumption answer failed for good",
                    metadata: [
                        "app.id": "\(task.appID)", "transaction_id": "\(task.transactionID)", "error": "\(error)",
                    ])
            }
            Counter(
                label: "receiptverify_consumption_answers_total", dimensions: [("result", result)], factory: metrics
            )
            .increment()
            do {
                try await deadline.run("recording a consumption answer") { [store, event] in
                    try await store.recordConsumptionAnswer(task, outcome: outcome, event: event, at: Date())
                }
            } catch {
                // The lease runs out and the answer is claimed again: Apple may get it twice, never not at all.
                logger.warning("a consumption answer could not be recorded", metadata: ["error": "\(error)"])
            }
        }
        return tasks.count
    }

    /// One attempt, what it came to, and the body it sent to Apple (nil when it sent none).
    func attempt(_ task: ConsumptionAnswerTask, now: Date = Date()) async -> (ConsumptionAnswerOutcome, JSONObject?) {
        let app: App?
        let facts: ConsumptionRules.Facts
        do {
            app = try await deadline.run("the app of a consumption answer") { [store] in
                try await store.app(id: task.appID)
            }
            facts = try await deadline.run("the facts of a consumption answer") { [store] in
                try await store.consumptionFacts(of: task)
            }
        } catch {
            return (retry(task, after: "the ledger could not be read: \(error)", status: nil, now: now), nil)
        }
        guard let app else {
            return (.failed(error: "the app no longer answers refund requests", body: nil, status: nil), nil)
        }
        var known = facts
        // A row that states no kind (a unified receipt's) takes the app's catalog's.
        if known.kind == nil { known.kind = app.catalog?.first { $0.id == facts.productID }?.kind }
        let body: JSONObject
        switch ConsumptionRules.answer(known, answers: app.refundAnswers, requestedAt: task.requestedAt) {
        case .body(let answer): body = answer
        case .withheld(let reason): return (.failed(error: reason, body: nil, status: nil), nil)
        }
        let credentials: AppStoreServerAPICredentials?
        do {
            credentials = try tenancy.serverAPICredentials(of: app)
        } catch {
            return (.failed(error: "the app's credentials could not be opened", body: nil, status: nil), nil)
        }
        guard let credentials else {
            return (.failed(error: "the app has no App Store Server API credentials", body: nil, status: nil), nil)
        }
        let bytes = JSONValue.object(body).encoded
        let text = String(decoding: bytes, as: UTF8.self)
        do {
            try await storeKit.sendConsumption(
                task.transactionID, body: bytes, environment: task.environment, credentials: credentials)
            return (.sent(body: text, status: 202), body)
        } catch let error as AppStoreServerAPIError where error.code == .refused {
            return (.failed(error: error.reason, body: text, status: nil), body)
        } catch {
            return (retry(task, after: "\(error)", status: nil, now: now), body)
        }
    }

    /// A retry after the policy's backoff, or a failure once it would pass the deadline.
    func retry(_ task: ConsumptionAnswerTask, after error: String, status: Int?, now: Date) -> ConsumptionAnswerOutcome
    {
        guard let next = policy.nextAttempt(afterFailures: task.attempts + 1, since: task.requestedAt, now: now) else {
            return .failed(error: "gave up after \(task.attempts + 1) attempts: \(error)", body: nil, status: status)
        }
        return .retry(next: next, error: error, status: status)
    }

    /// The `consumption.answered` event of a final outcome.
    static func event(
        _ task: ConsumptionAnswerTask, state: String, body: JSONObject?, status: Int?, error: String?
    ) -> WebhookEvent {
        var data = JSONObject(capacity: 6)
        data.append("transaction_id", .string(task.transactionID))
        data.append("state", .string(state))
        data.append("requested_at", .string(LedgerEntry.rfc3339(task.requestedAt)))
        if let body { data.append("sent", .object(body)) }
        if let status { data.append("apple_status", .integer(Int64(status))) }
        if let error { data.append("error", .string(error)) }
        return WebhookEvent(
            appID: task.appID, environment: task.environment, kind: .consumptionAnswered, createdAt: Date(), data: data)
    }
}
