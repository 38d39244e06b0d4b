import Synchronization

/// Values made from Apple's answers, kept a short time by key: the App Store Server API client's answers by request
/// (app, path, query), so a burst of calls about one customer's transactions costs Apple one request, and the
/// verification service's enriched fields by app and customer. Concurrent asks of one key share one fetch; only values
/// are kept, never failures; a zero lifetime keeps nothing. Bounded: at most `capacity` entries, the expired ones
/// dropped first, then all when it is still full.
public final class AnswerCache<Value: Sendable>: Sendable {
    private struct Entry {
        var task: Task<Value, any Error>
        var expiresAt: ContinuousClock.Instant?
    }

    /// How long a value is kept.
    public let lifetime: Duration
    /// The most entries kept.
    public let capacity: Int
    private let entries = Mutex([String: Entry]())

    /// Creates a cache.
    public init(lifetime: Duration, capacity: Int = 10_000) {
        self.lifetime = lifetime
        self.capacity = capacity
    }

    /// The cached or in-flight value of `key`, or `fetch`'s; `hit` says whether Apple was spared a request.
    public func value(_ key: String, fetch: @escaping @Sendable () async throws -> Value) async throws -> (
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

    /// Drops what is kept of `key` (an answer known to be stale): the next ask fetches anew.
    public func forget(_ key: String) {
        entries.withLock { _ = $0.removeValue(forKey: key) }
    }
}
