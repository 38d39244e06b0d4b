import Foundation
import Synchronization

/// What the verification service made of Apple's answers about a customer (``VerificationService``'s enrichment), kept
/// for ``lifetime``: under load, calls about one customer reuse the verifyReceipt-shaped fields instead of formatting
/// them again from the client's cached answers (at most ``lifetime`` behind them). Bounded: past ``capacity`` entries
/// it starts again empty. Failures are never kept.
final class ServerFactsMemo<Value: Sendable>: Sendable {
    private struct Entry {
        let value: Value
        let expiresAt: ContinuousClock.Instant
    }

    let lifetime: Duration
    let capacity: Int
    private let entries = Mutex([String: Entry]())

    init(lifetime: Duration, capacity: Int = 10_000) {
        self.lifetime = lifetime
        self.capacity = capacity
    }

    /// The kept value of `key`, or `make`'s, kept.
    func value(_ key: String, make: () async throws -> Value) async throws -> Value {
        guard lifetime > .zero else { return try await make() }
        let now = ContinuousClock.now
        if let entry = entries.withLock({ $0[key] }), entry.expiresAt > now { return entry.value }
        let value = try await make()
        entries.withLock { entries in
            if entries.count >= capacity { entries.removeAll(keepingCapacity: true) }
            entries[key] = Entry(value: value, expiresAt: now + lifetime)
        }
        return value
    }
}
