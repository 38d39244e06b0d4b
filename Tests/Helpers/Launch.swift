import Foundation

/// One launch of a child process at a time in the test process: Foundation's `Process.run()` on Linux is not safe to
/// call from two threads at once (CI crashed twice in its `memcpy` while parallel tests started commands). Only the
/// launch is serialized; the children run and are waited for concurrently.
public func launch(_ process: Process) throws {
    try launchLock.withLock { try process.run() }
}

private let launchLock = NSLock()
