import Foundation
import Synchronization

/// At most `limit` attempts per key in each `window`, for actions a stranger or a stolen session could repeat
/// (sign-in, revealing a key). Memory is bounded: at most `capacity` keys are tracked.
public final class AttemptBudget<Key: Hashable & Sendable>: Sendable {
    private struct Count {
        var windowStart: Date
        var attempts: Int
    }

    /// Attempts allowed per window.
    public let limit: Int
    /// The window.
    public let window: TimeInterval
    /// The most keys tracked.
    public let capacity: Int
    private let counts = Mutex([Key: Count]())

    /// Creates a budget.
    public init(limit: Int, window: TimeInterval, capacity: Int = 100_000) {
        self.limit = limit
        self.window = window
        self.capacity = capacity
    }

    /// Spends one attempt of `key` at `now`; false when its window's attempts are used up.
    ///
    /// When the table is full, the keys whose window has passed go; if half of it is still live, it is cleared (a
    /// client cycling through that many addresses could start afresh with new ones anyway). Either costs one pass
    /// per `capacity / 2` new keys at most, and a new key is never refused for want of room.
    public func spend(_ key: Key, at now: Date) -> Bool {
        counts.withLock { counts in
            if counts.count >= capacity, counts[key] == nil {
                counts = counts.filter { now.timeIntervalSince($0.value.windowStart) < window }
                if counts.count >= capacity / 2 { counts.removeAll(keepingCapacity: true) }
            }
            var count = counts[key] ?? Count(windowStart: now, attempts: 0)
            if now.timeIntervalSince(count.windowStart) >= window { count = Count(windowStart: now, attempts: 0) }
            guard count.attempts < limit else { return false }
            count.attempts += 1
            counts[key] = count
            return true
        }
    }
}
