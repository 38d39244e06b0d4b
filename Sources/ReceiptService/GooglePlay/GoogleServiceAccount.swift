/// An app's Google service account, opened for one grant: what the OAuth 2.0 JWT bearer grant signs and names
/// (``TenancyService/googleCredentials(of:)``).
public struct GoogleServiceAccount: Sendable, Hashable {
    /// The service account (`client_email`): the JWT's issuer.
    public var clientEmail: String
    /// The key's id: the JWT's `kid`.
    public var keyID: String
    /// Google's token endpoint the key names: the JWT's audience.
    public var tokenURI: String
    /// The RSA private key, PKCS #8 PEM.
    public var privateKeyPEM: String

    /// Creates an account's credentials.
    public init(clientEmail: String, keyID: String, tokenURI: String, privateKeyPEM: String) {
        self.clientEmail = clientEmail
        self.keyID = keyID
        self.tokenURI = tokenURI
        self.privateKeyPEM = privateKeyPEM
    }
}
