import Clients
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

    @Option(
        help:
            "App Store Server API production base URL. Env: RECEIPTVERIFY_STOREKIT_PRODUCTION_URL. Default: https://api.storekit.apple.com"
    )
    var storekitProductionURL: String?

    @Option(
        help:
            "App Store Server API sandbox base URL. Env: RECEIPTVERIFY_STOREKIT_SANDBOX_URL. Default: https://api.storekit-sandbox.apple.com"
    )
    var storekitSandboxURL: String?

    @Option(
        help:
            "App Store Server API requests per second per app, production. Env: RECEIPTVERIFY_STOREKIT_REQUESTS_PER_SECOND. Default: 40"
    )
    var storekitRequestsPerSecond: String?

    @Option(
        help:
            "App Store Server API requests per second per app, sandbox. Env: RECEIPTVERIFY_STOREKIT_SANDBOX_REQUESTS_PER_SECOND. Default: 4"
    )
    var storekitSandboxRequestsPerSecond: String?

    @Option(
        help:
            "Seconds for one App Store Server API call, retries and waits included. Env: RECEIPTVERIFY_STOREKIT_TIMEOUT. Default: 10"
    )
    var storekitTimeout: String?

    @Option(
        help:
            "Seconds an App Store Server API answer is reused (0: never). Env: RECEIPTVERIFY_STOREKIT_CACHE_SECONDS. Default: 30"
    )
    var storekitCacheSeconds: String?

    @Option(
        help:
            "Seconds before a failed Finish Transaction is asked again, doubling up to 6 h. Env: RECEIPTVERIFY_STOREKIT_FINISH_RETRY_SECONDS. Default: 60"
    )
    var storekitFinishRetrySeconds: String?

    @Option(
        help:
            "Seconds between asks of Apple where a mass renewal-date extension stands (1-86400). Env: RECEIPTVERIFY_STOREKIT_EXTENSION_POLL_SECONDS. Default: 300"
    )
    var storekitExtensionPollSeconds: String?

    @Option(
        name: .customLong("google-play-api-url"),
        help:
            "Google Play Developer API base URL. Env: RECEIPTVERIFY_GOOGLE_PLAY_API_URL. Default: https://androidpublisher.googleapis.com"
    )
    var googlePlayAPIURL: String?

    @Option(
        name: .customLong("google-oauth-token-url"),
        help:
            "Google's OAuth 2.0 token endpoint, where every service account grant is sent (whatever a key names). Env: RECEIPTVERIFY_GOOGLE_OAUTH_TOKEN_URL. Default: https://oauth2.googleapis.com/token"
    )
    var googleOAuthTokenURL: String?

    @Option(
        help:
            "A folder for daily export files: per app and ended UTC day, APP_ID/YYYY-MM-DD/{transactions,events,usage,customers}.jsonl, each written whole or not at all. Env: RECEIPTVERIFY_EXPORT_DIRECTORY. Default: none"
    )
    var exportDirectory: String?

    @Option(
        help:
            "Seconds between looks for daily export files due (--export-directory). Env: RECEIPTVERIFY_EXPORT_CHECK_SECONDS. Default: 600"
    )
    var exportCheckSeconds: String?

    @Option(
        name: .customLong("google-pubsub-jwks-url"),
        help:
            "Where Google's OIDC keys, which sign Pub/Sub's push tokens (Real-time Developer Notifications), are fetched. Env: RECEIPTVERIFY_GOOGLE_PUBSUB_JWKS_URL. Default: https://www.googleapis.com/oauth2/v3/certs"
    )
    var googlePubSubJWKSURL: String?

    @Option(
        help:
            "Seconds a Google Play Developer API answer is reused for the same purchase (0: never). Env: RECEIPTVERIFY_GOOGLE_PLAY_CACHE_SECONDS. Default: 30"
    )
    var googlePlayCacheSeconds: String?

    @Option(
        help:
            "Seconds before a failed Google acknowledgement (of a delivered purchase) is asked again, doubling up to 6 h. Env: RECEIPTVERIFY_GOOGLE_ACKNOWLEDGE_RETRY_SECONDS. Default: 60"
    )
    var googleAcknowledgeRetrySeconds: String?

    @Option(
        help:
            "Seconds between reads of each app's Google Play voided purchases (refunds revoke the ledger's rows) (1-86400). Env: RECEIPTVERIFY_GOOGLE_VOIDED_POLL_SECONDS. Default: 3600"
    )
    var googleVoidedPollSeconds: String?

    @Option(help: "Seconds for one webhook delivery attempt (1-60). Env: RECEIPTVERIFY_WEBHOOK_TIMEOUT. Default: 10")
    var webhookTimeout: String?

    @Option(
        help:
            "Seconds before a failed webhook delivery is tried again, doubling up to 6 h; dead after 72 h. Env: RECEIPTVERIFY_WEBHOOK_RETRY_SECONDS. Default: 30"
    )
    var webhookRetrySeconds: String?

    @Option(
        help:
            "Webhook delivery attempts a second, at most, per server (1-10000). Env: RECEIPTVERIFY_WEBHOOK_DELIVERIES_PER_SECOND. Default: 100"
    )
    var webhookDeliveriesPerSecond: String?

    @Option(
        help:
            "Hours between reconciliations of apps with App Store Server API credentials with Apple's Notification History (0: never). Env: RECEIPTVERIFY_NOTIFICATION_RECONCILE_HOURS. Default: 6"
    )
    var notificationReconcileHours: String?

    @Option(
        help:
            "Serve /metrics on this port instead of the main one (0: the main port). Env: RECEIPTVERIFY_METRICS_PORT. Default: 0"
    )
    var metricsPort: String?

    @Option(
        help: "Address of the metrics listener. Env: RECEIPTVERIFY_METRICS_HOSTNAME. Default: 127.0.0.1")
    var metricsHostname: String?

    @Option(
        help:
            "Days Apple's notifications are kept (8 at least; 0: for ever). Env: RECEIPTVERIFY_RETENTION_NOTIFICATIONS_DAYS. Default: 90"
    )
    var retentionNotificationsDays: String?

    @Option(
        help:
            "Days delivered and dead webhook events are kept (0: for ever). Env: RECEIPTVERIFY_RETENTION_EVENTS_DAYS. Default: 30"
    )
    var retentionEventsDays: String?

    @Option(
        help: "Days audit entries are kept (0: for ever). Env: RECEIPTVERIFY_RETENTION_AUDIT_DAYS. Default: 730")
    var retentionAuditDays: String?

    @Option(
        help:
            "on: the main port answers /metrics to anyone; off: only to requests from loopback that no proxy forwarded. Env: RECEIPTVERIFY_METRICS_PUBLIC. Default: off"
    )
    var metricsPublic: String?

    @Option(
        name: .customLong("webhook-private-urls"),
        help:
            "on: webhook URLs may be plain http and reach private and loopback addresses (a self-hosted server's own network); off: https to public addresses only. Env: RECEIPTVERIFY_WEBHOOK_PRIVATE_URLS. Default: off"
    )
    var webhookPrivateURLs: String?

    @Option(
        help:
            "CIDRs of reverse proxies (comma-separated) whose Forwarded / X-Forwarded-For headers name the client, for per-address budgets and the log. Env: RECEIPTVERIFY_TRUSTED_PROXIES. Default: none"
    )
    var trustedProxies: String?

    @Option(
        help:
            "The address customers reach the account screen at; https:// makes its cookies Secure. Env: RECEIPTVERIFY_PUBLIC_URL. Default: http://HOSTNAME:PORT"
    )
    var publicURL: String?

    @Option(
        help:
            "OpenID Connect issuer customers sign in with (https://accounts.google.com). Env: RECEIPTVERIFY_OIDC_ISSUER. Default: none (sign-in links only)"
    )
    var oidcIssuer: String?

    @Option(
        help:
            "Our client id at the issuer; its secret is read from RECEIPTVERIFY_OIDC_CLIENT_SECRET only. Env: RECEIPTVERIFY_OIDC_CLIENT_ID"
    )
    var oidcClientID: String?

    @Option(help: "The issuer's name on the sign-in button. Env: RECEIPTVERIFY_OIDC_NAME. Default: Google")
    var oidcName: String?

    @Option(
        help:
            "on: a first sign-in with a verified email creates a free account; off: only existing accounts sign in. Env: RECEIPTVERIFY_SELF_SIGNUP. Default: on"
    )
    var selfSignup: String?

    @Option(
        help: "Minutes a browser session may go unused. Env: RECEIPTVERIFY_SESSION_IDLE_MINUTES. Default: 120")
    var sessionIdleMinutes: String?

    @Option(
        help: "Hours a browser session lasts at most. Env: RECEIPTVERIFY_SESSION_LIFETIME_HOURS. Default: 168")
    var sessionLifetimeHours: String?

    @Option(help: "Minutes a sign-in link works. Env: RECEIPTVERIFY_LOGIN_LINK_MINUTES. Default: 15")
    var loginLinkMinutes: String?

    @OptionGroup var options: GlobalOptions

    /// The flags given, by name, for ``ServeSettings``.
    var flags: [String: String?] {
        [
            "hostname": hostname, "port": port, "max-body-size": maxBodySize, "max-body-memory": maxBodyMemory,
            "auth-cache-ttl": authCacheTTL, "idle-timeout": idleTimeout, "max-connections": maxConnections,
            "request-timeout": requestTimeout, "auth-failures-per-second": authFailuresPerSecond,
            "database-timeout-ms": databaseTimeoutMs, "shutdown-timeout": shutdownTimeout,
            "usage-flush-interval-ms": usageFlushIntervalMs, "apple-production-url": appleProductionURL,
            "apple-sandbox-url": appleSandboxURL, "apple-connect-timeout": appleConnectTimeout,
            "apple-timeout": appleTimeout, "apple-attempts": appleAttempts, "metrics-port": metricsPort,
            "metrics-hostname": metricsHostname, "metrics-public": metricsPublic,
            "webhook-private-urls": webhookPrivateURLs,
            "trusted-proxies": trustedProxies, "retention-notifications-days": retentionNotificationsDays,
            "retention-events-days": retentionEventsDays, "retention-audit-days": retentionAuditDays,
            "public-url": publicURL, "oidc-issuer": oidcIssuer,
            "oidc-client-id": oidcClientID, "oidc-name": oidcName, "self-signup": selfSignup,
            "session-idle-minutes": sessionIdleMinutes, "session-lifetime-hours": sessionLifetimeHours,
            "login-link-minutes": loginLinkMinutes, "storekit-production-url": storekitProductionURL,
            "storekit-sandbox-url": storekitSandboxURL, "storekit-requests-per-second": storekitRequestsPerSecond,
            "storekit-sandbox-requests-per-second": storekitSandboxRequestsPerSecond,
            "storekit-timeout": storekitTimeout, "storekit-cache-seconds": storekitCacheSeconds,
            "storekit-finish-retry-seconds": storekitFinishRetrySeconds,
            "storekit-extension-poll-seconds": storekitExtensionPollSeconds, "webhook-timeout": webhookTimeout,
            "google-play-api-url": googlePlayAPIURL, "google-oauth-token-url": googleOAuthTokenURL,
            "google-pubsub-jwks-url": googlePubSubJWKSURL,
            "export-directory": exportDirectory, "export-check-seconds": exportCheckSeconds,
            "google-play-cache-seconds": googlePlayCacheSeconds,
            "google-acknowledge-retry-seconds": googleAcknowledgeRetrySeconds,
            "google-voided-poll-seconds": googleVoidedPollSeconds,
            "webhook-retry-seconds": webhookRetrySeconds,
            "notification-reconcile-hours": notificationReconcileHours,
            "webhook-deliveries-per-second": webhookDeliveriesPerSecond,
        ]
    }

    func run() async throws {
        // Swift concurrency's jobs run on NIO's event loops instead of a second pool of threads: a request's work
        // then stays on the loop that read it, with no thread hops and no two pools competing for the cores, which
        // held p99 at 14-31 x p50 under load (docs/performance.md, "The tail"). Only the server does this.
        _ = NIOSingletons.unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor()
        try await reportingErrors {
            let environment = ProcessInfo.processInfo.environment
            var logger = try options.logger()
            if options.logLevel == nil, environment["RECEIPTVERIFY_LOG_LEVEL"] == nil { logger.logLevel = .info }
            let configuration: ServerConfiguration
            do {
                configuration = try ServeSettings(flags: flags, environment: environment).configuration(
                    store: options.storeLocation, trustAnchorDirectory: trust.directory,
                    replacesBuiltInRoots: try trust.replacesBuiltInRoots(),
                    // The soft open-file limit is raised to the hard one first (a systemd unit without LimitNOFILE
                    // starts at 1,024).
                    descriptorLimit: DescriptorLimit.raise())
            } catch let invalid as ServeSettings.Invalid {
                throw CommandFailure(invalid.description)
            }
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
