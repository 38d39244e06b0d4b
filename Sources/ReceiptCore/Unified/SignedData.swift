import SwiftASN1
import X509

/// A PKCS#7 / CMS SignedData as App Store receipts use it, read with BER rules.
///
/// Real receipts defeat strict CMS readers: indefinite lengths, a chunked content OCTET STRING, a bare
/// `rsaEncryption` signature algorithm and NULL digest parameters. This reader accepts exactly those liberties
/// and nothing else (RFC 5652 §5).
struct SignedData: Sendable {
    /// The encapsulated content: the receipt payload.
    let content: [UInt8]
    /// The DER of the certificates carried in the container, in order (never trusted for themselves).
    let certificates: [[UInt8]]
    /// The one signer.
    let signer: SignerInfo

    static let signedDataOID = "1.2.840.113549.1.7.2"
    static let dataOID = "1.2.840.113549.1.7.1"

    init(ber bytes: [UInt8]) throws {
        let root: ASN1Node
        do {
            root = try BER.parse(bytes)
        } catch {
            throw ReceiptError(.malformedContainer, "receipt is not BER-encoded ASN.1")
        }
        let contentInfo = try root.children(.malformedContainer, "ContentInfo")
        guard root.identifier == .sequence, contentInfo.count == 2,
            try contentInfo[0].objectIdentifier(.malformedContainer, "content type") == Self.signedDataOID,
            contentInfo[1].isContextTag(0)
        else { throw ReceiptError(.malformedContainer, "not a PKCS#7 SignedData ContentInfo") }
        let explicit = try contentInfo[1].children(.malformedContainer, "SignedData wrapper")
        guard explicit.count == 1, explicit[0].identifier == .sequence else {
            throw ReceiptError(.malformedContainer, "SignedData is not a SEQUENCE")
        }
        var fields = try explicit[0].children(.malformedContainer, "SignedData")[...]
        guard fields.count >= 4 else { throw ReceiptError(.malformedContainer, "SignedData is too short") }
        _ = try fields.removeFirst().smallInteger(.malformedContainer, "SignedData version")
        guard fields.removeFirst().identifier == .set else {
            throw ReceiptError(.malformedContainer, "digestAlgorithms is not a SET")
        }

        // encapContentInfo: SEQUENCE { eContentType, [0] EXPLICIT OCTET STRING }
        let encapsulated = try fields.removeFirst().children(.malformedContainer, "encapContentInfo")
        guard encapsulated.count == 2,
            try encapsulated[0].objectIdentifier(.malformedContainer, "eContentType") == Self.dataOID,
            encapsulated[1].isContextTag(0)
        else { throw ReceiptError(.malformedContainer, "receipt content is missing or not data") }
        let wrapped = try encapsulated[1].children(.malformedContainer, "eContent")
        guard wrapped.count == 1, wrapped[0].identifier == .octetString else {
            throw ReceiptError(.malformedContainer, "eContent is not an OCTET STRING")
        }
        content = try wrapped[0].octets(.malformedContainer, "eContent")

        var certificates: [[UInt8]] = []
        if let next = fields.first, next.isContextTag(0) {
            fields.removeFirst()
            for node in try next.children(.malformedContainer, "certificates") {
                guard node.identifier == .sequence else {
                    throw ReceiptError(.malformedContainer, "a carried certificate is not a SEQUENCE")
                }
                certificates.append(Array(node.encodedBytes))
            }
        }
        if let next = fields.first, next.isContextTag(1) { fields.removeFirst() }  // CRLs: unused
        guard let signerInfos = fields.first, signerInfos.identifier == .set else {
            throw ReceiptError(.malformedContainer, "signerInfos is missing")
        }
        let signers = try signerInfos.children(.malformedContainer, "signerInfos")
        guard signers.count == 1 else {
            throw ReceiptError(.malformedContainer, "expected one signer, found \(signers.count)")
        }
        self.certificates = certificates
        signer = try SignerInfo(signers[0])
    }
}

/// The one SignerInfo of a receipt (RFC 5652 §5.3).
struct SignerInfo: Sendable {
    /// How the signer names its certificate.
    enum Identifier: Sendable {
        case issuerAndSerialNumber(issuer: DistinguishedName, serial: [UInt8])
        case subjectKeyIdentifier([UInt8])
    }

    let identifier: Identifier
    let digestAlgorithm: String
    /// The signed attributes re-tagged as a SET, ready to be hashed, and their message digest.
    let signedAttributes: (der: [UInt8], messageDigest: [UInt8])?
    let signatureAlgorithm: String
    let signature: [UInt8]

    static let messageDigestOID = "1.2.840.113549.1.9.4"

    init(_ node: ASN1Node) throws {
        var fields = try node.children(.malformedContainer, "SignerInfo")[...]
        guard node.identifier == .sequence, fields.count >= 5 else {
            throw ReceiptError(.malformedContainer, "SignerInfo is too short")
        }
        _ = try fields.removeFirst().smallInteger(.malformedContainer, "SignerInfo version")
        let sid = fields.removeFirst()
        if sid.identifier == .sequence {
            let parts = try sid.children(.malformedContainer, "IssuerAndSerialNumber")
            guard parts.count == 2, parts[1].identifier == .integer else {
                throw ReceiptError(.malformedContainer, "IssuerAndSerialNumber is malformed")
            }
            let issuer: DistinguishedName
            do {
                issuer = try DistinguishedName(derEncoded: Array(parts[0].encodedBytes))
            } catch {
                throw ReceiptError(.malformedContainer, "signer issuer name is malformed")
            }
            identifier = .issuerAndSerialNumber(
                issuer: issuer, serial: try parts[1].octets(.malformedContainer, "serial number"))
        } else if sid.isContextTag(0) {
            identifier = .subjectKeyIdentifier(try sid.octets(.malformedContainer, "subjectKeyIdentifier"))
        } else {
            throw ReceiptError(.malformedContainer, "signer identifier is malformed")
        }
        digestAlgorithm = try Self.algorithm(fields.removeFirst(), "digestAlgorithm")

        if let next = fields.first, next.isContextTag(0) {
            fields.removeFirst()
            var digest: [UInt8]?
            for attribute in try next.children(.malformedContainer, "signedAttrs") {
                let parts = try attribute.children(.malformedContainer, "signed attribute")
                guard parts.count == 2 else { throw ReceiptError(.malformedContainer, "signed attribute is malformed") }
                if try parts[0].objectIdentifier(.malformedContainer, "attribute type") == Self.messageDigestOID {
                    let values = try parts[1].children(.malformedContainer, "messageDigest values")
                    guard digest == nil, values.count == 1, values[0].identifier == .octetString else {
                        throw ReceiptError(.malformedContainer, "messageDigest attribute is malformed")
                    }
                    digest = try values[0].octets(.malformedContainer, "messageDigest")
                }
            }
            guard let digest else { throw ReceiptError(.malformedContainer, "signed attributes lack a messageDigest") }
            signedAttributes = (try Self.derSet(reencoding: next), digest)
        } else {
            signedAttributes = nil
        }
        guard fields.count >= 2 else { throw ReceiptError(.malformedContainer, "SignerInfo lacks a signature") }
        signatureAlgorithm = try Self.algorithm(fields.removeFirst(), "signatureAlgorithm")
        let signatureNode = fields.removeFirst()
        guard signatureNode.identifier == .octetString else {
            throw ReceiptError(.malformedContainer, "signature is not an OCTET STRING")
        }
        signature = try signatureNode.octets(.malformedContainer, "signature")
    }

    /// An AlgorithmIdentifier's OID; its parameters must be absent or NULL.
    private static func algorithm(_ node: ASN1Node, _ what: String) throws -> String {
        let parts = try node.children(.malformedContainer, what)
        guard node.identifier == .sequence, (1...2).contains(parts.count),
            parts.count == 1 || parts[1].identifier == .null
        else { throw ReceiptError(.malformedContainer, "\(what) is malformed") }
        return try parts[0].objectIdentifier(.malformedContainer, what)
    }

    /// The DER of the signed attributes with the SET tag, which is what the signature covers (RFC 5652 §5.4).
    private static func derSet(reencoding node: ASN1Node) throws -> [UInt8] {
        var serializer = DER.Serializer()
        do {
            try serializer.appendConstructedNode(identifier: .set) { inner in
                for child in try node.children(.malformedContainer, "signedAttrs") { inner.serialize(child) }
            }
        } catch let error as ReceiptError {
            throw error
        } catch {
            throw ReceiptError(.malformedContainer, "signed attributes cannot be re-encoded")
        }
        return serializer.serializedBytes
    }
}
