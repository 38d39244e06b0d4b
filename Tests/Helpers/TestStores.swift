import Foundation
import Logging
import PostgresNIO
import ReceiptService
import ReceiptStore

/// The stores the contract suite runs against.
public enum StoreKind: String, CaseIterable, Sendable, CustomStringConvertible {
    case sqlite
    case postgres

    public var description: String { rawValue }

    /// SQLite always; PostgreSQL when `RECEIPTVERIFY_TEST_POSTGRES_URL` names a server (the test script sets it).
    public static var available: [StoreKind] {
        TestPostgres.serverURL == nil ? [.sqlite] : [.sqlite, .postgres]
    }
}

/// A throwaway PostgreSQL database per test, on the server the test script started.
public enum TestPostgres {
    /// `postgres://…/postgres` on the test server, from `RECEIPTVERIFY_TEST_POSTGRES_URL`.
    public static var serverURL: String? { ProcessInfo.processInfo.environment["RECEIPTVERIFY_TEST_POSTGRES_URL"] }

    /// Creates a fresh database, passes its URL to `body`, and drops it afterwards.
    public static func withDatabase<T: Sendable>(_ body: (String) async throws -> T) async throws -> T {
        guard let server = serverURL else { throw TestSetupError("RECEIPTVERIFY_TEST_POSTGRES_URL is not set") }
        let name = "rv_test_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        try await admin(server) { client in
            try await client.query(PostgresQuery(unsafeSQL: "CREATE DATABASE \(name)"))
        }
        let url = databaseURL(server, name: name)
        do {
            let result = try await body(url)
            try await drop(name, server: server)
            return result
        } catch {
            try? await drop(name, server: server)
            throw error
        }
    }

    /// `server` with its database path replaced by `name`.
    public static func databaseURL(_ server: String, name: String) -> String {
        var components = URLComponents(string: server)!
        components.path = "/" + name
        return components.string!
    }

    private static func drop(_ name: String, server: String) async throws {
        try await admin(server) { client in
            try await client.query(PostgresQuery(unsafeSQL: "DROP DATABASE IF EXISTS \(name) WITH (FORCE)"))
        }
    }

    private static func admin(_ server: String, _ body: (PostgresClient) async throws -> Void) async throws {
        let components = URLComponents(string: server)!
        let query = Dictionary(uniqueKeysWithValues: (components.queryItems ?? []).map { ($0.name, $0.value ?? "") })
        let configuration: PostgresClient.Configuration
        if let socket = query["host"] {
            configuration = .init(
                unixSocketPath: "\(socket)/.s.PGSQL.\(components.port ?? 5432)",
                username: components.user ?? "postgres",
                password: components.password, database: "postgres")
        } else {
            configuration = .init(
                host: components.host ?? "127.0.0.1", port: components.port ?? 5432,
                username: components.user ?? "postgres", password: components.password, database: "postgres",
                tls: .disable)
        }
        let client = PostgresClient(configuration: configuration)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await client.run() }
            defer { group.cancelAll() }
            try await body(client)
        }
    }
}

/// Runs `body` with a fresh, migrated store of `kind`, removed afterwards.
public func withTestStore<T: Sendable>(
    _ kind: StoreKind, _ body: @Sendable (any DataStore, StoreLocation) async throws -> T
) async throws -> T {
    var logger = Logger(label: "test")
    logger.logLevel = .warning
    switch kind {
    case .sqlite:
        return try await withTemporaryDirectory { directory in
            let location = StoreLocation.sqlite(path: directory.appendingPathComponent("test.sqlite").path)
            return try await location.withStore(logger: logger) { try await body($0, location) }
        }
    case .postgres:
        return try await TestPostgres.withDatabase { url in
            let location = StoreLocation.postgres(url: url)
            return try await location.withStore(logger: logger) { try await body($0, location) }
        }
    }
}

/// The test environment lacks something a test needs.
public struct TestSetupError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// A fresh temporary directory for `body`, removed afterwards.
public func withTemporaryDirectory<T>(_ body: (URL) async throws -> T) async throws -> T {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("rv-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    return try await body(directory)
}
