/// An app's Google Play Developer API credentials: a Google Cloud service account's key, its identity in clear and its
/// RSA private key sealed. Only the fields the OAuth 2.0 JWT bearer grant needs are kept from the JSON Google issues.
/// [Google's documentation](https://developers.google.com/identity/protocols/oauth2/service-account)
public struct GooglePlayCredentials: Sendable, Hashable {
    /// The service account (`client_email`), the JWT's issuer.
    public var clientEmail: String
    /// The key's id (`private_key_id`), the JWT's `kid`.
    public var keyID: String
    /// Google's token endpoint the key names (`token_uri`), the JWT's audience.
    public var tokenURI: String
    /// The RSA private key (PKCS #8 PEM text), sealed.
    public var privateKey: SealedSecret

    /// Creates credentials.
    public init(clientEmail: String, keyID: String, tokenURI: String, privateKey: SealedSecret) {
        self.clientEmail = clientEmail
        self.keyID = keyID
        self.tokenURI = tokenURI
        self.privateKey = privateKey
    }
}
