import CoreMetrics
import Foundation
import Logging
import ReceiptService
import ServiceLifecycle

/// Runs ``NotificationReconciler`` every ``interval`` for each enabled app of an enabled account with App Store Server
/// API credentials, over the last ``window`` (Apple gives up on a notification after about six days of retries): what
/// Apple could not deliver is recorded all the same (docs/notifications.md, "Reconciliation"). Several servers may
/// run it: each app is reconciled by one server at a time (a lease in the store), a run cut short at its page budget
/// or by a failure saves where it stopped and the next run resumes there, and a notification is recorded once by its
/// UUID whatever happens.
struct NotificationReconciliation: Service {
    let store: any DataStore
    let reconciler: NotificationReconciler
    let interval: Duration
    var window: TimeInterval = 7 * 86_400
    /// How long a server holds an app's reconciliation: longer than a run of the reconciler's pages may take.
    var lease: TimeInterval = 3_600
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
            await reconcile(app, now: now)
        }
    }

    /// Reconciles one app under its lease, from where the last run stopped.
    func reconcile(_ app: App, now: Date) async {
        let state: ReconciliationState
        do {
            guard
                let claimed = try await store.claimReconciliation(
                    appID: app.id, now: now, until: now.addingTimeInterval(lease))
            else { return }  // another server reconciles it now
            state = claimed
        } catch {
            logger.warning(
                "a reconciliation could not be claimed", metadata: ["app.token": "\(app.token)", "error": "\(error)"])
            return
        }
        var cursor = NotificationReconciler.Cursor(text: state.cursor)
        do {
            let report = try await reconciler.reconcile(
                app, since: now.addingTimeInterval(-window), until: now, resuming: cursor, now: now
            ) { next in
                cursor = next
                try await store.saveReconciliation(
                    appID: app.id, cursor: next.text, now: Date(), leaseUntil: Date().addingTimeInterval(lease))
            }
            try await store.saveReconciliation(
                appID: app.id, cursor: report.remaining?.text, now: Date(), leaseUntil: nil)
            Counter(label: "receiptverify_notifications_reconciled_total", factory: metrics)
                .increment(by: report.recorded)
            if let remaining = report.remaining {
                logger.warning(
                    "a reconciliation read its most pages; the next run resumes where it stopped",
                    metadata: [
                        "app.token": "\(app.token)", "pages": "\(report.pages)", "bundle_id": "\(remaining.bundleID)",
                        "environment": "\(remaining.environment)",
                    ])
            }
            if report.recorded > 0 || !report.refused.isEmpty {
                logger.info(
                    "notifications reconciled",
                    metadata: [
                        "app.token": "\(app.token)", "recorded": "\(report.recorded)",
                        "refused": "\(report.refused.count)",
                    ])
            }
        } catch {
            // Where it stopped is kept: the next run resumes there.
            try? await store.saveReconciliation(appID: app.id, cursor: cursor?.text, now: Date(), leaseUntil: nil)
            logger.warning(
                "notifications could not be reconciled", metadata: ["app.token": "\(app.token)", "error": "\(error)"])
        }
    }
}
