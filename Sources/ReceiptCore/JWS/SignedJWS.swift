import Crypto
import Foundation
import X509

/// A StoreKit 2 compact JWS: ES256 over `header.payload`, signed by the first certificate of the header's `x5c`.
/// [Apple's documentation](https://developer.apple.com/documentation/appstoreserverapi/jwstransaction)
struct SignedJWS: Sendable {
    /// The decoded payload, Apple's field names and order kept, unknown fields included.
    let payload: JSONObject
    /// The DER of the `x5c` certificates, signer first; empty when the header came from a ``JWSHeaderCache``.
    let certificates: [[UInt8]]
    /// The raw r‖s signature.
    let signature: [UInt8]
    /// The signed text: `header.payload` as sent.
    let signingInput: ArraySlice<UInt8>

    /// The longest JWS accepted.
    static let maximumLength = 256 * 1_024

    /// Reads a JWS: header, payload and signature. With `headerIsKnown`, the header (everything before the first
    /// dot) is known good, read whole before with the same bytes, so only the payload and the signature are decoded;
    /// the same checks apply to them.
    init(compact text: [UInt8], headerIsKnown: Bool = false) throws {
        guard text.count <= Self.maximumLength else { throw ReceiptError(.malformedJWS, "JWS is too long") }
        let parts = Self.parts(of: text)
        // An empty signature part is readable (an unsecured JWS, `"alg":"none"`): the header decides, below, that
        // it is not authentic (21003) rather than unreadable (21002).
        guard parts.count == 3, !parts[0].isEmpty, !parts[1].isEmpty else {
            throw ReceiptError(.malformedJWS, "a JWS has three dot-separated parts")
        }
        let headerBytes = headerIsKnown ? [] : Base64.decodeURLSafe(parts[0])
        guard let headerBytes, let payloadBytes = Base64.decodeURLSafe(parts[1]),
            let signature = parts[2].isEmpty ? [] : Base64.decodeURLSafe(parts[2])
        else { throw ReceiptError(.malformedJWS, "a JWS part is not base64url") }

        var header = JSONObject()
        let payload: JSONObject
        do {
            if !headerIsKnown {
                guard case .object(let headerObject) = try JSONParser.parse(headerBytes) else {
                    throw ReceiptError(.malformedJWS, "JWS header and payload must be JSON objects")
                }
                header = headerObject
            }
            guard case .object(let payloadObject) = try JSONParser.parse(payloadBytes) else {
                throw ReceiptError(.malformedJWS, "JWS header and payload must be JSON objects")
            }
            payload = payloadObject
        } catch is JSONParser.Failure {
            throw ReceiptError(.malformedJWS, "JWS header or payload is not JSON")
        }
        if headerIsKnown {
            certificates = []
        } else {
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
        }
        guard !signature.isEmpty else { throw ReceiptError(.invalidSignature, "the JWS has no signature") }
        guard signature.count == 64 else {
            throw ReceiptError(.invalidSignature, "an ES256 signature is 64 bytes, found \(signature.count)")
        }
        self.payload = payload
        self.signature = signature
        signingInput = text[..<(parts[1].endIndex)]
    }

    /// The header part of a compact JWS: its bytes up to the first dot (nil without one).
    static func headerPart(of text: [UInt8]) -> ArraySlice<UInt8>? {
        dot(in: text, from: 0).map { text[..<$0] }
    }

    /// The dot-separated parts of `text` (at most four: a fourth means too many).
    private static func parts(of text: [UInt8]) -> [ArraySlice<UInt8>] {
        var parts: [ArraySlice<UInt8>] = []
        var start = 0
        while parts.count < 3, let dot = dot(in: text, from: start) {
            parts.append(text[start..<dot])
            start = dot + 1
        }
        parts.append(text[start...])
        return parts
    }

    /// The index of the first dot at or after `start`, found with the C library's vectorised `memchr`.
    private static func dot(in text: [UInt8], from start: Int) -> Int? {
        text.withUnsafeBytes { buffer in
            guard start < buffer.count, let base = buffer.baseAddress,
                let found = memchr(base + start, Int32(UInt8(ascii: ".")), buffer.count - start)
            else { return nil }
            return base.distance(to: UnsafeRawPointer(found))
        }
    }

    /// Whether the signature verifies with `key`.
    func isSigned(by key: P256.Signing.PublicKey) -> Bool {
        do {
            let signature = try P256.Signing.ECDSASignature(rawRepresentation: signature)
            return key.isValidSignature(signature, for: SHA256.hash(data: signingInput))
        } catch {
            return false  // an unusable signature is not a valid one
        }
    }
}
