import Foundation
import Synchronization

/// Token buckets per key (an account, a client address): each key may take `rate` tokens per second, with a burst of
/// one second's worth.
///
/// For accounts the limit is per server, not cluster-wide: a shared counter would put a database round trip in front
/// of every request, which costs more than the verification it guards, and a load balancer spreading an account over
/// `n` servers gives it at most `n` times its rate, which the monthly quota (cluster-wide) still bounds.
public final class RateLimiter<Key: Hashable & Sendable>: Sendable {
    /// Buckets kept at most; beyond it, full (idle) buckets are dropped, which changes nothing for their keys.
    public let capacity: Int

    private struct Bucket {
        var tokens: Double
        var updated: ContinuousClock.Instant
    }

    private let buckets = Mutex<[Key: Bucket]>([:])

    /// Creates a limiter.
    public init(capacity: Int = 100_000) {
        self.capacity = capacity
    }

    /// Takes one token from the key's bucket and returns nil, or returns how long until a token is available.
    public func acquire(_ key: Key, rate: Int, now: ContinuousClock.Instant) -> Duration? {
        update(key, rate: rate, now: now, taking: true)
    }

    /// Gives back a token taken by ``acquire(_:rate:now:)`` (the bucket never holds more than its burst).
    public func giveBack(_ key: Key, rate: Int) {
        let rate = Double(max(rate, 1))
        buckets.withLock { buckets in
            guard var bucket = buckets[key] else { return }
            bucket.tokens = min(rate, bucket.tokens + 1)
            buckets[key] = bucket
        }
    }

    /// How long until the key's bucket has a token, or nil when it has one now; takes nothing.
    public func wait(for key: Key, rate: Int, now: ContinuousClock.Instant) -> Duration? {
        update(key, rate: rate, now: now, taking: false)
    }

    private func update(_ key: Key, rate: Int, now: ContinuousClock.Instant, taking: Bool) -> Duration? {
        let rate = Double(max(rate, 1))
        return buckets.withLock { buckets in
            guard var bucket = buckets[key] else {
                // A key never seen (or forgotten when full) has a full bucket.
                guard taking else { return nil }
                if buckets.count >= capacity {
                    // A bucket untouched for a second has refilled completely: forgetting it changes nothing. If
                    // every bucket is busy, the oldest half goes (their keys start again with a full burst).
                    buckets = buckets.filter { $0.value.updated.duration(to: now) < .seconds(1) }
                    if buckets.count >= capacity {
                        let kept = buckets.sorted { $0.value.updated > $1.value.updated }.prefix(capacity / 2)
                        buckets = Dictionary(uniqueKeysWithValues: kept.map { ($0.key, $0.value) })
                    }
                }
                buckets[key] = Bucket(tokens: rate - 1, updated: now)
                return nil
            }
            let elapsed = bucket.updated.duration(to: now)
            if elapsed > .zero {
                let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) * 1e-18
                bucket.tokens = min(rate, bucket.tokens + seconds * rate)
                bucket.updated = now
            }
            // A rate lowered since the bucket filled: its burst shrinks at once.
            bucket.tokens = min(bucket.tokens, rate)
            guard bucket.tokens >= 1 else {
                buckets[key] = bucket
                return .seconds((1 - bucket.tokens) / rate)
            }
            if taking { bucket.tokens -= 1 }
            buckets[key] = bucket
            return nil
        }
    }
}
