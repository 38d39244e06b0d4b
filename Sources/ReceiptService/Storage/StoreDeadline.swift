import CoreMetrics
import Synchronization

/// A time limit on work that waits for the database, so that an outage fails fast instead of holding requests.
///
/// The work runs in its own task; when the limit passes first, the caller gets ``ServiceError/Code/unavailable`` at
/// once and the work is cancelled (a database client that ignores cancellation finishes in the background, its result
/// unused). Work under a ``CommitClaim`` is given up only while the store has not begun to commit it; after that the
/// caller waits for its outcome, up to ``committingLimit``.
public struct StoreDeadline: Sendable {
    /// The limit; nil for none.
    public let limit: Duration?
    /// Operations under way (`receiptverify_database_operations_in_flight`).
    private let inFlight: Meter
    /// Operations that ran out of time (`receiptverify_database_timeouts_total`).
    private let timeouts: Counter

    /// Creates a deadline of `limit` (nil: no limit), counting into `metrics` (nil: counting nowhere).
    public init(_ limit: Duration?, metrics: (any MetricsFactory)? = nil) {
        self.limit = limit
        let factory = metrics ?? NOOPMetricsHandler.instance
        inFlight = Meter(label: "receiptverify_database_operations_in_flight", factory: factory)
        timeouts = Counter(label: "receiptverify_database_timeouts_total", factory: factory)
    }

    /// How long a caller waits for work whose commit began (``CommitClaim``) before it answers
    /// ``ServiceError/Code/unavailable`` all the same: far beyond a commit's time, so only a database that stopped
    /// answering in the middle of a transaction reaches it.
    public var committingLimit: Duration { limit.map { max($0 * 10, .seconds(60)) } ?? .seconds(60) }

    /// The result of `work`, or ``ServiceError/Code/unavailable`` naming `what` when it takes longer than ``limit``
    /// (with a `claim`, only if the caller could abandon the work before the store began to commit it).
    public func run<T: Sendable>(
        _ what: String, claim: CommitClaim? = nil, _ work: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        inFlight.increment()
        defer { inFlight.decrement() }
        do {
            return try await race(what, claim: claim, work)
        } catch let error as ServiceError where error.code == .unavailable {
            timeouts.increment()
            throw error
        }
    }

    private func race<T: Sendable>(
        _ what: String, claim: CommitClaim?, _ work: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        guard let limit else { return try await work() }
        let committingLimit = committingLimit
        let race = Race<T>()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                guard race.start(continuation) else { return }
                let worker = Task {
                    let result: Result<T, any Error>
                    do {
                        result = .success(try await work())
                    } catch {
                        result = .failure(error)
                    }
                    race.finish(result)
                }
                let timer = Task {
                    do {
                        try await Task.sleep(for: limit)
                        // The store began to commit: the caller waits for the outcome (a delivery it marks must reach
                        // the answer), unless the database stopped answering in the middle.
                        if let claim, !claim.abandon() {
                            try await Task.sleep(for: committingLimit - limit)
                            race.finish(
                                .failure(
                                    ServiceError(
                                        .unavailable, "\(what) began to commit and took longer than \(committingLimit)")
                                ))
                            return
                        }
                    } catch {
                        return  // the work finished first
                    }
                    race.finish(.failure(ServiceError(.unavailable, "\(what) took longer than \(limit)")))
                }
                race.hold(worker: worker, timer: timer)
            }
        } onCancel: {
            // A caller cancelled after the commit began still gets its outcome.
            if claim?.abandon() ?? true { race.finish(.failure(CancellationError())) }
        }
    }
}

/// One continuation resumed exactly once, by whichever of the work, the timer or a cancellation comes first; the
/// loser's task is cancelled.
private final class Race<T: Sendable>: Sendable {
    private struct State {
        var continuation: CheckedContinuation<T, any Error>?
        var done = false
        var worker: Task<Void, Never>?
        var timer: Task<Void, Never>?
    }

    private let state = Mutex(State())

    /// Keeps the two running tasks, so that the race's end cancels the loser; cancels both if it has ended already.
    func hold(worker: Task<Void, Never>, timer: Task<Void, Never>) {
        let decided = state.withLock { state in
            state.worker = worker
            state.timer = timer
            return state.done
        }
        if decided {
            worker.cancel()
            timer.cancel()
        }
    }

    /// Keeps the continuation; false (after resuming it with a cancellation) when the race was already decided.
    func start(_ continuation: CheckedContinuation<T, any Error>) -> Bool {
        let decided = state.withLock { state in
            if !state.done { state.continuation = continuation }
            return state.done
        }
        if decided { continuation.resume(throwing: CancellationError()) }
        return !decided
    }

    /// Decides the race with `result` if it is not decided yet, and cancels what is still running.
    func finish(_ result: Result<T, any Error>) {
        let decided = state.withLock { state -> (CheckedContinuation<T, any Error>?, [Task<Void, Never>])? in
            guard !state.done else { return nil }
            state.done = true
            defer { state.continuation = nil }
            return (state.continuation, [state.worker, state.timer].compactMap { $0 })
        }
        guard let (continuation, tasks) = decided else { return }
        continuation?.resume(with: result)
        for task in tasks { task.cancel() }
    }
}

extension Duration {
    /// The duration in whole nanoseconds (saturating far beyond any time a request takes).
    public var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds.multipliedReportingOverflow(by: 1_000_000_000).overflow
            ? .max : seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}
