import Crypto
import Foundation
import ReceiptCore
import SwiftASN1
import X509
import _CryptoExtras

/// A root CA → intermediate CA → leaf chain generated in-process, shaped like Apple's receipt signing chain.
///
/// The root is never one of Apple's published roots, so anything it anchors is *test data* to ``ReceiptVerifier``:
/// verification needs `allowTestData: true`, and the verifier then checks signatures and dates only (not Apple's
/// marker extensions or CA flags). The certificates still carry both, plus key usages, so that strict readers such
/// as `openssl cms -verify` accept the chain too.
public struct TestPKI: Sendable {
    /// The kind of key every certificate in the chain gets.
    public enum KeyType: String, Sendable, CaseIterable {
        /// RSA 2048 with SHA-256 certificate signatures: what unified receipts need.
        case rsa2048
        /// P-256 with ECDSA SHA-256 certificate signatures: what StoreKit 2 JWS need.
        case p256
    }

    /// A private key of either kind.
    public enum PrivateKey: Sendable {
        /// An RSA key.
        case rsa(_RSA.Signing.PrivateKey)
        /// A P-256 key.
        case p256(P256.Signing.PrivateKey)

        /// The key as swift-certificates signs with it.
        public var certificateKey: Certificate.PrivateKey {
            switch self {
            case .rsa(let key): return Certificate.PrivateKey(key)
            case .p256(let key): return Certificate.PrivateKey(key)
            }
        }
    }

    /// A certificate's validity window.
    public struct Validity: Sendable, Equatable {
        /// The first instant the certificate is valid.
        public var notBefore: Date
        /// The last instant the certificate is valid.
        public var notAfter: Date

        /// Creates a window from two instants.
        public init(notBefore: Date, notAfter: Date) {
            self.notBefore = notBefore
            self.notAfter = notAfter
        }

        /// Creates a window from two RFC 3339 timestamps (`"2023-05-09T23:20:55Z"`); traps on a malformed literal.
        public init(_ notBefore: String, _ notAfter: String) {
            self.init(notBefore: RFC3339.date(notBefore), notAfter: RFC3339.date(notAfter))
        }
    }

    /// How to generate the chain; every default describes a well-formed chain valid from 2015 to 2040.
    public struct Options: Sendable {
        /// The key type of all three certificates.
        public var keyType: KeyType
        /// A prefix for the common names, so that two PKIs can be told apart (or deliberately made alike).
        public var name: String
        /// The root's validity window.
        public var rootValidity: Validity
        /// The intermediate's validity window.
        public var intermediateValidity: Validity
        /// The leaf's validity window.
        public var leafValidity: Validity
        /// Whether the leaf carries Apple's receipt signing marker, OID 1.2.840.113635.100.6.11.1.
        public var leafHasMarker: Bool
        /// Whether the intermediate carries Apple's WWDR marker, OID 1.2.840.113635.100.6.2.1.
        public var intermediateHasMarker: Bool
        /// The leaf's serial number as big-endian magnitude bytes; nil for a random 20-byte serial.
        public var leafSerialNumber: [UInt8]?

        /// Creates options; see each property for its meaning.
        public init(
            keyType: KeyType = .rsa2048,
            name: String = "ReceiptTestKit",
            rootValidity: Validity = Validity("2015-01-01T00:00:00Z", "2045-01-01T00:00:00Z"),
            intermediateValidity: Validity = Validity("2016-01-01T00:00:00Z", "2040-01-01T00:00:00Z"),
            leafValidity: Validity = Validity("2020-01-01T00:00:00Z", "2035-01-01T00:00:00Z"),
            leafHasMarker: Bool = true,
            intermediateHasMarker: Bool = true,
            leafSerialNumber: [UInt8]? = nil
        ) {
            self.keyType = keyType
            self.name = name
            self.rootValidity = rootValidity
            self.intermediateValidity = intermediateValidity
            self.leafValidity = leafValidity
            self.leafHasMarker = leafHasMarker
            self.intermediateHasMarker = intermediateHasMarker
            self.leafSerialNumber = leafSerialNumber
        }
    }

    /// Apple's marker extension on receipt and StoreKit signing certificates.
    public static let leafMarkerOID: ASN1ObjectIdentifier = [1, 2, 840, 113_635, 100, 6, 11, 1]
    /// Apple's marker extension on the WWDR intermediate.
    public static let intermediateMarkerOID: ASN1ObjectIdentifier = [1, 2, 840, 113_635, 100, 6, 2, 1]

    /// The options the chain was generated with.
    public let options: Options
    /// The self-signed root CA.
    public let root: Certificate
    /// The intermediate CA, issued by the root.
    public let intermediate: Certificate
    /// The signing certificate, issued by the intermediate.
    public let leaf: Certificate
    /// The root's DER.
    public let rootDER: [UInt8]
    /// The intermediate's DER.
    public let intermediateDER: [UInt8]
    /// The leaf's DER.
    public let leafDER: [UInt8]
    /// The leaf's private key: what signs receipts and JWS.
    public let leafKey: PrivateKey
    /// The root's private key: what signs a single self-signed certificate chain, as Xcode's StoreKit testing does.
    public let rootKey: PrivateKey

    /// Generates fresh keys and the three certificates (RSA key generation takes a noticeable fraction of a second:
    /// share a PKI between tests where the options allow).
    public init(_ options: Options = Options()) throws {
        self.options = options
        let rootKey = try Self.generateKey(options.keyType)
        let intermediateKey = try Self.generateKey(options.keyType)
        let leafKey = try Self.generateKey(options.keyType)
        let signatureAlgorithm: Certificate.SignatureAlgorithm =
            options.keyType == .rsa2048 ? .sha256WithRSAEncryption : .ecdsaWithSHA256

        let rootName = try DistinguishedName {
            CountryName("US")
            OrganizationName("ReceiptVerify Tests")
            CommonName("\(options.name) Root CA")
        }
        let intermediateName = try DistinguishedName {
            CountryName("US")
            OrganizationName("ReceiptVerify Tests")
            OrganizationalUnitName("Worldwide Developer Relations")
            CommonName("\(options.name) Intermediate CA")
        }
        let leafName = try DistinguishedName {
            CountryName("US")
            OrganizationName("ReceiptVerify Tests")
            CommonName("\(options.name) Receipt Signing")
        }

        let authority = try [
            Certificate.Extension(BasicConstraints.isCertificateAuthority(maxPathLength: nil), critical: true),
            Certificate.Extension(KeyUsage(keyCertSign: true, cRLSign: true), critical: true),
        ]
        root = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: rootKey.certificateKey.publicKey,
            notValidBefore: options.rootValidity.notBefore, notValidAfter: options.rootValidity.notAfter,
            issuer: rootName, subject: rootName, signatureAlgorithm: signatureAlgorithm,
            extensions: try Certificate.Extensions(authority), issuerPrivateKey: rootKey.certificateKey)

        var intermediateExtensions = try Certificate.Extensions(authority)
        if options.intermediateHasMarker {
            try intermediateExtensions.append(Self.marker(Self.intermediateMarkerOID))
        }
        intermediate = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(),
            publicKey: intermediateKey.certificateKey.publicKey,
            notValidBefore: options.intermediateValidity.notBefore,
            notValidAfter: options.intermediateValidity.notAfter, issuer: rootName, subject: intermediateName,
            signatureAlgorithm: signatureAlgorithm, extensions: intermediateExtensions,
            issuerPrivateKey: rootKey.certificateKey)

        var leafExtensions = try Certificate.Extensions([
            Certificate.Extension(BasicConstraints.notCertificateAuthority, critical: true),
            Certificate.Extension(KeyUsage(digitalSignature: true), critical: true),
        ])
        if options.leafHasMarker { try leafExtensions.append(Self.marker(Self.leafMarkerOID)) }
        leaf = try Certificate(
            version: .v3, serialNumber: options.leafSerialNumber.map { Certificate.SerialNumber(bytes: $0) } ?? .init(),
            publicKey: leafKey.certificateKey.publicKey,
            notValidBefore: options.leafValidity.notBefore, notValidAfter: options.leafValidity.notAfter,
            issuer: intermediateName, subject: leafName, signatureAlgorithm: signatureAlgorithm,
            extensions: leafExtensions, issuerPrivateKey: intermediateKey.certificateKey)

        rootDER = try Self.der(root)
        intermediateDER = try Self.der(intermediate)
        leafDER = try Self.der(leaf)
        self.leafKey = leafKey
        self.rootKey = rootKey
    }

    /// The chain as receipts and `x5c` carry it: leaf, intermediate, root.
    public var chainDER: [[UInt8]] { [leafDER, intermediateDER, rootDER] }

    /// Trust anchors holding this PKI's root only (a test anchor to the verifier).
    public func trustAnchors() throws -> TrustAnchors {
        try TrustAnchors(encoded: [rootDER])
    }

    /// The root as a PEM `CERTIFICATE` block, for tools such as `openssl -CAfile`.
    public var rootPEM: String {
        PEMDocument(type: "CERTIFICATE", derBytes: rootDER).pemString
    }

    private static func generateKey(_ type: KeyType) throws -> PrivateKey {
        switch type {
        case .rsa2048: return .rsa(try _RSA.Signing.PrivateKey(keySize: .bits2048))
        case .p256: return .p256(P256.Signing.PrivateKey())
        }
    }

    /// Apple's markers are non-critical extensions whose value is a DER NULL.
    private static func marker(_ oid: ASN1ObjectIdentifier) -> Certificate.Extension {
        Certificate.Extension(oid: oid, critical: false, value: [0x05, 0x00])
    }

    private static func der(_ certificate: Certificate) throws -> [UInt8] {
        var serializer = DER.Serializer()
        try serializer.serialize(certificate)
        return serializer.serializedBytes
    }
}
