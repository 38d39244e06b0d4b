import Synchronization

/// Requests per second per key (an app in an environment), paced by when they actually go out: a request goes only
/// once `1 / rate` has passed since the previous one of its key went, so in any span of T seconds at most
/// `rate × T + 1` requests leave, however many callers burst at once and however late a busy machine wakes them.
final class RequestBudget: Sendable {
    private let lastSent = Mutex([String: ContinuousClock.Instant]())

    /// Waits for `key`'s next turn at `rate` per second; false (nothing taken) when the turn would come after
    /// `deadline`. Returns how long it waited.
    func acquire(_ key: String, rate: Int, deadline: ContinuousClock.Instant) async throws -> Duration? {
        let interval = Duration.seconds(1) / max(1, rate)
        let started = ContinuousClock.now
        while true {
            let now = ContinuousClock.now
            // Taken atomically: of callers woken together, one goes and the others wait for the next turn.
            let wait = lastSent.withLock { sent -> Duration in
                if let last = sent[key], last + interval > now { return now.duration(to: last + interval) }
                if sent.count >= 10_000, sent[key] == nil { sent = sent.filter { $0.value + interval > now } }
                sent[key] = now
                return .zero
            }
            if wait == .zero { return started.duration(to: now) }
            guard now + wait <= deadline else { return nil }
            try await Task.sleep(for: wait)
        }
    }
}
