/// Where and how the Google Play Developer API is asked (`serve --google-play-api-url`, `--google-oauth-token-url`).
public struct GooglePlayConfiguration: Sendable {
    /// The Google Play Developer API's base URL.
    public var apiURL: String
    /// Where access tokens are granted. Every grant goes here, whatever the app's key names as its `token_uri` (which
    /// is only the JWT's audience): a tenant's key never makes the server call an address of its choosing.
    public var tokenURL: String
    /// The longest one request to Google may take.
    public var timeout: Duration
    /// How long a service account Google refused is refused without asking again.
    public var refusedCredentialsPause: Duration
    /// The largest answer read from Google.
    public var maximumResponseSize: Int
    /// How long an answer of Google's is reused for the same purchase (zero: never).
    public var cacheLifetime: Duration
    /// Where Google's OIDC signing keys (which sign Pub/Sub's push tokens) are fetched.
    public var pushKeysURL: String

    /// Google's public endpoints.
    public static let googleAPIURL = "https://androidpublisher.googleapis.com"
    /// Google's OAuth 2.0 token endpoint.
    public static let googleTokenURL = "https://oauth2.googleapis.com/token"
    /// Google's JWKS of its OAuth 2.0 and OIDC tokens.
    public static let googlePushKeysURL = "https://www.googleapis.com/oauth2/v3/certs"

    /// Creates a configuration; the defaults are Google's endpoints.
    public init(
        apiURL: String = googleAPIURL, tokenURL: String = googleTokenURL, timeout: Duration = .seconds(10),
        refusedCredentialsPause: Duration = .seconds(300), maximumResponseSize: Int = 1 << 20,
        cacheLifetime: Duration = .seconds(30), pushKeysURL: String = googlePushKeysURL
    ) {
        self.pushKeysURL = pushKeysURL
        self.cacheLifetime = cacheLifetime
        self.apiURL = apiURL
        self.tokenURL = tokenURL
        self.timeout = timeout
        self.refusedCredentialsPause = refusedCredentialsPause
        self.maximumResponseSize = maximumResponseSize
    }
}
