/// How the App Store Server API is reached: base URLs, the request budget per app, time limits and the answer cache.
/// [Apple's documentation](https://developer.apple.com/documentation/appstoreserverapi)
///
/// | key | default | meaning |
/// |---|---|---|
/// | `productionURL` | `https://api.storekit.apple.com` | the production host |
/// | `sandboxURL` | `https://api.storekit-sandbox.apple.com` | the sandbox host |
/// | `productionRequestsPerSecond` | `40` | requests per second per app to production, below Apple's 50 for the look-ups |
/// | `sandboxRequestsPerSecond` | `4` | the same for the sandbox (Apple allows a tenth of production) |
/// | `issuerCeiling` | `4` | all apps of one issuer (team) together take at most this many times one app's rate |
/// | `refusedCredentialsPause` | 60 s | how long credentials Apple refused (401) are refused here without asking Apple |
/// | `totalTimeout` | 10 s | one call's whole budget: waiting for the request budget, retries, backoff |
/// | `maximumAttempts` | `4` | attempts on 5xx, network errors and a transaction not found yet (4040010) |
/// | `cacheLifetime` | 30 s | how long an answer is reused for the same request (0: not cached) |
/// | `tokenLifetime` | 30 min | the JWT's `exp` after its `iat` (Apple refuses more than 60 min); reused until 5 min before |
public struct AppStoreServerAPIConfiguration: Sendable {
    /// The production host.
    public var productionURL: String
    /// The sandbox host.
    public var sandboxURL: String
    /// Requests per second per app to production.
    public var productionRequestsPerSecond: Int
    /// Requests per second per app to the sandbox.
    public var sandboxRequestsPerSecond: Int
    /// All apps of one issuer together take at most this many times one app's rate.
    public var issuerCeiling: Int
    /// How long credentials Apple refused are refused without asking Apple again.
    public var refusedCredentialsPause: Duration
    /// One call's whole budget.
    public var totalTimeout: Duration
    /// Attempts on retryable failures.
    public var maximumAttempts: Int
    /// How long an answer is reused for the same request.
    public var cacheLifetime: Duration
    /// The JWT's lifetime.
    public var tokenLifetime: Duration
    /// The largest answer read.
    public var maximumResponseSize: Int
    /// Whether signed values may chain to an anchor the verifier trusts that is not Apple's (a test PKI against a
    /// fake Apple); never in production.
    public var acceptsTestSignatures: Bool

    /// Creates a configuration; the defaults are Apple's hosts and budgets below Apple's published limits.
    public init(
        productionURL: String = "https://api.storekit.apple.com",
        sandboxURL: String = "https://api.storekit-sandbox.apple.com", productionRequestsPerSecond: Int = 40,
        sandboxRequestsPerSecond: Int = 4, issuerCeiling: Int = 4, refusedCredentialsPause: Duration = .seconds(60),
        totalTimeout: Duration = .seconds(10), maximumAttempts: Int = 4,
        cacheLifetime: Duration = .seconds(30),
        tokenLifetime: Duration = .seconds(1_800), maximumResponseSize: Int = 4 << 20,
        acceptsTestSignatures: Bool = false
    ) {
        self.productionURL = productionURL
        self.sandboxURL = sandboxURL
        self.productionRequestsPerSecond = productionRequestsPerSecond
        self.sandboxRequestsPerSecond = sandboxRequestsPerSecond
        self.issuerCeiling = issuerCeiling
        self.refusedCredentialsPause = refusedCredentialsPause
        self.totalTimeout = totalTimeout
        self.maximumAttempts = maximumAttempts
        self.cacheLifetime = cacheLifetime
        self.tokenLifetime = tokenLifetime
        self.maximumResponseSize = maximumResponseSize
        self.acceptsTestSignatures = acceptsTestSignatures
    }
}
