import Synchronization

/// Apple's answers for a short time, by request (app, path, query): a burst of calls about one customer's
/// transactions costs Apple one request. Concurrent asks of one key share one fetch; only answers are kept, never
/// failures. Bounded: at most `capacity` entries, the expired ones dropped first, then all when it is still full.
final class AnswerCache<Value: Sendable>: Sendable {
    private struct Entry {
        var task: Task<Value, any Error>
        var expiresAt: ContinuousClock.Instant?
    }

    let lifetime: Duration
    let capacity: Int
    private let entries = Mutex([String: Entry]())

    init(lifetime: Duration, capacity: Int = 10_000) {
        self.lifetime = lifetime
        self.capacity = capacity
    }

    /// The cached or in-flight value of `key`, or `fetch`'s; `hit` says whether Apple was spared a request.
    func value(_ key: String, fetch: @escaping @Sendable () async throws -> Value) async throws -> (
        value: Value, hit: Bool
    ) {
        guard lifetime > .zero else { return (try await fetch(), false) }
        let now = ContinuousClock.now
        let (task, hit) = entries.withLock { entries -> (Task<Value, any Error>, Bool) in
            if let entry = entries[key], entry.expiresAt.map({ $0 > now }) ?? true { return (entry.task, true) }
            if entries.count >= capacity {
                entries = entries.filter { $0.value.expiresAt.map { $0 > now } ?? true }
                if entries.count >= capacity { entries.removeAll() }
            }
            let task = Task { try await fetch() }
            entries[key] = Entry(task: task, expiresAt: nil)
            return (task, false)
        }
        do {
            let value = try await task.value
            if !hit { entries.withLock { $0[key]?.expiresAt = .now + lifetime } }
            return (value, hit)
        } catch {
            // A failure is not remembered: the next ask tries again.
            if !hit { entries.withLock { $0[key] = nil } }
            throw error
        }
    }
}
