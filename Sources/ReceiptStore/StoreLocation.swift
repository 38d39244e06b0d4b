import Foundation
import Logging
import PostgresNIO
import ReceiptService

/// Where tenancy data lives: an SQLite file (the default) or a PostgreSQL database.
public enum StoreLocation: Sendable, Equatable {
    /// An SQLite file at this path, created when missing.
    case sqlite(path: String)
    /// A PostgreSQL database at this `postgres://` URL.
    case postgres(url: String)

    /// Reads a database setting: a `postgres://` or `postgresql://` URL, `sqlite:PATH`, or a plain file path.
    public init(_ text: String) {
        if text.hasPrefix("postgres://") || text.hasPrefix("postgresql://") {
            self = .postgres(url: text)
        } else if text.hasPrefix("sqlite://") {
            self = .sqlite(path: String(text.dropFirst("sqlite://".count)))
        } else if text.hasPrefix("sqlite:") {
            self = .sqlite(path: String(text.dropFirst("sqlite:".count)))
        } else {
            self = .sqlite(path: text)
        }
    }

    /// A description safe for logs: the PostgreSQL password is never shown.
    public var redacted: String {
        switch self {
        case .sqlite(let path): return "sqlite:\(path)"
        case .postgres(let url):
            guard let at = url.lastIndex(of: "@"), let schemeEnd = url.range(of: "://") else { return url }
            let credentials = url[schemeEnd.upperBound..<at]
            let user = credentials.split(separator: ":", maxSplits: 1).first ?? ""
            return String(url[..<schemeEnd.upperBound]) + user + ":***" + String(url[at...])
        }
    }

    /// Opens the store, migrates it, runs `body` with it, and closes it; PostgreSQL's pool runs meanwhile.
    public func withStore<T: Sendable>(
        logger: Logger, _ body: @Sendable (any DataStore) async throws -> T
    ) async throws -> T {
        switch self {
        case .sqlite(let path):
            let store = try await SQLiteStore.open(path: path, logger: logger)
            do {
                try await store.migrate()
                let result = try await body(store)
                try await store.close()
                return result
            } catch {
                try? await store.close()
                throw error
            }
        case .postgres(let url):
            let store = try PostgresStore(url: url, logger: logger)
            return try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await store.run() }
                defer { group.cancelAll() }
                try await store.migrate()
                return try await body(store)
            }
        }
    }

    /// The most database connections a store at this location opens: PostgreSQL's pool size (the URL's `pool_size`,
    /// or PostgresNIO's default), 1 for SQLite's one connection.
    public var poolSize: Int {
        switch self {
        case .sqlite: return 1
        case .postgres(let url):
            return (try? PostgresURL.configuration(from: url).client.options.maximumConnections) ?? 1
        }
    }
}
