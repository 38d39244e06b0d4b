import Clients
import Logging
import ReceiptService
import ReceiptStore

/// Everything `receiptverify serve` needs, built by the executable from flags and the environment.
///
/// | key (flag / environment) | default | meaning |
/// |---|---|---|
/// | `--hostname` / `RECEIPTVERIFY_HOSTNAME` | `127.0.0.1` | address to listen on |
/// | `--port` / `RECEIPTVERIFY_PORT` | `8080` | TCP port to listen on |
/// | `--database` / `RECEIPTVERIFY_DATABASE_URL` | `receiptverify.sqlite` | SQLite file path, or `postgres://…` URL |
/// | `--master-key-file` / `RECEIPTVERIFY_MASTER_KEY_FILE` | `receiptverify.key` | key file, created (0600) on first run |
/// | `RECEIPTVERIFY_MASTER_KEY` | — | the master key as base64 (32 bytes); overrides the key file |
/// | `--log-level` / `RECEIPTVERIFY_LOG_LEVEL` | `info` | `trace` … `critical` |
/// | `--trust-anchors` / `RECEIPTVERIFY_TRUST_ANCHORS` | none | directory of certificates trusted besides Apple's built-in roots (test roots for Xcode data) |
/// | `--replace-built-in-roots` / `RECEIPTVERIFY_REPLACE_BUILT_IN_ROOTS` | off | trust only the directory's certificates |
/// | `--max-body-size` / `RECEIPTVERIFY_MAX_BODY_SIZE` | `2097152` | largest request body, in bytes (413 beyond) |
/// | `--max-body-memory` / `RECEIPTVERIFY_MAX_BODY_MEMORY` | `67108864` | bytes all request bodies being read may hold together; a body beyond it gets 503 |
/// | `--auth-cache-ttl` / `RECEIPTVERIFY_AUTH_CACHE_TTL` | `5` | seconds a key/app lookup is reused (0: off) |
/// | `--idle-timeout` / `RECEIPTVERIFY_IDLE_TIMEOUT` | `30` | seconds a connection may stay silent (between requests, or mid-request) before it is closed; 0: never |
/// | `--max-connections` / `RECEIPTVERIFY_MAX_CONNECTIONS` | 3/4 of the descriptor limit | connections open at once; more are closed at once |
/// | `--request-timeout` / `RECEIPTVERIFY_REQUEST_TIMEOUT` | `30` | seconds a client has to send a whole request (head and body); 0: no limit |
/// | `--auth-failures-per-second` / `RECEIPTVERIFY_AUTH_FAILURES_PER_SECOND` | `10` | failed authentications per client address per second (burst: one second's worth) before its lookups stop reaching the database (429); 0: no limit |
/// | `--database-timeout-ms` / `RECEIPTVERIFY_DATABASE_TIMEOUT_MS` | `2000` | longest a request (or `/readyz`, or a usage flush) waits for the database before it answers 503; 0: no limit |
/// | `--shutdown-timeout` / `RECEIPTVERIFY_SHUTDOWN_TIMEOUT` | `25` | seconds a graceful stop may take before the remaining work is cancelled |
/// | `--usage-flush-interval-ms` / `RECEIPTVERIFY_USAGE_FLUSH_INTERVAL_MS` | `1000` | how long usage counts wait in memory before they are written |
/// | `--apple-production-url` / `RECEIPTVERIFY_APPLE_PRODUCTION_URL` | Apple's | `verifyReceipt` production URL |
/// | `--apple-sandbox-url` / `RECEIPTVERIFY_APPLE_SANDBOX_URL` | Apple's | `verifyReceipt` sandbox URL |
/// | `--apple-connect-timeout` / `RECEIPTVERIFY_APPLE_CONNECT_TIMEOUT` | `3` | seconds to open a connection to Apple |
/// | `--apple-timeout` / `RECEIPTVERIFY_APPLE_TIMEOUT` | `15` | seconds for a whole exchange with Apple, retries included |
/// | `--apple-attempts` / `RECEIPTVERIFY_APPLE_ATTEMPTS` | `3` | attempts per environment on retryable failures |
/// | `--storekit-production-url` / `RECEIPTVERIFY_STOREKIT_PRODUCTION_URL` | Apple's | App Store Server API, production |
/// | `--storekit-sandbox-url` / `RECEIPTVERIFY_STOREKIT_SANDBOX_URL` | Apple's | App Store Server API, sandbox |
/// | `--storekit-requests-per-second` / `RECEIPTVERIFY_STOREKIT_REQUESTS_PER_SECOND` | `40` | per app, production |
/// | `--storekit-sandbox-requests-per-second` / `RECEIPTVERIFY_STOREKIT_SANDBOX_REQUESTS_PER_SECOND` | `4` | per app, sandbox |
/// | `--storekit-timeout` / `RECEIPTVERIFY_STOREKIT_TIMEOUT` | `10` | seconds for one App Store Server API call |
/// | `--storekit-cache-seconds` / `RECEIPTVERIFY_STOREKIT_CACHE_SECONDS` | `30` | seconds an answer is reused |
/// | `--storekit-finish-retry-seconds` / `RECEIPTVERIFY_STOREKIT_FINISH_RETRY_SECONDS` | `60` | first wait before a failed Finish Transaction is retried |
/// | `--storekit-extension-poll-seconds` / `RECEIPTVERIFY_STOREKIT_EXTENSION_POLL_SECONDS` | `300` | seconds between asks of Apple where a mass extension stands |
/// | `--webhook-timeout` / `RECEIPTVERIFY_WEBHOOK_TIMEOUT` | `10` | seconds for one webhook delivery attempt |
/// | `--webhook-retry-seconds` / `RECEIPTVERIFY_WEBHOOK_RETRY_SECONDS` | `30` | first wait before a failed webhook delivery is retried |
/// | `--webhook-deliveries-per-second` / `RECEIPTVERIFY_WEBHOOK_DELIVERIES_PER_SECOND` | `100` | webhook delivery attempts a second, at most, per server |
/// | `--webhook-private-urls` / `RECEIPTVERIFY_WEBHOOK_PRIVATE_URLS` | `off` | `on`: webhook URLs may be plain http and reach private and loopback addresses (a self-hosted server's own network) |
/// | `--notification-reconcile-hours` / `RECEIPTVERIFY_NOTIFICATION_RECONCILE_HOURS` | `6` | how often apps with credentials are reconciled with Apple's Notification History (0: never) |
/// | `--retention-notifications-days` / `RECEIPTVERIFY_RETENTION_NOTIFICATIONS_DAYS` | `90` | days Apple's notifications are kept (8 at least; 0: for ever) |
/// | `--retention-events-days` / `RECEIPTVERIFY_RETENTION_EVENTS_DAYS` | `30` | days delivered and dead webhook events are kept (0: for ever) |
/// | `--retention-audit-days` / `RECEIPTVERIFY_RETENTION_AUDIT_DAYS` | `730` | days audit entries are kept (0: for ever) |
/// | `--metrics-port` / `RECEIPTVERIFY_METRICS_PORT` | none | serve `/metrics` on this port instead of the main one |
/// | `--metrics-hostname` / `RECEIPTVERIFY_METRICS_HOSTNAME` | `127.0.0.1` | address of the metrics listener |
/// | `--metrics-public` / `RECEIPTVERIFY_METRICS_PUBLIC` | `off` | `on`: the main port answers `/metrics` to anyone; `off`: only to requests from loopback that no proxy forwarded |
/// | `--trusted-proxies` / `RECEIPTVERIFY_TRUSTED_PROXIES` | none | CIDRs of reverse proxies whose `Forwarded` / `X-Forwarded-For` name the client (for per-address budgets and the log) |
/// | `--public-url` / `RECEIPTVERIFY_PUBLIC_URL` | `http://HOSTNAME:PORT` | the address customers reach the account screen at; `https://…` makes its cookies `Secure` |
/// | `--oidc-issuer` / `RECEIPTVERIFY_OIDC_ISSUER` | none | the OpenID Connect issuer customers sign in with (`https://accounts.google.com`); none: sign-in links only |
/// | `--oidc-client-id` / `RECEIPTVERIFY_OIDC_CLIENT_ID` | none | our client id at the issuer |
/// | `RECEIPTVERIFY_OIDC_CLIENT_SECRET` | none | our client secret at the issuer (environment only: never on a command line) |
/// | `--oidc-name` / `RECEIPTVERIFY_OIDC_NAME` | `Google` | the issuer's name on the sign-in button |
/// | `--self-signup` / `RECEIPTVERIFY_SELF_SIGNUP` | `on` | whether a first sign-in with a verified email creates a free account |
/// | `--session-idle-minutes` / `RECEIPTVERIFY_SESSION_IDLE_MINUTES` | `120` | minutes a browser session may go unused |
/// | `--session-lifetime-hours` / `RECEIPTVERIFY_SESSION_LIFETIME_HOURS` | `168` | hours a browser session lasts at most |
/// | `--login-link-minutes` / `RECEIPTVERIFY_LOGIN_LINK_MINUTES` | `15` | minutes a `account login-link` link works |
public struct ServerConfiguration: Sendable {
    /// The address to listen on.
    public var hostname: String
    /// The TCP port to listen on; 0 picks a free one.
    public var port: Int
    /// Where tenancy data lives.
    public var store: StoreLocation
    /// A directory of certificates trusted besides Apple's built-in roots; nil for the built-in roots alone.
    public var trustAnchorDirectory: String?
    /// Whether the directory's certificates replace Apple's built-in roots instead of adding to them.
    public var replacesBuiltInRoots: Bool
    /// The largest request body accepted, in bytes.
    public var maximumBodySize: Int
    /// The most bytes all request bodies being read may hold at once; a body that would pass it is answered 503.
    public var maximumBodyMemory: Int
    /// How long a successful key/app lookup is reused.
    public var authenticationCacheTTL: Duration
    /// How long a connection may send nothing before the server closes it; nil keeps idle connections open.
    public var idleTimeout: Duration?
    /// Failed authentications a client address may make per second (and in a burst) before lookups the caches cannot
    /// answer are refused with 429 instead of reaching the database; nil for no limit.
    public var failedAuthenticationsPerSecond: Int?
    /// How long a request, `/readyz` or a usage flush waits for the database before giving up (503); nil: no limit.
    public var databaseTimeout: Duration?
    /// How long a graceful stop may take: in-flight requests, the last usage flush and closing the database pool.
    public var shutdownTimeout: Duration
    /// How long billable-call counts wait in memory before a flush writes them (what a crash can lose).
    public var usageFlushInterval: Duration
    /// The most connections open at once; a connection beyond it is closed as soon as it is accepted.
    public var maximumConnections: Int
    /// How long a client may take to send one whole request, counted from the connection's start or the previous
    /// response; nil for no limit (the idle timeout alone then closes silent clients, not trickling ones).
    public var requestTimeout: Duration?
    /// How Apple's `verifyReceipt` is reached.
    public var apple: VerifyReceiptConfiguration
    /// The port of a listener serving `/metrics` alone; nil serves `/metrics` on the main port.
    public var metricsPort: Int?
    /// The address the metrics listener binds to.
    public var metricsHostname: String
    /// How long notifications, events and audit entries are kept.
    public var retention: RetentionPolicy
    /// Whether the main port answers `/metrics` to anyone (else only to loopback requests no proxy forwarded).
    public var publicMetrics: Bool
    /// The reverse proxies whose forwarding headers name the client.
    public var trustedProxies: TrustedProxies
    /// The address customers reach the account screen at, without a trailing slash; nil: `http://hostname:port`.
    public var publicURL: String?
    /// The identity provider customers sign in with; nil: sign-in links only.
    public var openID: OpenIDConfiguration?
    /// Sign-up, session and rate-limit settings of the account screen.
    public var customers: CustomerSettings
    /// How the App Store Server API is reached (enriched answers, look-ups by id, Finish Transaction).
    public var storeKit: AppStoreServerAPIConfiguration
    /// How the Google Play Developer API and Google's token endpoint are reached.
    public var googlePlay: GooglePlayConfiguration = .init()
    /// The first wait before a failed Google acknowledgement is asked again (doubling up to an hour).
    public var googleAcknowledgeFirstRetry: Duration = .seconds(60)
    /// How often each app's Google Play voided purchases are read.
    public var googleVoidedInterval: Duration = .seconds(3_600)
    /// Where the daily export files are written (`--export-directory`); nil: none are.
    public var exportDirectory: String?
    /// How often due daily export files are looked for.
    public var exportCheckInterval: Duration = .seconds(600)
    /// The first wait before a failed Finish Transaction is asked again (doubling up to six hours).
    public var appleFinishFirstRetry: Duration
    /// Seconds between asks of Apple where a mass renewal-date extension stands.
    public var renewalExtensionPollInterval: Double
    /// The deadline of one webhook delivery attempt.
    public var webhookTimeout: Duration
    /// When failed webhook deliveries are tried again, and when they are given up.
    public var webhookRetry: RetryPolicy
    /// Webhook delivery attempts a second, at most, per server.
    public var webhookDeliveriesPerSecond: Int
    /// Whether webhook URLs may be plain http and reach private, loopback and other special addresses.
    public var webhookPrivateURLs: Bool
    /// How often apps with credentials are reconciled with Apple's Notification History; nil: never.
    public var notificationReconcileInterval: Duration?

    /// Creates a configuration.
    public init(
        hostname: String = "127.0.0.1", port: Int = 8080, store: StoreLocation = .sqlite(path: "receiptverify.sqlite"),
        trustAnchorDirectory: String? = nil, replacesBuiltInRoots: Bool = false, maximumBodySize: Int = 2 << 20,
        maximumBodyMemory: Int = 64 << 20,
        authenticationCacheTTL: Duration = .seconds(5), idleTimeout: Duration? = .seconds(30),
        maximumConnections: Int = 768, requestTimeout: Duration? = .seconds(30),
        failedAuthenticationsPerSecond: Int? = 10, databaseTimeout: Duration? = .seconds(2),
        shutdownTimeout: Duration = .seconds(25),
        usageFlushInterval: Duration = .seconds(1),
        apple: VerifyReceiptConfiguration = .init(), metricsPort: Int? = nil, metricsHostname: String = "127.0.0.1",
        publicMetrics: Bool = false, trustedProxies: TrustedProxies = TrustedProxies(),
        retention: RetentionPolicy = RetentionPolicy(),
        publicURL: String? = nil, openID: OpenIDConfiguration? = nil, customers: CustomerSettings = .init(),
        storeKit: AppStoreServerAPIConfiguration = .init(), appleFinishFirstRetry: Duration = .seconds(60),
        renewalExtensionPollInterval: Double = 300,
        webhookTimeout: Duration = .seconds(10), webhookRetry: RetryPolicy = RetryPolicy(first: .seconds(30)),
        webhookDeliveriesPerSecond: Int = 100, webhookPrivateURLs: Bool = false,
        notificationReconcileInterval: Duration? = .seconds(6 * 3_600)
    ) {
        self.webhookDeliveriesPerSecond = webhookDeliveriesPerSecond
        self.webhookPrivateURLs = webhookPrivateURLs
        self.notificationReconcileInterval = notificationReconcileInterval
        self.webhookTimeout = webhookTimeout
        self.webhookRetry = webhookRetry
        self.storeKit = storeKit
        self.appleFinishFirstRetry = appleFinishFirstRetry
        self.renewalExtensionPollInterval = renewalExtensionPollInterval
        self.hostname = hostname
        self.port = port
        self.store = store
        self.trustAnchorDirectory = trustAnchorDirectory
        self.replacesBuiltInRoots = replacesBuiltInRoots
        self.maximumBodySize = maximumBodySize
        self.maximumBodyMemory = maximumBodyMemory
        self.authenticationCacheTTL = authenticationCacheTTL
        self.idleTimeout = idleTimeout
        self.maximumConnections = maximumConnections
        self.requestTimeout = requestTimeout
        self.failedAuthenticationsPerSecond = failedAuthenticationsPerSecond
        self.databaseTimeout = databaseTimeout
        self.shutdownTimeout = shutdownTimeout
        self.usageFlushInterval = usageFlushInterval
        self.apple = apple
        self.metricsPort = metricsPort
        self.metricsHostname = metricsHostname
        self.publicMetrics = publicMetrics
        self.retention = retention
        self.trustedProxies = trustedProxies
        self.publicURL = publicURL.map { $0.hasSuffix("/") ? String($0.dropLast()) : $0 }
        self.openID = openID
        self.customers = customers
    }

    /// The public URL, or the listening address's.
    public var effectivePublicURL: String { publicURL ?? "http://\(hostname):\(port)" }
}
