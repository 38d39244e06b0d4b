import Foundation
import Logging
import ReceiptCore
import ReceiptService
import ServiceLifecycle

/// Polls Apple for the mass renewal-date extensions it is working on (docs/app-store-server-api.md, "Actions on a
/// customer") until each is complete: every ``interval`` it claims the due ones (leased, so that several servers share
/// them and none is asked twice at once), asks Get Status of Subscription Renewal Date Extensions, and records the
/// counts, or the completion.
struct RenewalExtensionPoller: Service {
    let store: any DataStore
    let tenancy: TenancyService
    let storeKit: any AppStoreServerLooking
    /// How long after one ask the next is due.
    let pollAfter: TimeInterval
    var interval: Duration = .seconds(1)
    var batch = 20
    /// The longest one call to Apple may take (`--storekit-timeout`).
    var callTimeout: Duration = .seconds(10)
    let deadline: StoreDeadline
    let logger: Logger

    var lease: Duration { callTimeout * batch + .seconds(30) }

    func run() async throws {
        while !Task.isShuttingDownGracefully && !Task.isCancelled {
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: interval) }
            guard !Task.isShuttingDownGracefully && !Task.isCancelled else { break }
            _ = await runOnce(now: Date())
        }
    }

    /// Claims the due polls and asks Apple for each; returns how many were asked.
    func runOnce(now: Date) async -> Int {
        let due: [RenewalExtensionRecord]
        do {
            due = try await deadline.run("claiming renewal-extension polls") { [store, batch, lease] in
                try await store.claimRenewalExtensionPolls(dueBy: now, lease: lease, limit: batch)
            }
        } catch {
            logger.warning("renewal-extension polls could not be claimed", metadata: ["error": "\(error)"])
            return 0
        }
        let actions = AppleActions(storeKit: storeKit, tenancy: tenancy, requester: "poller")
        for record in due {
            guard let app = try? await store.app(id: record.appID) else { continue }
            let polled = await actions.pollMassExtension(record, app: app, pollAfter: pollAfter)
            if polled.state == .complete {
                logger.info(
                    "a mass renewal-date extension is complete",
                    metadata: [
                        "app.id": "\(record.appID)", "request_identifier": "\(record.requestIdentifier)",
                        "succeeded": "\(polled.succeeded ?? 0)", "failed": "\(polled.failed ?? 0)",
                    ])
            }
        }
        return due.count
    }
}
