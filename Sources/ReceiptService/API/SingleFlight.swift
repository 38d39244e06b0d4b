import Synchronization

/// Work in flight by key: concurrent callers with one key share one task, so a burst of requests for one thing
/// (an API key, an app token) costs one lookup.
final class SingleFlight<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    private let running = Mutex<[Key: Task<Value, any Error>]>([:])

    /// The task running for `key`, joined; else one started with `work` when `mayStart` allows it (nil when it does
    /// not). The task forgets its key when it ends, so the next caller starts afresh.
    func task(
        for key: Key, mayStart: () -> Bool, _ work: @escaping @Sendable () async throws -> Value
    ) -> Task<Value, any Error>? {
        running.withLock { running in
            if let existing = running[key] { return existing }
            guard mayStart() else { return nil }
            let created = Task { [self] in
                defer { _ = self.running.withLock { $0.removeValue(forKey: key) } }
                return try await work()
            }
            running[key] = created
            return created
        }
    }
}
