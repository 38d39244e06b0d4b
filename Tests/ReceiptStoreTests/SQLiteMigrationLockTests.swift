import Foundation
import Logging
import ReceiptService
import TestSupport
import Testing

@testable import ReceiptStore

/// SQLite's write lock: a process that opens the database while another holds the lock past the busy timeout (servers
/// and the CLI starting together on a loaded machine) waits its turn and migrates, rather than fail mid-migration; a
/// transaction cut off by its task's cancellation gives the lock back.
@Suite struct SQLiteMigrationLockTests {
    @Test func aMigrationWaitsOutAWriteLockHeldPastTheBusyTimeout() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory.appendingPathComponent("locked.sqlite").path
            let logger = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
            let holder = try await SQLiteStore.open(path: path, logger: logger)
            try await holder.migrate()
            // Every migration step takes the write lock (BEGIN IMMEDIATE), applied or not.
            let released = Date().addingTimeInterval(6.5)
            async let held: Void = holder.transaction {
                // The write lock, held longer than the 5 s busy timeout.
                _ = try await holder.query("UPDATE schema_migrations SET description = description")
                try await Task.sleep(for: .seconds(6.5))
            }
            try await Task.sleep(for: .milliseconds(200))
            let opener = try await SQLiteStore.open(path: path, logger: logger)
            // Closed whatever happens: an unclosed connection stops the test process.
            await #expect(throws: Never.self) { try await opener.migrate() }
            #expect(Date() >= released.addingTimeInterval(-0.5), "the migration waited for the lock")
            #expect(try await opener.plans().count == Plan.seeded.count)
            try? await held
            try await opener.close()
            try await holder.close()
        }
    }

    /// A transaction whose task is cancelled in the middle (a request past its deadline) is rolled back: the
    /// connection is left outside any transaction, and the write lock free for this and every other connection.
    @Test func aCancelledTransactionIsRolledBackAndLeavesTheLockFree() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory.appendingPathComponent("cancelled.sqlite").path
            let logger = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
            let store = try await SQLiteStore.open(path: path, logger: logger)
            try await store.migrate()
            let other = try await SQLiteStore.open(path: path, logger: logger)
            let began = AsyncStream<Void>.makeStream()
            let cancelled = Task {
                try await store.transaction {
                    _ = try await store.query("UPDATE schema_migrations SET description = 'changed'")
                    began.continuation.yield()
                    try await Task.sleep(for: .seconds(30))
                }
            }
            for await _ in began.stream { break }
            cancelled.cancel()
            await #expect(throws: (any Error).self) { try await cancelled.value }
            // This connection begins again, and the other takes the write lock without waiting out the busy timeout.
            let started = ContinuousClock.now
            await #expect(throws: Never.self) {
                try await store.transaction { _ = try await store.query("SELECT 1") }
                try await other.transaction { _ = try await other.query("SELECT 1") }
            }
            #expect(ContinuousClock.now - started < .seconds(4))
            let changed = try await other.query("SELECT 1 FROM schema_migrations WHERE description = 'changed'")
            #expect(changed.isEmpty, "the cancelled transaction's write was rolled back")
            try await other.close()
            try await store.close()
        }
    }
}
