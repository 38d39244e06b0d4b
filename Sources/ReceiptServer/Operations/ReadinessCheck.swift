import Logging
import ReceiptService
import Synchronization

/// `/readyz`'s question, "does the database answer?", asked at most once per ``reuse`` whatever the request rate
/// (so a stranger polling it costs no database work), and answered within the store deadline (503 beyond it).
final class ReadinessCheck: Sendable {
    let store: any TenancyStore
    let deadline: StoreDeadline
    /// How long an answer is reused.
    let reuse: Duration
    let logger: Logger

    private struct State {
        var last: (ready: Bool, at: ContinuousClock.Instant)?
        var running: Task<Bool, Never>?
    }

    private let state = Mutex(State())

    init(store: any TenancyStore, deadline: StoreDeadline, reuse: Duration = .seconds(1), logger: Logger) {
        self.store = store
        self.deadline = deadline
        self.reuse = reuse
        self.logger = logger
    }

    /// Whether the database answered its last check (made now if the last one is older than ``reuse``).
    func isReady() async -> Bool {
        let now = ContinuousClock.now
        let task: Task<Bool, Never> = state.withLock { state in
            if let last = state.last, last.at.duration(to: now) < reuse { return Task { last.ready } }
            if let running = state.running { return running }
            let running = Task { await self.check() }
            state.running = running
            return running
        }
        return await task.value
    }

    private func check() async -> Bool {
        let ready: Bool
        do {
            _ = try await deadline.run("the readiness check") { [store] in try await store.plans() }
            ready = true
        } catch {
            logger.error("readiness check failed", metadata: ["error": "\(error)"])
            ready = false
        }
        state.withLock { state in
            state.last = (ready, .now)
            state.running = nil
        }
        return ready
    }
}
