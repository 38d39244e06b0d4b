import ArgumentParser
import Foundation
import Logging
import ReceiptServer
import ReceiptService

/// `receiptverify serve`: runs the HTTP service until SIGTERM/SIGINT.
struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run the HTTP service (applies migrations first; stops gracefully on SIGTERM/SIGINT).")

    @Option(help: "Address to listen on. Env: RECEIPTVERIFY_HOSTNAME. Default: 127.0.0.1")
    var hostname: String?

    @Option(help: "TCP port to listen on. Env: RECEIPTVERIFY_PORT. Default: 8080")
    var port: Int?

    @OptionGroup var options: GlobalOptions

    func run() async throws {
        try await reportingErrors {
            let environment = ProcessInfo.processInfo.environment
            var logger = try options.logger()
            if options.logLevel == nil, environment["RECEIPTVERIFY_LOG_LEVEL"] == nil { logger.logLevel = .info }
            guard let port = try port ?? environment["RECEIPTVERIFY_PORT"].map(parsePort) ?? 8080,
                (0...65535).contains(port)
            else { throw CommandFailure("port must be 0-65535") }
            let configuration = ServerConfiguration(
                hostname: hostname ?? environment["RECEIPTVERIFY_HOSTNAME"] ?? "127.0.0.1", port: port,
                store: options.storeLocation)
            let (masterKey, _) = try options.masterKeySource.load()
            try await runServer(configuration: configuration, masterKey: masterKey, logger: logger)
        }
    }

    private func parsePort(_ text: String) throws -> Int? {
        guard let port = Int(text) else { throw CommandFailure("RECEIPTVERIFY_PORT must be a number") }
        return port
    }
}

/// `receiptverify migrate`: applies pending migrations and exits.
struct Migrate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Apply pending database migrations.")

    @OptionGroup var options: GlobalOptions

    func run() async throws {
        try await options.withTenancy { _ in }
        if !options.json { print("database is up to date") } else { print(#"{"status":"ok"}"#) }
    }
}
