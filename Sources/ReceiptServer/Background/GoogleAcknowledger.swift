import CoreMetrics
import Foundation
import Logging
import ReceiptCore
import ReceiptService
import ServiceLifecycle

/// Acknowledges delivered Google Play purchases with Google (docs/google-play.md, "Acknowledgement"): Google refunds a
/// purchase not acknowledged within three days.
///
/// The delivery made the row's acknowledgement pending in the same statement, so none is lost; every ``interval`` this
/// service claims the due ones (leased, so that several servers share them), asks Google, and records the outcome on
/// the row: acknowledged; retried after the ``policy``'s backoff, doubling up to an hour; or failed for good when
/// Google refuses the request itself (it does not know the purchase, or it was consumed), the app lost its key, or 72
/// hours have passed since the purchase. `receiptverify_google_acknowledgements_total{result}` counts the outcomes, and
/// `receiptverify_google_acknowledgements_overdue` the purchases bought over 48 hours ago and still not acknowledged
/// (the alert before Google's refund).
struct GoogleAcknowledger: Service {
    let store: any DataStore
    let tenancy: TenancyService
    let googlePlay: any GooglePlayLooking
    var interval: Duration = .seconds(1)
    /// When a failed acknowledgement is asked again, at most an hour apart, and when it is given up (72 hours after
    /// the purchase).
    var policy = RetryPolicy(first: .seconds(60), longestWait: 3_600)
    /// Acknowledgements claimed at once.
    var batch = 20
    /// The longest one call to Google may take.
    var callTimeout: Duration = .seconds(10)
    let deadline: StoreDeadline
    let metrics: any MetricsFactory
    let logger: Logger

    /// How long a claim holds its rows from other servers: longer than the whole batch may take.
    var lease: Duration { callTimeout * batch + .seconds(30) }

    func run() async throws {
        var counted = ContinuousClock.now - .seconds(60)
        while !Task.isShuttingDownGracefully && !Task.isCancelled {
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: interval) }
            guard !Task.isShuttingDownGracefully && !Task.isCancelled else { break }
            _ = await runOnce(now: Date())
            if ContinuousClock.now - counted >= .seconds(60) {
                counted = .now
                await countOverdue(now: Date())
            }
        }
    }

    /// Sets the gauge of purchases bought over 48 hours ago and still not acknowledged.
    func countOverdue(now: Date) async {
        do {
            let overdue = try await deadline.run("counting Google acknowledgements") { [store] in
                try await store.pendingGoogleAcknowledgements(purchasedBefore: now.addingTimeInterval(-48 * 3_600))
            }
            Gauge(label: "receiptverify_google_acknowledgements_overdue", factory: metrics).record(overdue)
        } catch {
            logger.warning("Google acknowledgements could not be counted", metadata: ["error": "\(error)"])
        }
    }

    /// Claims the due acknowledgements and attempts each; returns how many were attempted.
    func runOnce(now: Date) async -> Int {
        let tasks: [GoogleAcknowledgementTask]
        do {
            tasks = try await deadline.run("claiming Google acknowledgements") { [store, batch, lease] in
                try await store.claimGoogleAcknowledgements(dueBy: now, lease: lease, limit: batch)
            }
        } catch {
            logger.warning("Google acknowledgements could not be claimed", metadata: ["error": "\(error)"])
            return 0
        }
        for task in tasks {
            let outcome = await attempt(task)
            let result: String
            switch outcome {
            case .finished: result = "acknowledged"
            case .retry(_, let error):
                result = "retry"
                logger.info(
                    "Google acknowledgement failed; retried later",
                    metadata: [
                        "app.id": "\(task.appID)", "transaction_id": "\(task.transactionID)", "error": "\(error)",
                    ])
            case .failed(let error):
                result = "failed"
                logger.warning(
                    "Google acknowledgement failed for good",
                    metadata: [
                        "app.id": "\(task.appID)", "transaction_id": "\(task.transactionID)", "error": "\(error)",
                    ])
            }
            Counter(
                label: "receiptverify_google_acknowledgements_total", dimensions: [("result", result)],
                factory: metrics
            ).increment()
            do {
                try await deadline.run("recording a Google acknowledgement") { [store] in
                    try await store.recordGoogleAcknowledgement(task, outcome: outcome, at: Date())
                }
            } catch {
                // The lease runs out and the row is claimed again: Google may be asked twice (an acknowledgement is
                // idempotent), never not at all.
                logger.warning("a Google acknowledgement could not be recorded", metadata: ["error": "\(error)"])
            }
        }
        return tasks.count
    }

    /// One attempt, and what it came to.
    func attempt(_ task: GoogleAcknowledgementTask) async -> AppleFinishOutcome {
        let account: GoogleServiceAccount?
        let consumes: Bool
        do {
            let app = try await deadline.run("the app of a Google acknowledgement") { [store] in
                try await store.app(id: task.appID)
            }
            account = try app.flatMap { try tenancy.googleCredentials(of: $0) }
            // A consumable of the catalog is consumed once delivered (which acknowledges it): the customer may then
            // buy it again.
            consumes =
                !task.isSubscription && app?.catalog?.first(where: { $0.id == task.productID })?.kind == .consumable
        } catch {
            return retry(task, after: "the app could not be read: \(error)")
        }
        guard let account else { return .failed(error: "the app has no Google service account key") }
        do {
            if consumes {
                try await googlePlay.consume(
                    packageName: task.packageName, productID: task.productID, token: task.purchaseToken,
                    account: account)
            } else {
                try await googlePlay.acknowledge(
                    packageName: task.packageName, productID: task.productID, token: task.purchaseToken,
                    isSubscription: task.isSubscription, account: account)
            }
            return .finished
        } catch let error as GooglePlayError where error.code == .notFound {
            return .failed(error: error.reason)
        } catch {
            return retry(task, after: "\(error)")
        }
    }

    /// A retry after the policy's backoff, or a failure once it gives up.
    func retry(_ task: GoogleAcknowledgementTask, after error: String, now: Date = Date()) -> AppleFinishOutcome {
        // Google's three days run from the purchase, not from our delivery (money review M14).
        let since = task.purchasedAt ?? task.deliveredAt
        guard let next = policy.nextAttempt(afterFailures: task.attempts + 1, since: since, now: now) else {
            return .failed(error: "gave up after \(task.attempts + 1) attempts: \(error)")
        }
        return .retry(next: next, error: error)
    }
}
