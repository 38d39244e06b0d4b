import ReceiptService
import Synchronization

/// Failed authentications per client address: each database lookup an address makes spends a unit of its budget
/// before it is made (so concurrent requests cannot all pass one check), a lookup that found valid credentials gives
/// its unit back, and past the budget an address's lookups that the authentication caches cannot answer are refused
/// (429) instead of reaching the database. So a stranger cycling through made-up keys or tokens costs at most the
/// budget's database reads, however many connections it opens, and known credentials from the same address keep
/// working from the caches.
struct FailedAuthentications: Sendable {
    /// Failures per second per address (the burst is one second's worth); nil for no limit.
    let perSecond: Int?
    private let buckets = RateLimiter<String>(capacity: 10_000)

    init(perSecond: Int?) {
        self.perSecond = perSecond
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

    /// Runs an authentication step for `address` under its budget: each database lookup it asks for spends a unit
    /// first (refused, ``Throttled``, when none is left), a step that succeeds gives its units back, and a refusal
    /// answered from the caches alone counts one failure.
    func guarding<T>(
        _ address: String, _ step: (_ mayQueryStore: @escaping @Sendable () -> Bool) async throws -> T
    ) async throws -> T {
        guard let perSecond else { return try await mapped(address) { try await step { true } } }
        let spent = Spent()
        let mayQueryStore: @Sendable () -> Bool = { [buckets] in
            guard buckets.acquire(address, rate: perSecond, now: .now) == nil else { return false }
            spent.count.add(1, ordering: .relaxed)
            return true
        }
        do {
            let value = try await mapped(address) { try await step(mayQueryStore) }
            for _ in 0..<spent.count.load(ordering: .relaxed) { buckets.giveBack(address, rate: perSecond) }
            return value
        } catch let error as ServiceError where error.code == .unauthorized {
            if spent.count.load(ordering: .relaxed) == 0 { record(address) }
            throw error
        }
    }

    private func mapped<T>(_ address: String, _ step: () async throws -> T) async throws -> T {
        do {
            return try await step()
        } catch let error as ServiceError where error.code == .throttled {
            throw Throttled(wait: wait(for: address))
        }
    }

    /// The units a step spent.
    private final class Spent: Sendable {
        let count = Atomic<Int>(0)
    }
}
