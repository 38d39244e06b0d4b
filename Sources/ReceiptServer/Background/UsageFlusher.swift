import CoreMetrics
import Foundation
import Logging
import Synchronization
import ReceiptService
import ServiceLifecycle

/// Writes the meter's counts to the store every ``interval``, and once more on graceful shutdown, after the HTTP
/// server has answered its last request.
///
/// A failed flush keeps the counts in memory for the next one and logs an error (with the counts still unwritten,
/// those of a flush the database has not answered included); counts still unwritten when the process stops are
/// logged as lost, one line per account with its number.
struct UsageFlusher: Service {
    let meter: UsageMeter
    let store: any UsageStore
    /// This server's quota grants: renewed by each flush, given up when the server stops.
    let grants: QuotaGrantPolicy
    let interval: Duration
    /// The time limit of one flush, so that a database outage cannot hold a graceful stop.
    let deadline: StoreDeadline
    /// When the last flush succeeded, and the failures, for the metrics.
    let status: FlushStatus
    let logger: Logger

    /// Final flush attempts on shutdown, a short pause apart, before the remaining counts are given up.
    static let finalAttempts = 5

    func run() async throws {
        while !Task.isShuttingDownGracefully && !Task.isCancelled {
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: interval) }
            _ = await flushOnce()
        }
        for attempt in 1...Self.finalAttempts {
            if await flushOnce() || attempt == Self.finalAttempts { break }
            try? await Task.sleep(for: .milliseconds(200))
        }
        let lost = meter.unflushedCallsByAccount
        if !lost.isEmpty {
            // One line per account, with its number: what billing must add by hand.
            for (account, calls) in lost.sorted(by: { $0.key.uuidString < $1.key.uuidString }) {
                logger.error(
                    "usage counts could not be written before stopping",
                    metadata: ["account.id": "\(account.uuidString.lowercased())", "usage.lost_calls": "\(calls)"])
            }
        } else {
            // What this server was granted and did not use goes back to the others now, not when it expires.
            do {
                try await deadline.run("releasing quota grants") { [store, grants] in
                    try await store.releaseQuotaGrants(server: grants.server)
                }
            } catch {
                logger.warning("quota grants not released; they lapse by themselves", metadata: ["error": "\(error)"])
            }
        }
    }

    /// Flushes once; returns whether it succeeded. A flush still waiting for the store (its caller gave up at the
    /// deadline) is not a success: its counts are not written yet.
    private func flushOnce() async -> Bool {
        if meter.isFlushing {
            logger.warning(
                "usage flush still waiting for the database; counts kept",
                metadata: ["usage.pending_calls": "\(meter.unflushedCalls)"])
            return false
        }
        do {
            let startedAt = ContinuousClock.now
            let date = Date()
            let renewal = GrantRenewal(server: grants.server, expiresAt: grants.expiry(from: date))
            let written = try await deadline.run("the usage flush") { [meter, store, grants] in
                try await meter.flush(
                    to: store, now: date,
                    grants: (renewal, startedAt: startedAt, validUntil: grants.validity(from: startedAt)))
            }
            if written > 0 { logger.trace("usage flushed", metadata: ["usage.calls": "\(written)"]) }
            status.succeeded()
            return true
        } catch {
            status.failed()
            logger.error(
                "usage flush failed; counts kept for the next attempt",
                metadata: ["usage.pending_calls": "\(meter.unflushedCalls)", "error": "\(error)"])
            return false
        }
    }
}

/// How the usage flushes go: the instant of the last success (`receiptverify_usage_flush_lag_seconds` is the time
/// since) and the failures (`receiptverify_usage_flush_failures_total`).
final class FlushStatus: Sendable {
    private let lastSuccess = Mutex(ContinuousClock.now)
    private let failures: Counter

    init(metrics: any MetricsFactory) {
        failures = Counter(label: "receiptverify_usage_flush_failures_total", factory: metrics)
    }

    func succeeded() { lastSuccess.withLock { $0 = .now } }

    func failed() { failures.increment() }

    /// The time since the last successful flush (since the start before the first).
    var sinceLastSuccess: Duration { lastSuccess.withLock { $0 }.duration(to: .now) }
}
