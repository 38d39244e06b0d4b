import ArgumentParser
import Foundation
import Logging
import ReceiptServer
import ReceiptService
import ReceiptStore

/// Options every command takes: where the data is, the master key, and the output format.
///
/// Each option falls back to an environment variable, then to a default that works on a fresh machine.
struct GlobalOptions: ParsableArguments {
    @Option(help: "SQLite file path or postgres:// URL. Env: RECEIPTVERIFY_DATABASE_URL. Default: receiptverify.sqlite")
    var database: String?

    @Option(
        help:
            "Master key file, created (mode 0600) on first run. Env: RECEIPTVERIFY_MASTER_KEY_FILE; RECEIPTVERIFY_MASTER_KEY (base64) overrides it. Default: receiptverify.key"
    )
    var masterKeyFile: String?

    @Option(help: "Log level: trace, debug, info, notice, warning, error, critical. Env: RECEIPTVERIFY_LOG_LEVEL")
    var logLevel: String?

    @Flag(help: "Print JSON instead of text.")
    var json = false

    private var environment: [String: String] { ProcessInfo.processInfo.environment }

    var storeLocation: StoreLocation {
        StoreLocation(database ?? environment["RECEIPTVERIFY_DATABASE_URL"] ?? "receiptverify.sqlite")
    }

    var masterKeySource: MasterKeySource {
        if masterKeyFile == nil, let base64 = environment["RECEIPTVERIFY_MASTER_KEY"] { return .base64(base64) }
        return .file(path: masterKeyFile ?? environment["RECEIPTVERIFY_MASTER_KEY_FILE"] ?? "receiptverify.key")
    }

    /// The process's logger, writing to standard error so `--json` output stays clean; call once per process.
    func logger() throws -> Logger {
        LoggingSystem.bootstrap(LineLogHandler.init(label:))
        let text = logLevel ?? environment["RECEIPTVERIFY_LOG_LEVEL"] ?? "error"
        guard let level = Logger.Level(rawValue: text.lowercased()) else {
            throw CommandFailure("unknown log level '\(text)'")
        }
        var logger = Logger(label: "receiptverify")
        logger.logLevel = level
        return logger
    }

    /// Opens the store with the tenancy service over it, runs `body`, and prints a one-line error on failure.
    func withTenancy<T: Sendable>(_ body: @Sendable (TenancyService) async throws -> T) async throws -> T {
        try await reportingErrors {
            let logger = try logger()
            let (masterKey, created) = try masterKeySource.load()
            if created, case .file(let path) = masterKeySource {
                FileHandle.standardError.write(Data("note: created a new master key in \(path); back it up\n".utf8))
            }
            return try await storeLocation.withStore(logger: logger) { store in
                var tenancy = TenancyService(store: store, masterKey: masterKey)
                tenancy.allowsPrivateWebhookURLs = try Self.allowsPrivateWebhookURLs()
                try await tenancy.checkMasterKey()
                return try await body(tenancy)
            }
        }
    }
}

extension GlobalOptions {
    /// `RECEIPTVERIFY_WEBHOOK_PRIVATE_URLS` (on or off, default off), as `serve --webhook-private-urls` reads it.
    static func allowsPrivateWebhookURLs() throws -> Bool {
        switch ProcessInfo.processInfo.environment["RECEIPTVERIFY_WEBHOOK_PRIVATE_URLS"]?.lowercased() {
        case nil, "", "off": return false
        case "on": return true
        case let other?:
            throw CommandFailure("RECEIPTVERIFY_WEBHOOK_PRIVATE_URLS must be on or off, not \(other)")
        }
    }
}

/// A failure the command reports as one line on standard error, exiting with status 1.
struct CommandFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Runs `body`; turns any failure into one `error: …` line on standard error and exit status 1.
func reportingErrors<T>(_ body: () async throws -> T) async throws -> T {
    do {
        return try await body()
    } catch let error as ExitCode {
        throw error
    } catch {
        let message: String =
            switch error {
            case let error as ServiceError: error.reason.isEmpty ? error.code.rawValue : error.reason
            case let error as CommandFailure: error.description
            default: String(describing: error)
            }
        FileHandle.standardError.write(Data("error: \(message)\n".utf8))
        throw ExitCode(1)
    }
}
