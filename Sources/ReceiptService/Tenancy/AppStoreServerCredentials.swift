/// An app's App Store Server API credentials: the issuer and key ids in clear, the private key sealed.
/// [Apple's documentation](https://developer.apple.com/documentation/appstoreserverapi/creating-api-keys-to-authorize-api-requests)
public struct AppStoreServerCredentials: Sendable, Hashable {
    /// The issuer ID from App Store Connect (a UUID).
    public var issuerID: String
    /// The private key's id from App Store Connect.
    public var keyID: String
    /// The P-256 private key (PEM text), sealed.
    public var privateKey: SealedSecret

    /// Creates credentials.
    public init(issuerID: String, keyID: String, privateKey: SealedSecret) {
        self.issuerID = issuerID
        self.keyID = keyID
        self.privateKey = privateKey
    }
}
