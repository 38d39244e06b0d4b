/// The credentials of one app at the App Store Server API, in clear for the call (opened from their sealed form by
/// the caller), with the app's bundle ID.
public struct AppStoreServerAPICredentials: Sendable, Hashable {
    /// The issuer ID (a UUID).
    public var issuerID: String
    /// The key's id.
    public var keyID: String
    /// The P-256 private key, PEM.
    public var privateKeyPEM: String
    /// The app's bundle ID (`bid`).
    public var bundleID: String

    /// Creates credentials.
    public init(issuerID: String, keyID: String, privateKeyPEM: String, bundleID: String) {
        self.issuerID = issuerID
        self.keyID = keyID
        self.privateKeyPEM = privateKeyPEM
        self.bundleID = bundleID
    }
}
