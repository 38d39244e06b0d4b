/// A verification failure: a stable ``Code`` that says which check failed, and a ``reason`` for logs.
///
/// Equality compares codes only, so tests can write `#expect(throws: ReceiptError(.invalidSignature))`.
/// ``isMalformed`` tells input that cannot be read (Apple's 21002) from input that is not authentic (21003).
public struct ReceiptError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Which check failed, stable across releases.
    public enum Code: String, Sendable, CaseIterable {
        // Malformed input: Apple's 21002.
        /// The text is not base64, even after the usual repairs.
        case malformedBase64 = "malformed_base64"
        /// The bytes are none of the formats we read (PKCS#7, iOS 6 plist, JWS).
        case unknownFormat = "unknown_format"
        /// The PKCS#7 container is not well-formed DER/BER SignedData.
        case malformedContainer = "malformed_container"
        /// The receipt payload (ASN.1 attribute set) is not well-formed.
        case malformedPayload = "malformed_payload"
        /// The iOS 6 receipt's plist or signature blob is not well-formed.
        case malformedTransactionReceipt = "malformed_transaction_receipt"
        /// The JWS is not three base64url parts of JSON, or its header is unreadable.
        case malformedJWS = "malformed_jws"

        // Not authentic: Apple's 21003.
        /// The signature does not match the signed content.
        case invalidSignature = "invalid_signature"
        /// The signed attributes' message digest does not match the content.
        case digestMismatch = "digest_mismatch"
        /// A certificate in the chain does not verify or is not a CA where it must be.
        case invalidChain = "invalid_chain"
        /// The chain does not end at a configured trust anchor.
        case untrustedRoot = "untrusted_root"
        /// A certificate was expired at the receipt's creation date (or the JWS's signed date).
        case expiredAtSigningDate = "expired_at_signing_date"
        /// A certificate was not yet valid at the receipt's creation date (or the JWS's signed date).
        case notYetValidAtSigningDate = "not_yet_valid_at_signing_date"
        /// The leaf or intermediate lacks Apple's marker extension.
        case missingMarkerOID = "missing_marker_oid"
        /// The signature or digest algorithm is not one we accept.
        case unsupportedAlgorithm = "unsupported_algorithm"
        /// Signed by a test root (Xcode StoreKit testing) and test data is not allowed.
        case testDataNotAllowed = "test_data_not_allowed"
    }

    /// Which check failed.
    public let code: Code
    /// A one-line explanation for logs; never contains the receipt.
    public let reason: String

    /// Creates an error with a code and an optional explanation.
    public init(_ code: Code, _ reason: String = "") {
        self.code = code
        self.reason = reason
    }

    public static func == (lhs: ReceiptError, rhs: ReceiptError) -> Bool { lhs.code == rhs.code }

    /// Whether the input could not be read at all (Apple's 21002) rather than read and found not authentic (21003).
    public var isMalformed: Bool {
        switch code {
        case .malformedBase64, .unknownFormat, .malformedContainer, .malformedPayload, .malformedTransactionReceipt,
            .malformedJWS:
            return true
        case .invalidSignature, .digestMismatch, .invalidChain, .untrustedRoot, .expiredAtSigningDate,
            .notYetValidAtSigningDate, .missingMarkerOID, .unsupportedAlgorithm, .testDataNotAllowed:
            return false
        }
    }

    public var description: String { reason.isEmpty ? code.rawValue : "\(code.rawValue): \(reason)" }
}
