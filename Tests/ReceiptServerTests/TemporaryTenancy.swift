import Foundation
import Logging
import ReceiptService
import ReceiptStore

/// Runs `body` with a migrated store over a fresh SQLite file and a silent logger; every file of the store
/// (``SQLiteStore/fileSuffixes``) is removed afterwards.
func withTemporarySQLite<T: Sendable>(
    _ body: @Sendable (any DataStore, Logger) async throws -> T
) async throws -> T {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("rv-\(UUID().uuidString).sqlite").path
    defer {
        for suffix in SQLiteStore.fileSuffixes {
            try? FileManager.default.removeItem(atPath: path + suffix)
        }
    }
    let logger = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
    return try await StoreLocation.sqlite(path: path).withStore(logger: logger) { store in
        try await body(store, logger)
    }
}

/// Runs `body` with tenancy over a fresh SQLite file (removed afterwards) and a silent logger.
func withTemporaryTenancy<T: Sendable>(
    _ body: @Sendable (TenancyService, Logger) async throws -> T
) async throws -> T {
    try await withTemporarySQLite { store, logger in
        try await body(TenancyService(store: store, masterKey: MasterKey.generate()), logger)
    }
}
