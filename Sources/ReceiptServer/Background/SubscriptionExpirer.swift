import CoreMetrics
import Foundation
import Logging
import ReceiptService
import ServiceLifecycle

/// Moves each subscription whose expiry (or grace period) passed with no renewal to `expired`, with its
/// `subscription.status_changed` event (docs/notifications.md, "Subscription status"): the customer hears of it even
/// when Apple's `EXPIRED` is late or lost. A renewal signed before the expiry that arrives after it still renews
/// (the status keeps the signed date of the statement it came from).
struct SubscriptionExpirer: Service {
    let store: any DataStore
    var interval: Duration = .seconds(2)
    /// Subscriptions expired by one statement.
    var batch = 200
    let deadline: StoreDeadline
    let metrics: any MetricsFactory
    let logger: Logger

    func run() async throws {
        while !Task.isShuttingDownGracefully && !Task.isCancelled {
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: interval) }
            guard !Task.isShuttingDownGracefully && !Task.isCancelled else { break }
            while await runOnce(now: Date()) == batch, !Task.isShuttingDownGracefully, !Task.isCancelled {}
        }
    }

    /// Expires one batch of due subscriptions; returns how many.
    func runOnce(now: Date) async -> Int {
        do {
            let expired = try await deadline.run("expiring subscriptions") { [store, batch] in
                try await store.expireSubscriptions(dueBy: now, limit: batch)
            }
            if expired > 0 {
                Counter(label: "receiptverify_subscriptions_expired_total", factory: metrics).increment(by: expired)
            }
            return expired
        } catch {
            logger.warning("subscriptions could not be expired", metadata: ["error": "\(error)"])
            return 0
        }
    }
}
