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
/// the row: finished; retried after a backoff that doubles from ``firstRetry`` up to six hours; or failed for good
/// when Apple refuses the request itself (a 4xx other than 401, 404 and 429), the app lost its credentials, or
/// ``giveUpAfter`` has passed since the confirmation. The ledger look-up shows each row's state, attempts and last
/// error; `receiptverify_apple_finishes_total{result}` counts the outcomes.
struct AppleFinisher: Service {
    let store: any DataStore
    let tenancy: TenancyService
    let storeKit: any AppStoreServerLooking
    var interval: Duration = .seconds(1)
    var firstRetry: Duration = .seconds(60)
    var giveUpAfter: TimeInterval = 72 * 3_600
    /// Finishes claimed at once.
    var batch = 20
    let deadline: StoreDeadline
    let metrics: any MetricsFactory
    let logger: Logger

    /// How long a claim holds its rows from other servers: longer than one call to Apple may take.
    static let lease = Duration.seconds(120)
    /// The longest wait between two attempts.
    static let maximumDelay: TimeInterval = 6 * 3_600

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
            tasks = try await deadline.run("claiming Apple finishes") { [store, batch] in
                try await store.claimAppleFinishes(dueBy: now, lease: Self.lease, limit: batch)
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
        let app: App?
        let key: (issuerID: String, keyID: String, privateKeyPEM: String)?
        do {
            app = try await deadline.run("the app of an Apple finish") { [store] in try await store.app(id: task.appID)
            }
            key = try app.flatMap { try tenancy.appleCredentials(of: $0) }
        } catch {
            return retry(task, after: "the app could not be read: \(error)")
        }
        guard let app, let key, let bundleID = app.bundleIDs.first?.value else {
            return .failed(error: "the app has no App Store Server API credentials")
        }
        let credentials = AppStoreServerAPICredentials(
            issuerID: key.issuerID, keyID: key.keyID, privateKeyPEM: key.privateKeyPEM, bundleID: bundleID)
        do {
            try await storeKit.finish(task.transactionID, environment: task.environment, credentials: credentials)
            return .finished
        } catch let error as AppStoreServerAPIError where error.code == .refused {
            return .failed(error: error.reason)
        } catch {
            return retry(task, after: "\(error)")
        }
    }

    /// A retry after a backoff doubling from ``firstRetry``, or a failure once ``giveUpAfter`` has passed.
    func retry(_ task: AppleFinishTask, after error: String, now: Date = Date()) -> AppleFinishOutcome {
        let first = Double(firstRetry.components.seconds) + Double(firstRetry.components.attoseconds) / 1e18
        let delay = min(Self.maximumDelay, first * pow(2, Double(min(task.attempts, 30))))
        let next = now.addingTimeInterval(delay)
        guard next.timeIntervalSince(task.confirmedAt) <= giveUpAfter else {
            return .failed(error: "gave up after \(task.attempts + 1) attempts: \(error)")
        }
        return .retry(next: next, error: error)
    }
}
