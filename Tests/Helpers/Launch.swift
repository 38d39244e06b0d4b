import Foundation

/// One launch of a child process at a time in the test process: Foundation's `Process.run()` on Linux crashed in its
/// `memcpy` while parallel tests started commands. The crashes came with the test process holding over about 1,360 open
/// descriptors (its listing of /proc/self/fd then fills its buffer), which scripts/test.sh now prevents by running at
/// most 24 tests at once; serializing the launches costs nothing. The children run and are waited for concurrently.
public func launch(_ process: Process) throws {
    try launchLock.withLock { try process.run() }
}

private let launchLock = NSLock()
