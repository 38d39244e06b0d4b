import Foundation
import Logging
import ReceiptService
import ReceiptStore

/// Runs `body` with tenancy over a fresh SQLite file (removed afterwards) and a silent logger.
func withTemporaryTenancy<T: Sendable>(
    _ body: @Sendable (TenancyService, Logger) async throws -> T
) async throws -> T {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("rv-\(UUID().uuidString).sqlite").path
    defer {
        for suffix in ["", "-wal", "-shm", "-ledger", "-statuses", "-customers"] {
            try? FileManager.default.removeItem(atPath: path + suffix)
        }
    }
    let logger = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
    return try await StoreLocation.sqlite(path: path).withStore(logger: logger) { store in
        try await body(TenancyService(store: store, masterKey: MasterKey.generate()), logger)
    }
}
