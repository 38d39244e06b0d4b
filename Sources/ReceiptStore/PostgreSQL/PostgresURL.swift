import Foundation
import NIOSSL
import PostgresNIO
import ReceiptService

/// Reads `postgres://user:password@host:port/database?sslmode=disable|prefer|require` into a client configuration.
///
/// `?host=/path/to/socket/dir` connects over a unix socket instead (as libpq does). The default `sslmode` is
/// `prefer`, as in libpq.
enum PostgresURL {
    /// The longest a ledger transaction waits for a row lock (`?lock_timeout=SECONDS`, 1-20; default 10): well below
    /// the time a caller waits for a commit that began (``StoreDeadline/committingLimit``, 60 s at least), so that a
    /// transaction stuck behind a peer's lock is aborted by the database rather than committed after its caller was
    /// answered 503 (money review M11).
    static let defaultLedgerLockTimeout = Duration.seconds(10)

    /// The client configuration and the ledger's lock timeout `text` asks.
    static func configuration(from text: String) throws -> (
        client: PostgresClient.Configuration, ledgerLockTimeout: Duration
    ) {
        var ledgerLockTimeout = defaultLedgerLockTimeout
        guard let components = URLComponents(string: text),
            components.scheme == "postgres" || components.scheme == "postgresql"
        else {
            throw ServiceError(.invalidArgument, "database URL must look like postgres://user:password@host/database")
        }
        let query = Dictionary(
            (components.queryItems ?? []).map { ($0.name, $0.value ?? "") }, uniquingKeysWith: { _, last in last })
        let username = components.user.flatMap { $0.removingPercentEncoding } ?? "postgres"
        let password = components.password.flatMap { $0.removingPercentEncoding }
        let path = components.path.hasPrefix("/") ? String(components.path.dropFirst()) : components.path
        let database = path.isEmpty ? username : path

        var configuration: PostgresClient.Configuration
        if let socketDirectory = query["host"], socketDirectory.hasPrefix("/") {
            let port = components.port ?? 5432
            configuration = .init(
                unixSocketPath: "\(socketDirectory)/.s.PGSQL.\(port)", username: username, password: password,
                database: database)
        } else {
            guard let host = components.host, !host.isEmpty else {
                throw ServiceError(.invalidArgument, "database URL has no host")
            }
            let tls: PostgresClient.Configuration.TLS
            switch query["sslmode"] ?? "prefer" {
            case "disable": tls = .disable
            case "prefer", "allow": tls = .prefer(.makeClientConfiguration())
            case "require", "verify-ca", "verify-full": tls = .require(.makeClientConfiguration())
            case let other:
                throw ServiceError(.invalidArgument, "database URL: unknown sslmode '\(other)'")
            }
            configuration = .init(
                host: host, port: components.port ?? 5432, username: username, password: password,
                database: database, tls: tls)
        }
        if let lockTimeout = query["lock_timeout"] {
            guard let seconds = Int(lockTimeout), (1...20).contains(seconds) else {
                throw ServiceError(.invalidArgument, "database URL: lock_timeout must be 1-20 (seconds)")
            }
            ledgerLockTimeout = .seconds(seconds)
        }
        if let poolSize = query["pool_size"] {
            guard let size = Int(poolSize), (1...1000).contains(size) else {
                throw ServiceError(.invalidArgument, "database URL: pool_size must be 1-1000")
            }
            configuration.options.maximumConnections = size
        }
        return (configuration, ledgerLockTimeout)
    }
}
