import Synchronization

/// The timers of every ``StoreDeadline`` in the process, in one table with one task that sleeps until the earliest is
/// due: a database call's limit costs a lock and a table entry, not a task and a dispatch timer of its own (issue 38;
/// docs/performance.md, "The write path (issue 38, second part)"). A timer is cancelled by removing its entry; almost
/// every one is, its work finishing long before its limit, so the task wakes about once per limit while calls run and
/// not at all when none do.
final class DeadlineTimers: Sendable {
    /// The process's timers.
    static let shared = DeadlineTimers()

    typealias Fire = @Sendable () -> Void

    private struct State {
        var timers: [UInt64: (due: ContinuousClock.Instant, fire: Fire)] = [:]
        var nextID: UInt64 = 0
        /// The sweeper running, by generation; an older one that wakes leaves without touching the table.
        var generation: UInt64 = 0
        /// The running sweeper (nil: none) and when it wakes next.
        var sweeper: (task: Task<Void, Never>, wake: ContinuousClock.Instant)?
    }

    private let state = Mutex(State())

    /// Runs `fire` once after `delay`, unless ``cancel(_:)`` is called first with the id returned.
    func schedule(after delay: Duration, _ fire: @escaping Fire) -> UInt64 {
        let due = ContinuousClock.now + delay
        let (id, replaced) = state.withLock { state -> (UInt64, Task<Void, Never>?) in
            state.nextID += 1
            state.timers[state.nextID] = (due, fire)
            // A sweeper asleep past this timer's time is replaced by one that wakes for it.
            if let sweeper = state.sweeper, sweeper.wake <= due { return (state.nextID, nil) }
            let replaced = state.sweeper?.task
            state.generation += 1
            let generation = state.generation
            // High priority: a limit must fire while the calls it limits keep the threads busy.
            state.sweeper = (Task.detached(priority: .high) { await self.sweep(generation) }, due)
            return (state.nextID, replaced)
        }
        replaced?.cancel()
        return id
    }

    /// Removes the timer `id`; it does not fire (if it has not already).
    func cancel(_ id: UInt64) {
        _ = state.withLock { $0.timers.removeValue(forKey: id) }
    }

    /// Timers waiting to fire (for tests).
    var pending: Int { state.withLock { $0.timers.count } }

    /// Whether a sweeper is running (for tests): none once no timer waits.
    var isSweeping: Bool { state.withLock { $0.sweeper != nil } }

    private func sweep(_ generation: UInt64) async {
        while true {
            let target = state.withLock { state -> ContinuousClock.Instant? in
                guard state.generation == generation else { return nil }
                guard let earliest = state.timers.values.lazy.map(\.due).min() else {
                    state.sweeper = nil
                    return nil
                }
                state.sweeper?.wake = earliest
                return earliest
            }
            guard let target else { return }
            try? await Task.sleep(until: target, clock: .continuous)
            let due = state.withLock { state -> [Fire]? in
                guard state.generation == generation else { return nil }
                let now = ContinuousClock.now
                let ids = state.timers.compactMap { $0.value.due <= now ? $0.key : nil }
                return ids.compactMap { state.timers.removeValue(forKey: $0)?.fire }
            }
            guard let due else { return }
            for fire in due { fire() }
        }
    }
}
