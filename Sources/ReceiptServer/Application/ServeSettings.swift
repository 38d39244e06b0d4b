import Clients
import Foundation
import ReceiptService
import ReceiptStore

/// `receiptverify serve`'s own settings, read from flags and the environment into a ``ServerConfiguration``.
///
/// Each setting is a flag (`--max-body-size`) or its environment variable (`RECEIPTVERIFY_MAX_BODY_SIZE`); the flag
/// wins. The settings every command shares (database, master key, log level) and the trust settings are read by the
/// executable and passed in. README.md's settings table, `.env.example` and `serve --help` list the same settings
/// (a test compares them).
public struct ServeSettings: Sendable {
    /// A setting's text was refused; the message names the flag or variable and what it must be.
    public struct Invalid: Error, CustomStringConvertible {
        public let description: String
    }

    /// The flags given, by name without dashes (`max-body-size`); absent flags are missing or nil.
    public var flags: [String: String?]
    /// The process environment.
    public var environment: [String: String]

    /// Creates settings from flags and an environment.
    public init(flags: [String: String?], environment: [String: String]) {
        self.flags = flags
        self.environment = environment
    }

    /// The environment variable of setting `name`: `RECEIPTVERIFY_` and the name in capitals, `-` as `_`.
    public static func variable(of name: String) -> String {
        "RECEIPTVERIFY_" + name.uppercased().replacingOccurrences(of: "-", with: "_")
    }

    /// The text of setting `name` and where it came from (`--name` or the variable), if given.
    func text(_ name: String) -> (text: String, source: String)? {
        if let flag = flags[name] ?? nil { return (flag, "--" + name) }
        let variable = Self.variable(of: name)
        return environment[variable].map { ($0, variable) }
    }

    /// A whole number in `range`, or `value` when the setting is absent.
    func number(_ name: String, _ range: ClosedRange<Int>, default value: Int) throws -> Int {
        guard let (text, source) = text(name) else { return value }
        guard let number = Int(text.trimmingCharacters(in: .whitespaces)), range.contains(number) else {
            throw Invalid(description: "\(source) must be a whole number in \(range.lowerBound)...\(range.upperBound)")
        }
        return number
    }

    /// An http(s) URL with a host, or `value` when the setting is absent.
    func url(_ name: String, default value: String) throws -> String {
        guard let (text, source) = text(name) else { return value }
        guard let parsed = URL(string: text), ["http", "https"].contains(parsed.scheme ?? ""), parsed.host != nil else {
            throw Invalid(description: "\(source) must be an http(s) URL")
        }
        return text
    }

    /// The server configuration these settings describe.
    ///
    /// - Parameters:
    ///   - store: the database, from the shared settings.
    ///   - trustAnchorDirectory: the trust settings, read by the executable.
    ///   - replacesBuiltInRoots: likewise.
    ///   - descriptorLimit: the process's open-file limit, which bounds `--max-connections`.
    public func configuration(
        store: StoreLocation, trustAnchorDirectory: String?, replacesBuiltInRoots: Bool, descriptorLimit: Int
    ) throws -> ServerConfiguration {
        let appleDefaults = VerifyReceiptConfiguration()
        let apple = VerifyReceiptConfiguration(
            productionURL: try url("apple-production-url", default: appleDefaults.productionURL),
            sandboxURL: try url("apple-sandbox-url", default: appleDefaults.sandboxURL),
            connectTimeout: .seconds(try number("apple-connect-timeout", 1...300, default: 3)),
            totalTimeout: .seconds(try number("apple-timeout", 1...600, default: 15)),
            maximumAttempts: try number("apple-attempts", 1...10, default: 3))
        // Connections are capped below the open-file limit, keeping descriptors for the database, logs and the
        // runtime: a process out of descriptors can die inside libdispatch.
        let bodySize = try number("max-body-size", 1024...(64 << 20), default: 2 << 20)
        let port = try number("port", 0...65535, default: 8080)
        let metricsPort = try number("metrics-port", 0...65535, default: 0)
        if metricsPort != 0, metricsPort == port {
            throw Invalid(description: "the metrics port must differ from the main port (\(port))")
        }
        var configuration = ServerConfiguration(
            hostname: text("hostname")?.text ?? "127.0.0.1", port: port, store: store,
            trustAnchorDirectory: trustAnchorDirectory, replacesBuiltInRoots: replacesBuiltInRoots,
            maximumBodySize: bodySize,
            maximumBodyMemory: try number(
                "max-body-memory", bodySize...(16 << 30), default: max(64 << 20, bodySize)),
            authenticationCacheTTL: .seconds(try number("auth-cache-ttl", 0...3600, default: 5)),
            idleTimeout: try number("idle-timeout", 0...3600, default: 30).nonZeroSeconds,
            maximumConnections: try number(
                "max-connections", 1...max(1, descriptorLimit - 64),
                default: Self.defaultConnections(under: descriptorLimit)),
            requestTimeout: try number("request-timeout", 0...3600, default: 30).nonZeroSeconds,
            failedAuthenticationsPerSecond: try number("auth-failures-per-second", 0...1_000_000, default: 10).nonZero,
            databaseTimeout: try number("database-timeout-ms", 0...600_000, default: 2_000).nonZeroMilliseconds,
            shutdownTimeout: .seconds(try number("shutdown-timeout", 1...3600, default: 25)),
            usageFlushInterval: .milliseconds(try number("usage-flush-interval-ms", 10...60_000, default: 1000)),
            apple: apple, metricsPort: metricsPort.nonZero,
            metricsHostname: text("metrics-hostname")?.text ?? "127.0.0.1",
            publicMetrics: try onOff("metrics-public", default: false), trustedProxies: try trustedProxies(),
            retention: try retention(),
            publicURL: text("public-url") == nil ? nil : try url("public-url", default: ""),
            openID: try openID(), customers: try customers(),
            storeKit: try storeKit(acceptsTestSignatures: trustAnchorDirectory != nil),
            appleFinishFirstRetry: .seconds(try number("storekit-finish-retry-seconds", 1...3_600, default: 60)),
            renewalExtensionPollInterval: TimeInterval(
                try number("storekit-extension-poll-seconds", 1...86_400, default: 300)),
            webhookTimeout: .seconds(try number("webhook-timeout", 1...60, default: 10)),
            webhookRetry: RetryPolicy(
                first: .seconds(try number("webhook-retry-seconds", 1...3_600, default: 30))),
            webhookDeliveriesPerSecond: try number("webhook-deliveries-per-second", 1...10_000, default: 100),
            webhookPrivateURLs: try onOff("webhook-private-urls", default: false),
            notificationReconcileInterval: try number("notification-reconcile-hours", 0...168, default: 6).nonZero.map {
                .seconds($0 * 3_600)
            })
        configuration.googlePlay = try googlePlay()
        configuration.googleAcknowledgeFirstRetry = .seconds(
            try number("google-acknowledge-retry-seconds", 1...3_600, default: 60))
        configuration.googleVoidedInterval = .seconds(
            try number("google-voided-poll-seconds", 1...86_400, default: 3_600))
        if let directory = text("export-directory")?.text, !directory.isEmpty {
            configuration.exportDirectory = directory
        }
        configuration.exportCheckInterval = .seconds(try number("export-check-seconds", 1...86_400, default: 600))
        return configuration
    }

    /// The Google Play Developer API client's settings: its base URL and Google's token endpoint (both Google's by
    /// default; a stand-in's in tests), and how long an answer is reused.
    func googlePlay() throws -> GooglePlayConfiguration {
        GooglePlayConfiguration(
            apiURL: try url("google-play-api-url", default: GooglePlayConfiguration.googleAPIURL),
            tokenURL: try url("google-oauth-token-url", default: GooglePlayConfiguration.googleTokenURL),
            cacheLifetime: .seconds(try number("google-play-cache-seconds", 0...3_600, default: 30)),
            pushKeysURL: try url("google-pubsub-jwks-url", default: GooglePlayConfiguration.googlePushKeysURL))
    }

    /// The App Store Server API client's settings. Signed answers may chain to a `--trust-anchors` root only when
    /// both base URLs are not Apple's (a stand-in for tests): Apple's own hosts are held to Apple's roots.
    func storeKit(acceptsTestSignatures: Bool) throws -> AppStoreServerAPIConfiguration {
        let defaults = AppStoreServerAPIConfiguration()
        var configuration = AppStoreServerAPIConfiguration(
            productionURL: try url("storekit-production-url", default: defaults.productionURL),
            sandboxURL: try url("storekit-sandbox-url", default: defaults.sandboxURL),
            // Apple allows 50 a second for the look-ups in production, a tenth of that in the sandbox.
            productionRequestsPerSecond: try number("storekit-requests-per-second", 1...50, default: 40),
            sandboxRequestsPerSecond: try number("storekit-sandbox-requests-per-second", 1...5, default: 4),
            totalTimeout: .seconds(try number("storekit-timeout", 1...120, default: 10)),
            cacheLifetime: .seconds(try number("storekit-cache-seconds", 0...3_600, default: 30)))
        // Apple's by host, whatever the path, case or trailing slash.
        let isApple = { (url: String) in
            let host = URL(string: url)?.host?.lowercased() ?? ""
            return host == "apple.com" || host.hasSuffix(".apple.com")
        }
        configuration.acceptsTestSignatures =
            acceptsTestSignatures && !isApple(configuration.productionURL) && !isApple(configuration.sandboxURL)
        return configuration
    }

    /// The identity provider, when an issuer is given (then the client id and secret are required).
    func openID() throws -> OpenIDConfiguration? {
        guard text("oidc-issuer") != nil else {
            if text("oidc-client-id") != nil {
                throw Invalid(description: "--oidc-client-id needs --oidc-issuer")
            }
            return nil
        }
        let issuer = try url("oidc-issuer", default: "")
        // The redirect URI the issuer is told is the public URL's: a default one would be this host's address.
        guard text("public-url") != nil else { throw Invalid(description: "--oidc-issuer needs --public-url") }
        guard let clientID = text("oidc-client-id")?.text, !clientID.isEmpty else {
            throw Invalid(description: "--oidc-issuer needs --oidc-client-id")
        }
        guard let secret = environment["RECEIPTVERIFY_OIDC_CLIENT_SECRET"], !secret.isEmpty else {
            throw Invalid(description: "--oidc-issuer needs the client secret in RECEIPTVERIFY_OIDC_CLIENT_SECRET")
        }
        return OpenIDConfiguration(
            issuer: issuer, clientID: clientID, clientSecret: secret, displayName: text("oidc-name")?.text ?? "Google")
    }

    /// An `on`/`off` setting (`true`/`false`, `yes`/`no` too), or `value` when it is absent.
    func onOff(_ name: String, default value: Bool) throws -> Bool {
        guard let (text, source) = text(name) else { return value }
        switch text.lowercased() {
        case "on", "true", "yes": return true
        case "off", "false", "no": return false
        default: throw Invalid(description: "\(source) must be on or off")
        }
    }

    /// How long notifications, events and audit entries are kept; 0 days keeps them for ever.
    func retention() throws -> RetentionPolicy {
        func days(_ name: String, _ range: ClosedRange<Int>, default value: Int) throws -> Duration? {
            let days = try number(name, 0...range.upperBound, default: value)
            guard days != 0 else { return nil }
            guard days >= range.lowerBound else {
                let source = text(name)?.source ?? name
                throw Invalid(
                    description:
                        "\(source) must be 0 (for ever) or a whole number in \(range.lowerBound)...\(range.upperBound)")
            }
            return .seconds(days * 86_400)
        }
        return RetentionPolicy(
            notifications: try days("retention-notifications-days", 8...36_500, default: 90),
            events: try days("retention-events-days", 1...36_500, default: 30),
            audit: try days("retention-audit-days", 1...36_500, default: 730))
    }

    /// The reverse proxies whose forwarding headers are believed.
    func trustedProxies() throws -> TrustedProxies {
        guard let (text, source) = text("trusted-proxies") else { return TrustedProxies() }
        do {
            return try TrustedProxies.parse(text)
        } catch {
            throw Invalid(
                description:
                    "\(source): '\(error.entry)' is not an IP address or CIDR network (10.0.0.0/8, fd00::/8)")
        }
    }

    /// Sign-up and session settings.
    func customers() throws -> CustomerSettings {
        var settings = CustomerSettings()
        settings.allowsSelfSignUp = try onOff("self-signup", default: true)
        settings.sessionIdleTimeout = Double(try number("session-idle-minutes", 1...43_200, default: 120) * 60)
        settings.sessionLifetime = Double(try number("session-lifetime-hours", 1...8_760, default: 168) * 3_600)
        settings.signInLinkLifetime = Double(try number("login-link-minutes", 1...1_440, default: 15) * 60)
        return settings
    }

    /// Descriptors kept free of connections for the database pool, logs, files and the runtime.
    public static let reservedDescriptors = 256

    /// The default connection cap under `limit`: three quarters of it, and at least ``reservedDescriptors`` free.
    public static func defaultConnections(under limit: Int) -> Int {
        max(16, min(limit * 3 / 4, limit - reservedDescriptors))
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
