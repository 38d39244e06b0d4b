import CoreMetrics
import Foundation
import Logging
import ReceiptService
import ServiceLifecycle

/// Deletes what the retention policy no longer keeps (docs/operations.md, "Retention"), every ``interval``: each kind
/// in batches of ``batch`` rows, one short transaction each with a pause between, at most ``batchesPerRun`` batches
/// of a kind per run (a backlog is worked off over several runs), so that the API never waits behind a purge.
/// Several servers may run it: each batch deletes rows no other batch can delete twice.
struct Purger: Service {
    let store: any DataStore
    let policy: RetentionPolicy
    var interval: Duration = .seconds(600)
    var batch = 500
    var batchesPerRun = 200
    var pause: Duration = .milliseconds(20)
    let deadline: StoreDeadline
    let metrics: any MetricsFactory
    let logger: Logger

    func run() async throws {
        while !Task.isShuttingDownGracefully && !Task.isCancelled {
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: interval) }
            guard !Task.isShuttingDownGracefully && !Task.isCancelled else { break }
            _ = await runOnce(now: Date())
        }
    }

    /// One pass over every kind the policy limits; returns the rows deleted by kind.
    func runOnce(now: Date) async -> [PurgeKind: Int] {
        var deleted: [PurgeKind: Int] = [:]
        for kind in PurgeKind.allCases {
            guard let keep = policy.keep(kind) else { continue }
            let before = now.addingTimeInterval(-(Double(keep.components.seconds)))
            var total = 0
            for _ in 0..<batchesPerRun {
                guard !Task.isShuttingDownGracefully && !Task.isCancelled else { break }
                let count: Int
                do {
                    count = try await deadline.run("purging \(kind.rawValue)") { [store, batch] in
                        try await store.purge(kind, before: before, limit: batch)
                    }
                } catch {
                    logger.warning(
                        "old rows could not be purged", metadata: ["kind": "\(kind.rawValue)", "error": "\(error)"])
                    break
                }
                total += count
                guard count == batch else { break }
                try? await Task.sleep(for: pause)
            }
            if total > 0 {
                deleted[kind] = total
                Counter(
                    label: "receiptverify_purged_rows_total", dimensions: [("kind", kind.rawValue)], factory: metrics
                )
                .increment(by: total)
                logger.info("old rows purged", metadata: ["kind": "\(kind.rawValue)", "rows": "\(total)"])
            }
        }
        return deleted
    }
}
