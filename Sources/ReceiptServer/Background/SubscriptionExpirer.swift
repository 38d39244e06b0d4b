import CoreMetrics
import Foundation
import Logging
import ReceiptCore
import ReceiptService
import ServiceLifecycle

/// Moves each subscription whose expiry (or grace period) passed with no renewal to `expired`, with its
/// `subscription.status_changed` event (docs/notifications.md, "Subscription status"): the customer hears of it even
/// when Apple's `EXPIRED` is late or lost. A renewal signed before the expiry that arrives after it still renews
/// (the status keeps the signed date of the statement it came from). Then tells the customers whose entitlements an
/// expiry or a grace period's end changes (`customer.entitlements_changed`, ``CustomerChanges``).
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

    /// Expires one batch of due subscriptions and tells one batch of due customers; returns the larger count.
    func runOnce(now: Date) async -> Int {
        max(await expire(now: now), await tellCustomers(now: now))
    }

    /// Tells one batch of customers whose entitlements are due to change; returns how many were due.
    func tellCustomers(now: Date) async -> Int {
        do {
            let due = try await deadline.run("due customers") { [store, batch] in
                try await store.dueCustomers(dueBy: now, limit: batch)
            }
            var byLedger: [String: [DueCustomer]] = [:]
            for customer in due {
                byLedger["\(customer.appID) \(customer.environment.rawValue)", default: []].append(customer)
            }
            var told = 0
            for key in byLedger.keys.sorted() {
                guard let customers = byLedger[key], let first = customers.first else { continue }
                let app = try await deadline.run("an app") { [store] in try await store.app(id: first.appID) }
                let events = try await deadline.run("telling customers") { [store] in
                    try await store.tellCustomers(
                        appID: first.appID, environment: first.environment, users: customers.map(\.user),
                        catalog: app?.catalog, at: now)
                }
                told += events.count
            }
            if told > 0 {
                Counter(label: "receiptverify_customer_changes_told_total", factory: metrics).increment(by: told)
            }
            return due.count
        } catch {
            logger.warning("customers could not be told", metadata: ["error": "\(error)"])
            return 0
        }
    }

    /// Expires one batch of due subscriptions; returns how many.
    func expire(now: Date) async -> Int {
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
