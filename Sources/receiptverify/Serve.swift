import AppleClients
import ArgumentParser
import Foundation
import Logging
import ReceiptServer
import NIOCore
import NIOPosix
import ReceiptService

/// `receiptverify serve`: runs the HTTP service until SIGTERM/SIGINT.
struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run the HTTP service (applies migrations first; stops gracefully on SIGTERM/SIGINT).")

    @Option(help: "Address to listen on. Env: RECEIPTVERIFY_HOSTNAME. Default: 127.0.0.1")
    var hostname: String?

    @Option(help: "TCP port to listen on (0: any free port). Env: RECEIPTVERIFY_PORT. Default: 8080")
    var port: String?

    @OptionGroup var trust: TrustOptions

    @Option(help: "Largest request body in bytes (413 beyond). Env: RECEIPTVERIFY_MAX_BODY_SIZE. Default: 2097152")
    var maxBodySize: String?

    @Option(
        help:
            "Bytes all request bodies being read may hold together (503 beyond). Env: RECEIPTVERIFY_MAX_BODY_MEMORY. Default: 67108864"
    )
    var maxBodyMemory: String?

    @Option(
        help: "Seconds an API key/app lookup is reused (0: off). Env: RECEIPTVERIFY_AUTH_CACHE_TTL. Default: 5")
    var authCacheTTL: String?

    @Option(
        help:
            "Seconds a connection may send nothing before it is closed (0: never). Env: RECEIPTVERIFY_IDLE_TIMEOUT. Default: 30"
    )
    var idleTimeout: String?

    @Option(
        help:
            "Connections open at once; more are closed at once. Env: RECEIPTVERIFY_MAX_CONNECTIONS. Default: 3/4 of the open-file limit"
    )
    var maxConnections: String?

    @Option(
        help:
            "Seconds a client has to send a whole request, head and body (0: no limit). Env: RECEIPTVERIFY_REQUEST_TIMEOUT. Default: 30"
    )
    var requestTimeout: String?

    @Option(
        help:
            "Failed authentications per client address per second before its lookups stop reaching the database (0: no limit). Env: RECEIPTVERIFY_AUTH_FAILURES_PER_SECOND. Default: 10"
    )
    var authFailuresPerSecond: String?

    @Option(
        help:
            "Milliseconds a request, /readyz or a usage flush waits for the database before answering 503 (0: no limit). Env: RECEIPTVERIFY_DATABASE_TIMEOUT_MS. Default: 2000"
    )
    var databaseTimeoutMs: String?

    @Option(help: "Seconds a graceful stop may take. Env: RECEIPTVERIFY_SHUTDOWN_TIMEOUT. Default: 25")
    var shutdownTimeout: String?

    @Option(
        help:
            "Milliseconds usage counts wait in memory before they are written. Env: RECEIPTVERIFY_USAGE_FLUSH_INTERVAL_MS. Default: 1000"
    )
    var usageFlushIntervalMs: String?

    @Option(help: "Apple's verifyReceipt production URL. Env: RECEIPTVERIFY_APPLE_PRODUCTION_URL. Default: Apple's")
    var appleProductionURL: String?

    @Option(help: "Apple's verifyReceipt sandbox URL. Env: RECEIPTVERIFY_APPLE_SANDBOX_URL. Default: Apple's")
    var appleSandboxURL: String?

    @Option(help: "Seconds to open a connection to Apple. Env: RECEIPTVERIFY_APPLE_CONNECT_TIMEOUT. Default: 3")
    var appleConnectTimeout: String?

    @Option(
        help: "Seconds for a whole exchange with Apple, retries included. Env: RECEIPTVERIFY_APPLE_TIMEOUT. Default: 15"
    )
    var appleTimeout: String?

    @Option(help: "Attempts per Apple environment on retryable failures. Env: RECEIPTVERIFY_APPLE_ATTEMPTS. Default: 3")
    var appleAttempts: String?

    @OptionGroup var options: GlobalOptions

    func run() async throws {
        // Swift concurrency's jobs run on NIO's event loops instead of a second pool of threads: a request's work
        // then stays on the loop that read it, with no thread hops and no two pools competing for the cores, which
        // held p99 at 14-31 x p50 under load (docs/performance.md, "The tail"). Only the server does this.
        _ = NIOSingletons.unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor()
        try await reportingErrors {
            let environment = ProcessInfo.processInfo.environment
            var logger = try options.logger()
            if options.logLevel == nil, environment["RECEIPTVERIFY_LOG_LEVEL"] == nil { logger.logLevel = .info }
            func setting(_ flag: String?, _ name: String) -> (text: String, name: String)? {
                if let flag { return (flag, "--" + name) }
                let variable = "RECEIPTVERIFY_" + name.uppercased().replacingOccurrences(of: "-", with: "_")
                return environment[variable].map { ($0, variable) }
            }
            func number(_ flag: String?, _ name: String, _ range: ClosedRange<Int>, default value: Int) throws -> Int {
                guard let (text, source) = setting(flag, name) else { return value }
                guard let number = Int(text), range.contains(number) else {
                    throw CommandFailure(
                        "\(source) must be a whole number in \(range.lowerBound)...\(range.upperBound)")
                }
                return number
            }
            func url(_ flag: String?, _ name: String, default value: String) throws -> String {
                guard let (text, source) = setting(flag, name) else { return value }
                guard let parsed = URL(string: text), ["http", "https"].contains(parsed.scheme ?? ""),
                    parsed.host != nil
                else { throw CommandFailure("\(source) must be an http(s) URL") }
                return text
            }
            let defaults = VerifyReceiptConfiguration()
            let apple = VerifyReceiptConfiguration(
                productionURL: try url(appleProductionURL, "apple-production-url", default: defaults.productionURL),
                sandboxURL: try url(appleSandboxURL, "apple-sandbox-url", default: defaults.sandboxURL),
                connectTimeout: .seconds(try number(appleConnectTimeout, "apple-connect-timeout", 1...300, default: 3)),
                totalTimeout: .seconds(try number(appleTimeout, "apple-timeout", 1...600, default: 15)),
                maximumAttempts: try number(appleAttempts, "apple-attempts", 1...10, default: 3))
            // Connections are capped below the open-file limit (raised to its hard value first), keeping descriptors
            // for the database, logs and the runtime: a process out of descriptors can die inside libdispatch.
            let descriptors = DescriptorLimit.raise()
            let connectionRange = 1...max(1, descriptors - 64)
            let bodySize = try number(maxBodySize, "max-body-size", 1024...(64 << 20), default: 2 << 20)
            let configuration = ServerConfiguration(
                hostname: setting(hostname, "hostname")?.text ?? "127.0.0.1",
                port: try number(port, "port", 0...65535, default: 8080), store: options.storeLocation,
                trustAnchorDirectory: trust.directory, replacesBuiltInRoots: try trust.replacesBuiltInRoots(),
                maximumBodySize: bodySize,
                maximumBodyMemory: try number(
                    maxBodyMemory, "max-body-memory", bodySize...(16 << 30), default: max(64 << 20, bodySize)),
                authenticationCacheTTL: .seconds(try number(authCacheTTL, "auth-cache-ttl", 0...3600, default: 5)),
                idleTimeout: try number(idleTimeout, "idle-timeout", 0...3600, default: 30).nonZeroSeconds,
                maximumConnections: try number(
                    maxConnections, "max-connections", connectionRange,
                    default: DescriptorLimit.defaultConnections(under: descriptors)),
                requestTimeout: try number(requestTimeout, "request-timeout", 0...3600, default: 30).nonZeroSeconds,
                failedAuthenticationsPerSecond: try number(
                    authFailuresPerSecond, "auth-failures-per-second", 0...1_000_000, default: 10
                ).nonZero,
                databaseTimeout: try number(databaseTimeoutMs, "database-timeout-ms", 0...600_000, default: 2_000)
                    .nonZeroMilliseconds,
                shutdownTimeout: .seconds(try number(shutdownTimeout, "shutdown-timeout", 1...3600, default: 25)),
                usageFlushInterval: .milliseconds(
                    try number(usageFlushIntervalMs, "usage-flush-interval-ms", 10...60_000, default: 1000)),
                apple: apple)
            let (masterKey, _) = try options.masterKeySource.load()
            try await runServer(configuration: configuration, masterKey: masterKey, logger: logger)
        }
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

extension Int {
    /// This number, or nil for 0 ("no limit").
    fileprivate var nonZero: Int? { self == 0 ? nil : self }

    /// This many milliseconds, or nil for 0 ("no limit").
    fileprivate var nonZeroMilliseconds: Duration? { self == 0 ? nil : .milliseconds(self) }

    /// This many seconds, or nil for 0 ("never").
    fileprivate var nonZeroSeconds: Duration? { self == 0 ? nil : .seconds(self) }
}
