import CoreMetrics
import Foundation
import Logging
import ReceiptService
import ServiceLifecycle

/// Runs ``NotificationReconciler`` every ``interval`` for each enabled app of an enabled account with App Store Server API credentials,
/// over the last ``window`` (Apple gives up on a notification after about six days of retries): what Apple could not
/// deliver is recorded all the same (docs/notifications.md, "Reconciliation"). Several servers may each run it: a
/// notification is recorded once by its UUID.
struct NotificationReconciliation: Service {
    let store: any DataStore
    let reconciler: NotificationReconciler
    let interval: Duration
    var window: TimeInterval = 7 * 86_400
    let metrics: any MetricsFactory
    let logger: Logger

    func run() async throws {
        while !Task.isShuttingDownGracefully && !Task.isCancelled {
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: interval) }
            guard !Task.isShuttingDownGracefully && !Task.isCancelled else { break }
            await runOnce(now: Date())
        }
    }

    /// One pass over the apps with credentials.
    func runOnce(now: Date) async {
        let apps: [App]
        do {
            let enabledAccounts = Set(try await store.accounts().filter(\.isEnabled).map(\.id))
            apps = try await store.apps(accountID: nil).filter {
                $0.isEnabled && enabledAccounts.contains($0.accountID) && $0.appStoreServerCredentials != nil
            }
        } catch {
            logger.warning("apps to reconcile could not be read", metadata: ["error": "\(error)"])
            return
        }
        for app in apps {
            guard !Task.isShuttingDownGracefully && !Task.isCancelled else { return }
            do {
                let report = try await reconciler.reconcile(app, since: now.addingTimeInterval(-window), until: now)
                Counter(label: "receiptverify_notifications_reconciled_total", factory: metrics)
                    .increment(by: report.recorded)
                if report.recorded > 0 || !report.refused.isEmpty {
                    logger.info(
                        "notifications reconciled",
                        metadata: [
                            "app.token": "\(app.token)", "recorded": "\(report.recorded)",
                            "refused": "\(report.refused.count)",
                        ])
                }
            } catch {
                logger.warning(
                    "notifications could not be reconciled",
                    metadata: ["app.token": "\(app.token)", "error": "\(error)"])
            }
        }
    }
}
