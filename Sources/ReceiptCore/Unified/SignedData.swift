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
        let reader = BERReader(bytes: bytes, code: .malformedContainer)
        let root = try reader.element(at: 0, limit: bytes.count)
        // Apple's verifyReceipt answers 21002 for bytes after the structure; nothing may ride along unsigned.
        guard root.end == bytes.count else {
            throw ReceiptError(.malformedContainer, "\(bytes.count - root.end) bytes follow the PKCS#7 structure")
        }
        let contentInfo = try reader.children(of: root)
        guard root.tag == 0x30, contentInfo.count == 2, reader.oid(contentInfo[0]) == Self.signedDataOID,
            contentInfo[1].tag == 0xA0
        else { throw ReceiptError(.malformedContainer, "not a PKCS#7 SignedData ContentInfo") }
        let explicit = try reader.children(of: contentInfo[1], depth: 1)
        guard explicit.count == 1, explicit[0].tag == 0x30 else {
            throw ReceiptError(.malformedContainer, "SignedData is not a SEQUENCE")
        }
        var fields = try reader.children(of: explicit[0], depth: 2)[...]
        guard fields.count >= 4 else { throw ReceiptError(.malformedContainer, "SignedData is too short") }
        _ = try reader.integer(fields.removeFirst())
        guard fields.removeFirst().tag == 0x31 else {
            throw ReceiptError(.malformedContainer, "digestAlgorithms is not a SET")
        }

        // encapContentInfo: SEQUENCE { eContentType, [0] EXPLICIT OCTET STRING }
        let encapsulated = try reader.children(of: fields.removeFirst(), depth: 3)
        guard encapsulated.count == 2, reader.oid(encapsulated[0]) == Self.dataOID, encapsulated[1].tag == 0xA0 else {
            throw ReceiptError(.malformedContainer, "receipt content is missing or not data")
        }
        let wrapped = try reader.children(of: encapsulated[1], depth: 4)
        guard wrapped.count == 1, wrapped[0].tag & 0xDF == 0x04 else {
            throw ReceiptError(.malformedContainer, "eContent is not an OCTET STRING")
        }
        content = Array(try reader.octets(of: wrapped[0], depth: 5))

        var certificates: [[UInt8]] = []
        if let next = fields.first, next.tag == 0xA0 {
            fields.removeFirst()
            for certificate in try reader.children(of: next, depth: 3) {
                guard certificate.tag == 0x30 else {
                    throw ReceiptError(.malformedContainer, "a carried certificate is not a SEQUENCE")
                }
                certificates.append(Array(bytes[certificate.start(in: reader)..<certificate.end]))
            }
        }
        if let next = fields.first, next.tag == 0xA1 { fields.removeFirst() }  // CRLs: unused
        guard let signerInfos = fields.first, signerInfos.tag == 0x31 else {
            throw ReceiptError(.malformedContainer, "signerInfos is missing")
        }
        let signers = try reader.children(of: signerInfos, depth: 3)
        guard signers.count == 1 else {
            throw ReceiptError(.malformedContainer, "expected one signer, found \(signers.count)")
        }
        self.certificates = certificates
        signer = try SignerInfo(reader, signers[0])
    }
}

/// The issuer Name (as encoded) and serial number of a certificate, read without parsing the whole certificate.
struct CertificateIdentity: Equatable {
    let issuer: ArraySlice<UInt8>
    let serial: ArraySlice<UInt8>

    init(der: [UInt8]) throws {
        let reader = BERReader(bytes: der, code: .malformedContainer)
        let certificate = try reader.element(at: 0, limit: der.count)
        let tbs = try reader.element(at: certificate.contentStart, limit: certificate.contentEnd, depth: 1)
        var fields = try reader.children(of: tbs, depth: 1)[...]
        if fields.first?.tag == 0xA0 { fields.removeFirst() }  // version
        guard fields.count >= 3, fields[fields.startIndex].tag == 0x02 else {
            throw ReceiptError(.malformedContainer, "a carried certificate is malformed")
        }
        let serial = fields[fields.startIndex]
        let issuer = fields[fields.startIndex + 2]
        self.serial = der[serial.contentStart..<serial.contentEnd]
        self.issuer = der[issuer.start(in: reader)..<issuer.end]
    }
}

/// The one SignerInfo of a receipt (RFC 5652 §5.3).
struct SignerInfo: Sendable {
    /// How the signer names its certificate.
    enum Identifier: Sendable {
        /// The issuer's Name as encoded (compared byte for byte) and the serial number's INTEGER content.
        case issuerAndSerialNumber(issuer: ArraySlice<UInt8>, serial: ArraySlice<UInt8>)
        case subjectKeyIdentifier([UInt8])
    }

    let identifier: Identifier
    let digestAlgorithm: String
    /// The signed attributes re-tagged as a SET, ready to be hashed, and their message digest.
    let signedAttributes: (der: [UInt8], messageDigest: [UInt8])?
    let signatureAlgorithm: String
    let signature: [UInt8]

    static let messageDigestOID = "1.2.840.113549.1.9.4"

    init(_ reader: BERReader, _ node: BERReader.Element) throws {
        var fields = try reader.children(of: node, depth: 4)[...]
        guard node.tag == 0x30, fields.count >= 5 else {
            throw ReceiptError(.malformedContainer, "SignerInfo is too short")
        }
        _ = try reader.integer(fields.removeFirst())
        let sid = fields.removeFirst()
        if sid.tag == 0x30 {
            let parts = try reader.children(of: sid, depth: 5)
            guard parts.count == 2, parts[1].tag == 0x02 else {
                throw ReceiptError(.malformedContainer, "IssuerAndSerialNumber is malformed")
            }
            identifier = .issuerAndSerialNumber(
                issuer: reader.bytes[parts[0].start(in: reader)..<parts[0].end],
                serial: reader.bytes[parts[1].contentStart..<parts[1].contentEnd])
        } else if sid.tag == 0x80 || sid.tag == 0xA0 {
            identifier = .subjectKeyIdentifier(Array(try reader.octets(of: sid, depth: 5)))
        } else {
            throw ReceiptError(.malformedContainer, "signer identifier is malformed")
        }
        digestAlgorithm = try Self.algorithm(reader, fields.removeFirst(), "digestAlgorithm")

        if let next = fields.first, next.tag == 0xA0 {
            fields.removeFirst()
            var digest: [UInt8]?
            for attribute in try reader.children(of: next, depth: 5) {
                let parts = try reader.children(of: attribute, depth: 6)
                guard parts.count == 2 else { throw ReceiptError(.malformedContainer, "signed attribute is malformed") }
                if reader.oid(parts[0]) == Self.messageDigestOID {
                    let values = try reader.children(of: parts[1], depth: 7)
                    guard digest == nil, values.count == 1, values[0].tag == 0x04 else {
                        throw ReceiptError(.malformedContainer, "messageDigest attribute is malformed")
                    }
                    digest = Array(reader.bytes[values[0].contentStart..<values[0].contentEnd])
                }
            }
            guard let digest else { throw ReceiptError(.malformedContainer, "signed attributes lack a messageDigest") }
            signedAttributes = (try Self.derSet(reencoding: reader, next), digest)
        } else {
            signedAttributes = nil
        }
        guard fields.count >= 2 else { throw ReceiptError(.malformedContainer, "SignerInfo lacks a signature") }
        signatureAlgorithm = try Self.algorithm(reader, fields.removeFirst(), "signatureAlgorithm")
        let signatureNode = fields.removeFirst()
        guard signatureNode.tag & 0xDF == 0x04 else {
            throw ReceiptError(.malformedContainer, "signature is not an OCTET STRING")
        }
        signature = Array(try reader.octets(of: signatureNode, depth: 5))
    }

    /// An AlgorithmIdentifier's OID; its parameters must be absent or NULL.
    private static func algorithm(_ reader: BERReader, _ node: BERReader.Element, _ what: String) throws -> String {
        let parts = try reader.children(of: node, depth: 5)
        guard node.tag == 0x30, (1...2).contains(parts.count), parts.count == 1 || parts[1].tag == 0x05,
            let oid = reader.oid(parts[0])
        else { throw ReceiptError(.malformedContainer, "\(what) is malformed") }
        return oid
    }

    /// The DER of the signed attributes with the SET tag, which is what the signature covers (RFC 5652 §5.4).
    private static func derSet(reencoding reader: BERReader, _ node: BERReader.Element) throws -> [UInt8] {
        // Each attribute keeps its own encoding; only the outer tag and length are rewritten (DER, definite).
        var body: [UInt8] = []
        try reader.forEachChild(of: node, depth: 5) { attribute in
            body += reader.bytes[attribute.start(in: reader)..<attribute.end]
        }
        var header: [UInt8] = [0x31]
        if body.count < 0x80 {
            header.append(UInt8(body.count))
        } else {
            let lengthBytes = withUnsafeBytes(of: UInt32(body.count).bigEndian) { Array($0) }.drop(while: { $0 == 0 })
            header.append(0x80 | UInt8(lengthBytes.count))
            header += lengthBytes
        }
        return header + body
    }
}
