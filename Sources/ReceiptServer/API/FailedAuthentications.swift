import ReceiptService

/// Failed authentications per client address: past its budget, an address's lookups that the authentication caches
/// cannot answer are refused (429) instead of reaching the database, so a stranger cycling through made-up keys or
/// tokens costs no database work. Known credentials from the same address keep working from the caches.
struct FailedAuthentications: Sendable {
    /// Failures per second per address (the burst is one second's worth); nil for no limit.
    let perSecond: Int?
    private let buckets = RateLimiter<String>(capacity: 10_000)

    init(perSecond: Int?) {
        self.perSecond = perSecond
    }

    /// Whether `address` has used up its budget.
    func isThrottled(_ address: String) -> Bool {
        guard let perSecond else { return false }
        return buckets.wait(for: address, rate: perSecond, now: .now) != nil
    }

    /// Counts one failure of `address`.
    func record(_ address: String) {
        guard let perSecond else { return }
        _ = buckets.acquire(address, rate: perSecond, now: .now)
    }

    /// How long until `address` may reach the database again.
    func wait(for address: String) -> Duration {
        guard let perSecond else { return .zero }
        return buckets.wait(for: address, rate: perSecond, now: .now) ?? .zero
    }

    /// Runs an authentication step for `address` under its budget: a refusal counts against it, and an address over
    /// it is answered from the authentication caches only (``Throttled`` for what they cannot answer).
    func guarding<T>(
        _ address: String, _ step: (_ mayQueryStore: @escaping @Sendable () -> Bool) async throws -> T
    ) async throws -> T {
        do {
            return try await step { !isThrottled(address) }
        } catch let error as ServiceError where error.code == .unauthorized {
            record(address)
            throw error
        } catch let error as ServiceError where error.code == .throttled {
            throw Throttled(wait: wait(for: address))
        }
    }
}
