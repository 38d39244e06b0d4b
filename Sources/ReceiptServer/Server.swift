import Hummingbird
import Logging
import ReceiptService
import ReceiptStore
import ServiceLifecycle

/// Runs the service until SIGTERM or SIGINT: opens and migrates the store, checks the master key, serves HTTP,
/// and on a signal finishes in-flight requests before returning.
public func runServer(configuration: ServerConfiguration, masterKey: MasterKey, logger: Logger) async throws {
    logger.info(
        "starting receiptverify",
        metadata: [
            "database": "\(configuration.store.redacted)", "address": "\(configuration.hostname):\(configuration.port)",
        ])
    switch configuration.store {
    case .sqlite(let path):
        let store = try await SQLiteStore.open(path: path, logger: logger)
        do {
            try await serve(
                store: store, services: [], configuration: configuration, masterKey: masterKey, logger: logger)
            try await store.close()
        } catch {
            try? await store.close()
            throw error
        }
    case .postgres(let url):
        let store = try PostgresStore(url: url, logger: logger)
        try await serve(
            store: store, services: [store], configuration: configuration, masterKey: masterKey, logger: logger)
    }
}

private func serve(
    store: any TenancyStore, services: [any Service], configuration: ServerConfiguration, masterKey: MasterKey,
    logger: Logger
) async throws {
    let tenancy = TenancyService(store: store, masterKey: masterKey)
    var app = buildApplication(configuration: configuration, tenancy: tenancy, services: services, logger: logger)
    app.beforeServerStarts {
        try await store.migrate()
        try await tenancy.checkMasterKey()
    }
    try await app.runService()
}
