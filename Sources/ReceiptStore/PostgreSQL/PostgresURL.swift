import Foundation
import NIOSSL
import PostgresNIO
import ReceiptService

/// Reads `postgres://user:password@host:port/database?sslmode=disable|prefer|require` into a client configuration.
///
/// `?host=/path/to/socket/dir` connects over a unix socket instead (as libpq does). The default `sslmode` is
/// `prefer`, as in libpq.
enum PostgresURL {
    static func configuration(from text: String) throws -> PostgresClient.Configuration {
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
        if let poolSize = query["pool_size"] {
            guard let size = Int(poolSize), (1...1000).contains(size) else {
                throw ServiceError(.invalidArgument, "database URL: pool_size must be 1-1000")
            }
            configuration.options.maximumConnections = size
        }
        return configuration
    }
}
