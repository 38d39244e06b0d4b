import NIOCore
import NIOPosix
import Synchronization

/// A thread of a store's own, as an event loop and as a task executor. The store's connection completes its
/// operations on it, and its group commits (``GroupCommit``) run on it, so each statement of a group's transaction
/// resumes there at once. On the server's event loops (Swift concurrency's global executor in `serve`) each would wait
/// behind every request queued there, several milliseconds a statement under load (docs/performance.md, issue 21).
final class StoreThread: TaskExecutor {
    private let group: MultiThreadedEventLoopGroup
    /// Whether ``shutdown()`` was called: work enqueued after it runs on Swift concurrency's global executor, so
    /// that a task still preferring this thread fails on the closed store instead of never resuming.
    private let isShutDown = Mutex(false)
    /// The thread's event loop.
    let eventLoop: any EventLoop
    /// The thread, as a group of event loops (a connection pool's).
    var eventLoopGroup: any EventLoopGroup { group }

    init() {
        group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        eventLoop = group.next()
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let scheduled = isShutDown.withLock { isShutDown in
            guard !isShutDown else { return false }
            eventLoop.execute { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
            return true
        }
        if !scheduled { globalConcurrentExecutor.enqueue(ExecutorJob(job)) }
    }

    /// Stops the thread once the work enqueued before is done.
    func shutdown() {
        let first = isShutDown.withLock { isShutDown in
            defer { isShutDown = true }
            return !isShutDown
        }
        if first { group.shutdownGracefully { _ in } }
    }
}

/// A one-thread `NIOThreadPool` as a task executor: SQLite's connection runs each statement on the pool's thread, and
/// a group commit (``GroupCommit``) preferring this executor resumes there too, right after the statement, so a
/// group's transaction runs on one thread from `BEGIN` to `COMMIT` with no hand-off between threads
/// (docs/performance.md, issue 38). After the pool stops, work runs on Swift concurrency's global executor, so that a
/// task still preferring it fails on the closed store instead of never resuming.
final class ThreadPoolExecutor: TaskExecutor {
    private let pool: NIOThreadPool

    init(_ pool: NIOThreadPool) { self.pool = pool }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        pool.submit { state in
            switch state {
            case .active: job.runSynchronously(on: self.asUnownedTaskExecutor())
            case .cancelled: globalConcurrentExecutor.enqueue(ExecutorJob(job))
            }
        }
    }
}
