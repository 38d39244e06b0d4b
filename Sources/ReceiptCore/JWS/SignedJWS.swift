import Crypto
import Foundation
import X509

/// A StoreKit 2 compact JWS: ES256 over `header.payload`, signed by the first certificate of the header's `x5c`.
/// [Apple's documentation](https://developer.apple.com/documentation/appstoreserverapi/jwstransaction)
struct SignedJWS: Sendable {
    /// The decoded payload, Apple's field names and order kept, unknown fields included.
    let payload: JSONObject
    /// The DER of the `x5c` certificates, signer first.
    let certificates: [[UInt8]]
    /// The raw r‖s signature.
    let signature: [UInt8]
    /// The signed text: `header.payload` as sent.
    let signingInput: [UInt8]

    /// The longest JWS accepted.
    static let maximumLength = 256 * 1_024

    init(compact text: [UInt8]) throws {
        guard text.count <= Self.maximumLength else { throw ReceiptError(.malformedJWS, "JWS is too long") }
        let parts = text.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        // An empty signature part is readable (an unsecured JWS, `"alg":"none"`): the header decides, below, that
        // it is not authentic (21003) rather than unreadable (21002).
        guard parts.count == 3, !parts[0].isEmpty, !parts[1].isEmpty else {
            throw ReceiptError(.malformedJWS, "a JWS has three dot-separated parts")
        }
        guard let headerBytes = Base64.decodeURLSafe(parts[0]), let payloadBytes = Base64.decodeURLSafe(parts[1]),
            let signature = parts[2].isEmpty ? [] : Base64.decodeURLSafe(parts[2])
        else { throw ReceiptError(.malformedJWS, "a JWS part is not base64url") }

        let header: JSONObject
        let payload: JSONObject
        do {
            guard case .object(let headerObject) = try JSONParser.parse(headerBytes),
                case .object(let payloadObject) = try JSONParser.parse(payloadBytes)
            else { throw ReceiptError(.malformedJWS, "JWS header and payload must be JSON objects") }
            header = headerObject
            payload = payloadObject
        } catch is JSONParser.Failure {
            throw ReceiptError(.malformedJWS, "JWS header or payload is not JSON")
        }
        guard header["alg"] == .string("ES256") else {
            throw ReceiptError(.unsupportedAlgorithm, "JWS alg must be ES256")
        }
        guard !signature.isEmpty else { throw ReceiptError(.invalidSignature, "the JWS has no signature") }
        guard case .array(let chain)? = header["x5c"], (1...3).contains(chain.count) else {
            throw ReceiptError(.malformedJWS, "JWS header needs an x5c of one to three certificates")
        }
        certificates = try chain.map { element in
            guard case .string(let text) = element, let der = Base64.decode(Array(text.utf8)) else {
                throw ReceiptError(.malformedJWS, "an x5c entry is not base64 DER")
            }
            return der
        }
        guard signature.count == 64 else {
            throw ReceiptError(.invalidSignature, "an ES256 signature is 64 bytes, found \(signature.count)")
        }
        self.payload = payload
        self.signature = signature
        signingInput = Array(text[..<(parts[1].endIndex)])
    }

    /// Whether the signature verifies with `certificate`'s P-256 key.
    func isSigned(by certificate: Certificate) -> Bool {
        guard let key = P256.Signing.PublicKey(certificate.publicKey) else { return false }
        do {
            let signature = try P256.Signing.ECDSASignature(rawRepresentation: signature)
            return key.isValidSignature(signature, for: SHA256.hash(data: signingInput))
        } catch {
            return false  // an unusable signature is not a valid one
        }
    }
}
