import Foundation
import Synchronization

/// Per-account token buckets: each account may make `rate` requests per second on this server, with a burst of one
/// second's worth.
///
/// The limit is per server, not cluster-wide: a shared counter would put a database round trip in front of every
/// request, which costs more than the verification it guards, and a load balancer spreading an account over `n`
/// servers gives it at most `n` times its rate, which the monthly quota (cluster-wide) still bounds.
public final class RateLimiter: Sendable {
    /// Buckets kept at most; beyond it, full (idle) buckets are dropped, which changes nothing for their accounts.
    public let capacity: Int

    private struct Bucket {
        var tokens: Double
        var updated: ContinuousClock.Instant
    }

    private let buckets = Mutex<[UUID: Bucket]>([:])

    /// Creates a limiter.
    public init(capacity: Int = 100_000) {
        self.capacity = capacity
    }

    /// Takes one token from the account's bucket and returns nil, or returns how long until a token is available.
    public func acquire(accountID: UUID, rate: Int, now: ContinuousClock.Instant) -> Duration? {
        let rate = Double(max(rate, 1))
        return buckets.withLock { buckets in
            var bucket = buckets[accountID] ?? Bucket(tokens: rate, updated: now)
            let elapsed = bucket.updated.duration(to: now)
            if elapsed > .zero {
                let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) * 1e-18
                bucket.tokens = min(rate, bucket.tokens + seconds * rate)
                bucket.updated = now
            }
            // A plan lowered since the bucket filled: its burst shrinks at once.
            bucket.tokens = min(bucket.tokens, rate)
            guard bucket.tokens >= 1 else {
                buckets[accountID] = bucket
                return .seconds((1 - bucket.tokens) / rate)
            }
            bucket.tokens -= 1
            if buckets.count >= capacity, buckets[accountID] == nil {
                // A bucket untouched for a second has refilled completely: forgetting it changes nothing.
                buckets = buckets.filter { $0.value.updated.duration(to: now) < .seconds(1) }
            }
            buckets[accountID] = bucket
            return nil
        }
    }
}
