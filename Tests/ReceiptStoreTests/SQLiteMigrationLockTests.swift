import Foundation
import Logging
import ReceiptService
import TestSupport
import Testing

@testable import ReceiptStore

/// A process that opens the SQLite database while another holds its write lock past the busy timeout (servers and the
/// CLI starting together on a loaded machine) waits its turn and migrates, rather than fail mid-migration.
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
}
