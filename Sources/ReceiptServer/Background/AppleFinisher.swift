import CoreMetrics
import Foundation
import Logging
import ReceiptCore
import ReceiptService
import ServiceLifecycle

/// Calls Apple's Finish Transaction for each delivery confirmed by an app with App Store Server API credentials
/// (docs/app-store-server-api.md, "Finish Transaction").
///
/// The confirmation made the row's finish pending in the same statement, so none is lost; every ``interval`` this
/// service claims the due ones (leased, so that several servers share them), asks Apple, and records the outcome on
/// the row: finished; retried after the ``policy``'s backoff, doubling up to six hours; or failed for good
/// when Apple refuses the request itself (a 4xx other than 401, 404 and 429), the app lost its credentials, or
/// the policy's 72 hours have passed since the confirmation. The ledger look-up shows each row's state, attempts and last
/// error; `receiptverify_apple_finishes_total{result}` counts the outcomes.
struct AppleFinisher: Service {
    let store: any DataStore
    let tenancy: TenancyService
    let storeKit: any AppStoreServerLooking
    var interval: Duration = .seconds(1)
    /// When a failed finish is asked again, and when it is given up (72 hours after the confirmation).
    var policy = RetryPolicy(first: .seconds(60))
    /// Finishes claimed at once.
    var batch = 20
    /// The longest one call to Apple may take (`--storekit-timeout`).
    var callTimeout: Duration = .seconds(10)
    let deadline: StoreDeadline
    let metrics: any MetricsFactory
    let logger: Logger

    /// How long a claim holds its rows from other servers: longer than the whole batch may take, each call waiting
    /// for its timeout one after another, so that no other server claims a row this one is still finishing.
    var lease: Duration { callTimeout * batch + .seconds(30) }

    func run() async throws {
        while !Task.isShuttingDownGracefully && !Task.isCancelled {
            // A pause first: the store is migrated while the server starts, beside this service.
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: interval) }
            guard !Task.isShuttingDownGracefully && !Task.isCancelled else { break }
            _ = await runOnce(now: Date())
        }
    }

    /// Claims the due finishes and attempts each; returns how many were attempted.
    func runOnce(now: Date) async -> Int {
        let tasks: [AppleFinishTask]
        do {
            tasks = try await deadline.run("claiming Apple finishes") { [store, batch, lease] in
                try await store.claimAppleFinishes(dueBy: now, lease: lease, limit: batch)
            }
        } catch {
            logger.warning("Apple finishes could not be claimed", metadata: ["error": "\(error)"])
            return 0
        }
        for task in tasks {
            let outcome = await attempt(task)
            let result: String
            switch outcome {
            case .finished: result = "finished"
            case .retry(_, let error):
                result = "retry"
                logger.info(
                    "Apple finish failed; retried later",
                    metadata: [
                        "app.id": "\(task.appID)", "transaction_id": "\(task.transactionID)", "error": "\(error)",
                    ])
            case .failed(let error):
                result = "failed"
                logger.warning(
                    "Apple finish failed for good",
                    metadata: [
                        "app.id": "\(task.appID)", "transaction_id": "\(task.transactionID)", "error": "\(error)",
                    ])
            }
            Counter(label: "receiptverify_apple_finishes_total", dimensions: [("result", result)], factory: metrics)
                .increment()
            do {
                try await deadline.run("recording an Apple finish") { [store] in
                    try await store.recordAppleFinish(task, outcome: outcome, at: Date())
                }
            } catch {
                // The lease runs out and the finish is claimed again: Finish Transaction may be asked twice, never lost.
                logger.warning("an Apple finish could not be recorded", metadata: ["error": "\(error)"])
            }
        }
        return tasks.count
    }

    /// One attempt at Finish Transaction, and what it came to.
    func attempt(_ task: AppleFinishTask) async -> AppleFinishOutcome {
        let credentials: AppStoreServerAPICredentials?
        do {
            let app = try await deadline.run("the app of an Apple finish") { [store] in
                try await store.app(id: task.appID)
            }
            credentials = try app.flatMap { try tenancy.serverAPICredentials(of: $0) }
        } catch {
            return retry(task, after: "the app could not be read: \(error)")
        }
        guard let credentials else { return .failed(error: "the app has no App Store Server API credentials") }
        do {
            try await storeKit.finish(task.transactionID, environment: task.environment, credentials: credentials)
            return .finished
        } catch let error as AppStoreServerAPIError where error.code == .refused {
            return .failed(error: error.reason)
        } catch {
            return retry(task, after: "\(error)")
        }
    }

    /// A retry after the policy's backoff, or a failure once it gives up.
    func retry(_ task: AppleFinishTask, after error: String, now: Date = Date()) -> AppleFinishOutcome {
        guard let next = policy.nextAttempt(afterFailures: task.attempts + 1, since: task.confirmedAt, now: now) else {
            return .failed(error: "gave up after \(task.attempts + 1) attempts: \(error)")
        }
        return .retry(next: next, error: error)
    }
}
