/// How the `verifyReceipt` client reaches Apple; every value is configuration (README, docs/operations.md).
///
/// | key | default | meaning |
/// |---|---|---|
/// | ``productionURL`` | `https://buy.itunes.apple.com/verifyReceipt` | asked first |
/// | ``sandboxURL`` | `https://sandbox.itunes.apple.com/verifyReceipt` | asked after a 21007 |
/// | ``connectTimeout`` | 3 s | per connection attempt |
/// | ``totalTimeout`` | 15 s | for the whole exchange, retries and redirects to the other environment included |
/// | ``maximumAttempts`` | 3 | attempts per environment for retryable failures |
/// | ``backoffBase`` | 200 ms | retry *n* waits a random time in 0 … base·2ⁿ⁻¹ ("full jitter") |
/// | ``maximumResponseSize`` | 8 MiB | a longer answer is nonsense |
public struct VerifyReceiptConfiguration: Sendable {
    /// Apple's production endpoint, asked first.
    public var productionURL: String
    /// Apple's sandbox endpoint, asked when production answers 21007.
    public var sandboxURL: String
    /// How long a TCP/TLS connection may take to open.
    public var connectTimeout: Duration
    /// How long the whole exchange may take, retries included.
    public var totalTimeout: Duration
    /// Attempts per environment when the failure is retryable (1 means no retry).
    public var maximumAttempts: Int
    /// The base of the exponential backoff between attempts.
    public var backoffBase: Duration
    /// The longest answer read, in bytes.
    public var maximumResponseSize: Int

    /// Creates a configuration; the defaults talk to Apple.
    public init(
        productionURL: String = "https://buy.itunes.apple.com/verifyReceipt",
        sandboxURL: String = "https://sandbox.itunes.apple.com/verifyReceipt",
        connectTimeout: Duration = .seconds(3), totalTimeout: Duration = .seconds(15), maximumAttempts: Int = 3,
        backoffBase: Duration = .milliseconds(200), maximumResponseSize: Int = 8 << 20
    ) {
        self.productionURL = productionURL
        self.sandboxURL = sandboxURL
        self.connectTimeout = connectTimeout
        self.totalTimeout = totalTimeout
        self.maximumAttempts = maximumAttempts
        self.backoffBase = backoffBase
        self.maximumResponseSize = maximumResponseSize
    }
}
