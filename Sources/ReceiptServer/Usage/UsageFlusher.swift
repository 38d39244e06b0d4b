import Foundation
import Logging
import ReceiptService
import ServiceLifecycle

/// Writes the meter's counts to the store every ``interval``, and once more on graceful shutdown, after the HTTP
/// server has answered its last request.
///
/// A failed flush keeps the counts in memory for the next one and logs an error; counts still unwritten when the
/// process stops are logged as lost (their number only).
struct UsageFlusher: Service {
    let meter: Meter
    let store: any TenancyStore
    let interval: Duration
    /// The time limit of one flush, so that a database outage cannot hold a graceful stop.
    let deadline: StoreDeadline
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
        let lost = meter.unflushedCalls
        if lost > 0 {
            logger.error("usage counts could not be written before stopping", metadata: ["usage.lost_calls": "\(lost)"])
        }
    }

    /// Flushes once; returns whether it succeeded.
    private func flushOnce() async -> Bool {
        do {
            let written = try await deadline.run("the usage flush") { [meter, store] in
                try await meter.flush(to: store, now: Date())
            }
            if written > 0 { logger.trace("usage flushed", metadata: ["usage.calls": "\(written)"]) }
            return true
        } catch {
            logger.error(
                "usage flush failed; counts kept for the next attempt",
                metadata: ["usage.pending_calls": "\(meter.unflushedCalls)", "error": "\(error)"])
            return false
        }
    }
}
