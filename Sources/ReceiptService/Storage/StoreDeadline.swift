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
                    var result: Result<T, any Error>
                    do {
                        result = .success(try await work())
                    } catch {
                        result = .failure(error)
                    }
                    // A claim abandoned before the store began means the store left the work out (a group commit
                    // answers such a member with nothing): what the work returned is not its outcome. The timer that
                    // abandoned it may not have decided the race yet; the answer is its answer all the same (found by
                    // the simulator: a 200 with no transactions, where the caller was owed a 503).
                    if let claim, claim.isAbandoned {
                        result = .failure(ServiceError(.unavailable, "\(what) took longer than \(limit)"))
                    }
                    race.finish(result)
                }
                // The limit is a timer in the process's table (no task or dispatch timer of its own).
                let timer = DeadlineTimers.shared.schedule(after: limit) {
                    // The store began to commit: the caller waits for the outcome (a delivery it marks must reach
                    // the answer), unless the database stopped answering in the middle.
                    if let claim, !claim.abandon() {
                        let committing = DeadlineTimers.shared.schedule(after: committingLimit - limit) {
                            race.finish(
                                .failure(
                                    ServiceError(
                                        .unavailable, "\(what) began to commit and took longer than \(committingLimit)")
                                ))
                        }
                        race.hold(timer: committing)
                        return
                    }
                    race.finish(.failure(ServiceError(.unavailable, "\(what) took longer than \(limit)")))
                }
                race.hold(worker: worker)
                race.hold(timer: timer)
            }
        } onCancel: {
            // A caller cancelled after the commit began still gets its outcome.
            if claim?.abandon() ?? true { race.finish(.failure(CancellationError())) }
        }
    }
}

/// One continuation resumed exactly once, by whichever of the work, the timer or a cancellation comes first; the
/// work's task is then cancelled if still running, and the timer removed.
private final class Race<T: Sendable>: Sendable {
    private struct State {
        var continuation: CheckedContinuation<T, any Error>?
        var done = false
        var worker: Task<Void, Never>?
        var timer: UInt64?
    }

    private let state = Mutex(State())

    /// Keeps the work's task, so that the race's end cancels it; cancels it if the race has ended already.
    func hold(worker: Task<Void, Never>) {
        let decided = state.withLock { state in
            state.worker = worker
            return state.done
        }
        if decided { worker.cancel() }
    }

    /// Keeps the timer (``DeadlineTimers``) running for the race, so that the race's end removes it; removes it if
    /// the race has ended already.
    func hold(timer: UInt64) {
        let decided = state.withLock { state in
            state.timer = timer
            return state.done
        }
        if decided { DeadlineTimers.shared.cancel(timer) }
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

    /// Decides the race with `result` if it is not decided yet, cancels the work if still running and removes the
    /// timer.
    func finish(_ result: Result<T, any Error>) {
        let decided = state.withLock {
            state -> (CheckedContinuation<T, any Error>?, Task<Void, Never>?, UInt64?)? in
            guard !state.done else { return nil }
            state.done = true
            defer { state.continuation = nil }
            return (state.continuation, state.worker, state.timer)
        }
        guard let (continuation, worker, timer) = decided else { return }
        continuation?.resume(with: result)
        worker?.cancel()
        if let timer { DeadlineTimers.shared.cancel(timer) }
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
