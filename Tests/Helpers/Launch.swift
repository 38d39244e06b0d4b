import Foundation

/// One launch of a child process at a time in the test process: Foundation's `Process.run()` on Linux crashed in its
/// `memcpy` while parallel tests started commands, with the test process holding well over a thousand open
/// descriptors; scripts/test.sh now runs at most 24 tests at once, which keeps them near 260 (docs/performance.md,
/// "Test runs and open descriptors"). Serializing the launches costs nothing; the children run and are waited for
/// concurrently.
public func launch(_ process: Process) throws {
    try launchLock.withLock { try process.run() }
}

private let launchLock = NSLock()
