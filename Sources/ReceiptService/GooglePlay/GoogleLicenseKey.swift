import Crypto
import Foundation
import _CryptoExtras

/// An app's Play licensing public key (Play Console, Monetization setup: "Base64-encoded RSA public key", an X.509
/// SubjectPublicKeyInfo), which signs the purchase JSON the Play Billing Library hands the client
/// (`Purchase.getOriginalJson()` and `Purchase.getSignature()`: SHA1withRSA, PKCS #1 v1.5).
public enum GoogleLicenseKey {
    /// The longest key text taken (a 4096-bit key is about 740 characters).
    public static let maximumLength = 2_048

    /// Checks a key's text; returns it as stored (no whitespace).
    static func check(_ text: String) throws -> String {
        guard text.utf8.count <= maximumLength, key(text) != nil else {
            throw ServiceError(
                .invalidArgument,
                "the Play licensing key must be Play Console's base64 RSA public key (2048 bits or more)")
        }
        return text
    }

    /// The RSA public key of a stored key text.
    static func key(_ text: String) -> _RSA.Signing.PublicKey? {
        guard let der = Data(base64Encoded: text),
            let key = try? _RSA.Signing.PublicKey(derRepresentation: der), key.keySizeInBits >= 2048
        else { return nil }
        return key
    }

    /// Whether `signature` (base64) is the key's SHA1withRSA signature of `purchase`'s exact bytes.
    public static func verifies(purchase: String, signature: String, key text: String) -> Bool {
        guard let key = key(text), signature.utf8.count <= 1_024, let bytes = Data(base64Encoded: signature) else {
            return false
        }
        let digest = Insecure.SHA1.hash(data: Array(purchase.utf8))
        return key.isValidSignature(
            _RSA.Signing.RSASignature(rawRepresentation: bytes), for: digest, padding: .insecurePKCS1v1_5)
    }
}
