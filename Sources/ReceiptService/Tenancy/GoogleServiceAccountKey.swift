import Foundation
import ReceiptCore
import _CryptoExtras

/// A Google Cloud service account's key as Google issues it (the JSON file), checked: what ``GooglePlayCredentials``
/// keeps of it, the private key still in clear.
struct GoogleServiceAccountKey: Sendable {
    /// The largest key file accepted (Google's are about 2.3 KB).
    static let maximumSize = 16 * 1024
    /// The token endpoints Google's keys name: the JWT's audience must be one of them, and the server sends the grant
    /// to the operator's configured endpoint only (a key never makes the server call an address of its choosing).
    static let googleTokenURIs: Set<String> = [
        "https://oauth2.googleapis.com/token", "https://accounts.google.com/o/oauth2/token",
        "https://www.googleapis.com/oauth2/v4/token",
    ]

    let clientEmail: String
    let keyID: String
    let tokenURI: String
    let privateKeyPEM: String

    /// Reads Google's key file; throws ``ServiceError/Code/invalidArgument`` saying what is wrong (never the key).
    init(json text: String) throws {
        func refuse(_ reason: String) -> ServiceError {
            ServiceError(.invalidArgument, "the Google service account key \(reason)")
        }
        guard text.utf8.count <= Self.maximumSize else {
            throw refuse("is larger than \(Self.maximumSize / 1024) KB: give the JSON key file Google issues")
        }
        guard let key = try? JSONParser.parse(Array(text.utf8), maximumDepth: 4) else {
            throw refuse("is not JSON: give the JSON key file Google issues for a service account")
        }
        guard key["type"]?.stringValue == "service_account" else {
            throw refuse("is not a service account's key (its type is not service_account)")
        }
        guard let email = key["client_email"]?.stringValue, (3...320).contains(email.utf8.count),
            email.contains("@"), email.utf8.allSatisfy({ (0x21...0x7E).contains($0) })
        else { throw refuse("has no client_email") }
        guard let keyID = key["private_key_id"]?.stringValue, (1...128).contains(keyID.utf8.count),
            keyID.utf8.allSatisfy({ Validation.isASCIIAlphanumeric($0) })
        else { throw refuse("has no private_key_id of letters and digits") }
        let tokenURI = key["token_uri"]?.stringValue ?? "https://oauth2.googleapis.com/token"
        guard Self.googleTokenURIs.contains(tokenURI) else {
            throw refuse("names a token_uri that is not Google's: '\(Validation.printable(tokenURI))'")
        }
        guard let pem = key["private_key"]?.stringValue else { throw refuse("has no private_key") }
        let rsa: _RSA.Signing.PrivateKey
        do {
            rsa = try _RSA.Signing.PrivateKey(pemRepresentation: pem)
        } catch {
            throw refuse("has a private_key that is not an RSA private key in PEM")
        }
        guard rsa.keySizeInBits >= 2048 else { throw refuse("has an RSA key shorter than 2048 bits") }
        clientEmail = email
        self.keyID = keyID
        self.tokenURI = tokenURI
        privateKeyPEM = pem
    }

    /// Whether `text` is an Android package name (`applicationId`): two or more dot-separated segments, each a letter
    /// followed by letters, digits or underscores; at most 255 bytes.
    static func isPackageName(_ text: String) -> Bool {
        guard (3...255).contains(text.utf8.count) else { return false }
        let segments = text.split(separator: ".", omittingEmptySubsequences: false)
        guard segments.count >= 2 else { return false }
        return segments.allSatisfy { segment in
            guard let first = segment.utf8.first, Validation.isASCIILetter(first) else { return false }
            return segment.utf8.allSatisfy { Validation.isASCIIAlphanumeric($0) || $0 == UInt8(ascii: "_") }
        }
    }
}
