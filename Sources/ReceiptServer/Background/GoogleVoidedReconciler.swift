import CoreMetrics
import Foundation
import Logging
import ReceiptCore
import ReceiptService
import ServiceLifecycle

/// Reads Google Play's voided purchases (refunds, chargebacks, cancellations) of every app with a service account key,
/// package by package, and revokes the ledger's rows as Apple's refunds do (docs/google-play.md, "Refunds"): the row's
/// revocation, `transaction.revoked`, the customer's entitlements and `customer.entitlements_changed`.
///
/// Every ``interval`` it adds a cursor for each new app and package, claims the due cursors under a lease (one server at
/// a time reads one), and reads from where the cursor stopped, page by page: a page read is a page kept, so a server
/// that stops goes on where it was. Each voided purchase is kept: one the ledger does not hold yet is recorded revoked
/// when it first is, never delivered (money review M8), and the voids of the last day are applied again once per app and
/// run (for an order recorded by another server while its void was kept).
/// `receiptverify_google_voided_total{result}` counts the voided purchases read (`revoked`, `known`, `unknown`).
struct GoogleVoidedReconciler: Service {
    let store: any DataStore
    let tenancy: TenancyService
    let googlePlay: any GooglePlayLooking
    /// How often each app's voided purchases are read.
    var interval: Duration = .seconds(3_600)
    /// Pages read per cursor and run (the rest on the next run).
    var pagesPerRun = 20
    /// Voided orders of the last day applied again per app and run.
    static let reappliedPerRun = 1_000
    let deadline: StoreDeadline
    let metrics: any MetricsFactory
    let logger: Logger

    func run() async throws {
        while !Task.isShuttingDownGracefully && !Task.isCancelled {
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: min(interval, .seconds(60))) }
            guard !Task.isShuttingDownGracefully && !Task.isCancelled else { break }
            _ = await runOnce(now: Date())
        }
    }

    /// Reads the due cursors; returns how many voided purchases were read.
    func runOnce(now: Date) async -> Int {
        let cursors: [VoidedCursor]
        do {
            let apps = try await deadline.run("the apps of voided purchases") { [store] in
                try await store.apps(accountID: nil)
            }
            let packages = apps.filter { $0.googlePlayCredentials != nil }.flatMap { app in
                app.packageNames.map { (appID: app.id, packageName: $0) }
            }
            cursors = try await deadline.run("claiming voided-purchase cursors") { [store] in
                try await store.ensureVoidedCursors(packages, at: now)
                return try await store.claimVoidedCursors(dueBy: now, lease: .seconds(600), limit: 20)
            }
        } catch {
            logger.warning("voided-purchase cursors could not be claimed", metadata: ["error": "\(error)"])
            return 0
        }
        var read = 0
        for cursor in cursors { read += await reconcile(cursor, now: now) }
        // Voids are kept per app, whatever package listed them: applied again once for each app read.
        var reapplied = Set<UUID>()
        for cursor in cursors where reapplied.insert(cursor.appID).inserted {
            await reapplyRecentVoids(cursor.appID, now: now)
        }
        return read
    }

    /// Applies the app's voids kept in the last day again: a void kept while another server recorded its order for
    /// the first time, each transaction before the other's commit, revoked nothing.
    private func reapplyRecentVoids(_ appID: UUID, now: Date) async {
        do {
            guard
                let app = try await deadline.run(
                    "the app of voided purchases", { [store] in try await store.app(id: appID) })
            else { return }
            let recent = try await deadline.run("the voided purchases of the last day") { [store] in
                try await store.voidedOrders(
                    appID: app.id, keptSince: now.addingTimeInterval(-86_400), limit: Self.reappliedPerRun)
            }
            for orderID in recent
            where try await GoogleVoiding.apply(orderID, app: app, store: store, deadline: deadline, now: now)
                == "revoked"
            {
                count("revoked")
            }
        } catch {
            logger.warning(
                "voided purchases could not be applied again", metadata: ["app.id": "\(appID)", "error": "\(error)"])
        }
    }

    /// Counts one voided purchase read or applied, by what it found.
    private func count(_ result: String) {
        Counter(label: "receiptverify_google_voided_total", dimensions: [("result", result)], factory: metrics)
            .increment()
    }

    private func reconcile(_ claimed: VoidedCursor, now: Date) async -> Int {
        var cursor = claimed
        var read = 0
        let next = now.addingTimeInterval(Double(interval.components.seconds))
        do {
            guard let app = try await store.app(id: cursor.appID), app.packageNames.contains(cursor.packageName),
                let account = try tenancy.googleCredentials(of: app)
            else {
                try await store.saveVoidedCursor(cursor, nextRunAt: next, at: now)
                return 0
            }
            // Google refuses (400) a start more than 30 days back: a cursor left that far behind (a month of
            // failures, a stopped deployment) starts again at the oldest time Google lists, and the gap is counted
            // and logged rather than the cursor stopping for good (money review M15).
            let oldest = GoogleVoiding.oldestStart(now: now)
            if let start = cursor.startTime, start < oldest {
                logger.warning(
                    "voided purchases older than Google lists (30 days) were never read: refunds in the gap are missed",
                    metadata: [
                        "app.id": "\(cursor.appID)", "package": "\(cursor.packageName)",
                        "voided.gap_from": "\(start)", "voided.gap_to": "\(oldest)",
                    ])
                Counter(label: "receiptverify_google_voided_gaps_total", factory: metrics).increment()
                cursor.startTime = oldest
                cursor.pageToken = nil
            }
            var newest = cursor.startTime ?? 0
            for _ in 0..<pagesPerRun {
                let page = try await googlePlay.voidedPurchases(
                    packageName: cursor.packageName, startTime: cursor.startTime, pageToken: cursor.pageToken,
                    account: account)
                for voided in page.purchases {
                    read += 1
                    guard let (orderID, void) = GoogleVoiding.void(of: voided) else {
                        count("unknown")
                        continue
                    }
                    newest = max(newest, void.voidedAt)
                    count(
                        try await GoogleVoiding.revoke(
                            orderID, void, app: app, store: store, deadline: deadline, now: now))
                }
                cursor.pageToken = page.nextPageToken
                if page.nextPageToken == nil {
                    // Read to the end: the next read starts at the newest voided time seen (a purchase voided at that
                    // very millisecond is read twice, and revoked once).
                    if newest > 0 { cursor.startTime = newest }
                    break
                }
                try await store.saveVoidedCursor(cursor, nextRunAt: now.addingTimeInterval(600), at: Date())
            }
            try await store.saveVoidedCursor(
                cursor, nextRunAt: cursor.pageToken == nil ? next : Date(), at: Date())
        } catch {
            logger.warning(
                "voided purchases could not be read",
                metadata: ["app.id": "\(cursor.appID)", "package": "\(cursor.packageName)", "error": "\(error)"])
            // The lease runs out and the cursor is read again from where it was kept.
        }
        return read
    }
}
