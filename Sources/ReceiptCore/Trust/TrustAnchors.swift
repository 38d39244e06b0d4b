import Crypto
import Foundation
import SwiftASN1
import X509

/// The certificates a chain may end at; nothing carried in a receipt is trusted.
///
/// ``apple`` holds Apple's public roots, built into the binary; an operator's directory adds to them
/// (``adding(_:)``) or, explicitly, replaces them. Each anchor is classified by its SHA-256 fingerprint: Apple's published roots (and the iTunes Store CA that
/// anchors iOS 6 receipts) are Apple anchors; any other certificate (the Xcode StoreKit test root, a test CA) is a
/// test anchor, and data chaining to it verifies only when test data is allowed.
public struct TrustAnchors: Sendable {
    /// One trusted certificate.
    public struct Anchor: Sendable {
        /// The certificate.
        public let certificate: Certificate
        /// SHA-256 of its DER, uppercase hex.
        public let fingerprint: String
        /// Whether it is one of Apple's published anchors.
        public let isApple: Bool
    }

    /// The SHA-256 fingerprints Apple publishes for its anchors (https://www.apple.com/certificateauthority/).
    public static let appleFingerprints: [String: String] = [
        "B0B1730ECBC7FF4505142C49F1295E6EDA6BCAED7E2C68C5BE91B5A11001F024": "Apple Root CA",
        "C2B9B042DD57830E7D117DAC55AC8AE19407D38E41D88F3215BC3A890444A050": "Apple Root CA - G2",
        "63343ABFB89A6A03EBB57E9B3F5FA7BE7C4F5C756F3017B3A8C488C3653E9179": "Apple Root CA - G3",
        "447AD65484610F20FDC33804C8597A1E208FBE4EF9C5653485CC7D3DF730C016": "Apple iTunes Store CA",
    ]

    /// The anchors.
    public let anchors: [Anchor]

    /// Apple's public anchors built into the binary: Apple Root CA, Apple Root CA - G2, Apple Root CA - G3 and the
    /// iTunes Store CA.
    ///
    /// A built-in certificate is admitted only when its SHA-256 equals the fingerprint Apple publishes for it, so
    /// a damaged constant is left out rather than trusted (a test proves all four are present).
    public static let apple: TrustAnchors = {
        let anchors = AppleRootCertificates.all.compactMap { text -> Anchor? in
            guard let der = Data(base64Encoded: text, options: .ignoreUnknownCharacters) else { return nil }
            do {
                let anchor = try Self.anchor(der: Array(der))
                return anchor.isApple ? anchor : nil
            } catch {
                return nil  // unreadable: not trusted
            }
        }
        return TrustAnchors(anchors: anchors)
    }()

    /// These anchors followed by `other`'s, each certificate once (by fingerprint).
    public func adding(_ other: TrustAnchors) -> TrustAnchors {
        var seen = Set(anchors.map(\.fingerprint))
        return TrustAnchors(anchors: anchors + other.anchors.filter { seen.insert($0.fingerprint).inserted })
    }

    private init(anchors: [Anchor]) {
        self.anchors = anchors
    }

    /// Anchors from certificates in DER or PEM (one or more `CERTIFICATE` blocks per file).
    public init(encoded files: [[UInt8]]) throws {
        var anchors: [Anchor] = []
        for file in files {
            for der in try Self.certificates(in: file) { anchors.append(try Self.anchor(der: der)) }
        }
        self.anchors = anchors
    }

    /// Anchors from parsed certificates.
    public init(certificates: [Certificate]) throws {
        anchors = try certificates.map { certificate in
            var serializer = DER.Serializer()
            try serializer.serialize(certificate)
            return try Self.anchor(der: serializer.serializedBytes)
        }
    }

    /// The anchor that issued `certificate` (its subject is the issuer and its key verifies the signature), or
    /// the anchor that is `certificate` itself.
    func anchor(issuing certificate: Certificate) -> Anchor? {
        if let same = anchors.first(where: { $0.certificate == certificate }) { return same }
        return anchors.first { anchor in
            anchor.certificate.subject == certificate.issuer
                && anchor.certificate.publicKey.isValidSignature(certificate.signature, for: certificate)
        }
    }

    private static func anchor(der: [UInt8]) throws -> Anchor {
        let certificate: Certificate
        do {
            certificate = try Certificate(derEncoded: der)
        } catch {
            throw ReceiptError(.invalidChain, "a trust anchor is not an X.509 certificate")
        }
        let fingerprint = SHA256.hash(data: der).map { String(format: "%02X", $0) }.joined()
        return Anchor(
            certificate: certificate, fingerprint: fingerprint, isApple: appleFingerprints[fingerprint] != nil)
    }

    private static func certificates(in file: [UInt8]) throws -> [[UInt8]] {
        let text = String(decoding: file, as: UTF8.self)
        guard text.contains("-----BEGIN CERTIFICATE-----") else { return [file] }
        do {
            return try PEMDocument.parseMultiple(pemString: text).filter { $0.discriminator == "CERTIFICATE" }
                .map(\.derBytes)
        } catch {
            throw ReceiptError(.invalidChain, "a trust anchor file is not valid PEM")
        }
    }
}
