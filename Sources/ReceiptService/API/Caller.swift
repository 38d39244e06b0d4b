import Crypto
import Foundation

/// An authenticated caller of `/api`: the account, the key it used and the app it named, with the app's secrets
/// opened. Only ``Authenticator`` makes one, so holding a `Caller` proves authentication passed. The account's plan
/// is not here: ``UsageGate`` reads it fresh for every call.
public struct Caller: Sendable {
    /// The account that owns the API key and the app.
    public let account: Account
    /// The id of the API key that authenticated the request.
    public let apiKeyID: UUID
    /// The app named by `token`.
    public let app: App
    /// The app's 256-bit key for `/apiencrypted`.
    let resultKey: [UInt8]
    /// The app's shared secret for Apple's `verifyReceipt`, if it has one.
    let sharedSecret: String?
    /// The app's App Store Server API key in clear, if it has one.
    let appleKey: (issuerID: String, keyID: String, privateKeyPEM: String)?
    /// The app's Google service account with its key in clear, if it has one.
    var googleAccount: GoogleServiceAccount? = nil

    /// Whether `password` is the app's stored shared secret (compared in constant time, as digests); nil when the
    /// app has none to compare with. The verifyReceipt drop-in answers 21004 for a mismatch, as Apple did.
    public func sharedSecretMatches(_ password: String) -> Bool? {
        guard let sharedSecret else { return nil }
        return ConstantTime.equals(
            Array(SHA256.hash(data: Array(password.utf8))), Array(SHA256.hash(data: Array(sharedSecret.utf8))))
    }

    /// The app's App Store Server API credentials for a request about `bundleID` (the JWT's `bid`); nil when the
    /// app has none.
    public func serverAPICredentials(bundleID: String) -> AppStoreServerAPICredentials? {
        appleKey.map {
            AppStoreServerAPICredentials(
                issuerID: $0.issuerID, keyID: $0.keyID, privateKeyPEM: $0.privateKeyPEM, bundleID: bundleID)
        }
    }
}
