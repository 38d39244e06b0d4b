import Synchronization

/// Requests per second per key (an app in an environment), paced evenly: a request reserves the next free slot, so
/// in any span of T seconds at most `rate × T + 1` requests go out, however many callers burst at once.
final class RequestBudget: Sendable {
    private let nextSlot = Mutex([String: ContinuousClock.Instant]())

    /// Reserves a slot for `key` at `rate` per second and returns how long to wait for it; nil (nothing reserved)
    /// when the slot is later than `deadline`.
    func reserve(_ key: String, rate: Int, deadline: ContinuousClock.Instant) -> Duration? {
        let interval = Duration.seconds(1) / max(1, rate)
        let now = ContinuousClock.now
        return nextSlot.withLock { slots in
            let slot = max(now, slots[key] ?? now)
            guard slot <= deadline else { return nil }
            if slots.count >= 10_000, slots[key] == nil { slots = slots.filter { $0.value > now } }
            slots[key] = slot + interval
            return slot - now
        }
    }
}
