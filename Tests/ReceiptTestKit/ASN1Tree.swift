/// A tiny ASN.1 tree written by hand, because receipts need what `DER.Serializer` cannot write: indefinite lengths
/// (`0x80` … `00 00`) on constructed nodes and chunked (constructed) OCTET STRINGs.
///
/// Tags are single identifier bytes (every tag a receipt uses is below 31); lengths are minimal definite lengths
/// unless a constructed node asks for an indefinite one.
indirect enum ASN1Tree: Sendable {
    /// A primitive node: one identifier byte and its content octets.
    case primitive(UInt8, [UInt8])
    /// A constructed node: one identifier byte (bit 6 set) and its children, optionally with an indefinite length.
    case constructed(UInt8, [ASN1Tree], indefinite: Bool)
    /// Bytes already encoded (a certificate's DER, a Name's DER), copied as they are.
    case encoded([UInt8])

    /// The encoding of this node and its children.
    var bytes: [UInt8] {
        var output: [UInt8] = []
        append(to: &output)
        return output
    }

    private func append(to output: inout [UInt8]) {
        switch self {
        case .primitive(let tag, let content):
            output.append(tag)
            output.append(contentsOf: Self.length(content.count))
            output.append(contentsOf: content)
        case .constructed(let tag, let children, let indefinite):
            var content: [UInt8] = []
            for child in children { child.append(to: &content) }
            output.append(tag)
            if indefinite {
                output.append(0x80)
                output.append(contentsOf: content)
                output.append(contentsOf: [0x00, 0x00])
            } else {
                output.append(contentsOf: Self.length(content.count))
                output.append(contentsOf: content)
            }
        case .encoded(let bytes):
            output.append(contentsOf: bytes)
        }
    }

    /// A definite length: short form below 128, else `0x80 | n` followed by n big-endian bytes, minimal.
    static func length(_ count: Int) -> [UInt8] {
        if count < 0x80 { return [UInt8(count)] }
        var bytes: [UInt8] = []
        var remaining = count
        while remaining > 0 {
            bytes.insert(UInt8(remaining & 0xFF), at: 0)
            remaining >>= 8
        }
        return [0x80 | UInt8(bytes.count)] + bytes
    }
}

extension ASN1Tree {
    static func sequence(_ children: [ASN1Tree], indefinite: Bool = false) -> ASN1Tree {
        .constructed(0x30, children, indefinite: indefinite)
    }

    static func set(_ children: [ASN1Tree], indefinite: Bool = false) -> ASN1Tree {
        .constructed(0x31, children, indefinite: indefinite)
    }

    /// `[number]` context-specific and constructed: an EXPLICIT wrapper, or an IMPLICIT SET/SEQUENCE.
    static func context(_ number: UInt8, _ children: [ASN1Tree], indefinite: Bool = false) -> ASN1Tree {
        .constructed(0xA0 | number, children, indefinite: indefinite)
    }

    static let null = ASN1Tree.primitive(0x05, [])

    static func integer(_ value: Int64) -> ASN1Tree { .primitive(0x02, integerContent(value)) }

    /// An INTEGER from content octets written as given (which may make a malformed or negative INTEGER).
    static func integer(content: [UInt8]) -> ASN1Tree { .primitive(0x02, content) }

    /// A non-negative INTEGER from big-endian magnitude bytes (a certificate serial number, which swift-certificates
    /// keeps without the sign octet): leading zeros dropped, one `00` added when the high bit is set.
    static func integer(unsigned magnitude: some Collection<UInt8>) -> ASN1Tree {
        var content = Array(magnitude.drop(while: { $0 == 0 }))
        if content.isEmpty || content[0] & 0x80 != 0 { content.insert(0x00, at: 0) }
        return .primitive(0x02, content)
    }

    static func octetString(_ bytes: [UInt8]) -> ASN1Tree { .primitive(0x04, bytes) }

    /// A constructed OCTET STRING (tag 0x24) of primitive chunks, as BER allows and real receipts use.
    static func chunkedOctetString(_ bytes: [UInt8], chunkSize: Int, indefinite: Bool) -> ASN1Tree {
        var chunks: [ASN1Tree] = []
        var start = 0
        repeat {
            let end = min(start + chunkSize, bytes.count)
            chunks.append(.octetString(Array(bytes[start..<end])))
            start = end
        } while start < bytes.count
        return .constructed(0x24, chunks, indefinite: indefinite)
    }

    static func utf8String(_ text: String) -> ASN1Tree { .primitive(0x0C, Array(text.utf8)) }

    static func ia5String(_ text: String) -> ASN1Tree { .primitive(0x16, Array(text.utf8)) }

    /// An OBJECT IDENTIFIER from its dotted form, e.g. `"1.2.840.113549.1.7.2"`.
    static func objectIdentifier(_ dotted: String) -> ASN1Tree {
        let arcs = dotted.split(separator: ".").compactMap { UInt64($0) }
        precondition(
            arcs.count >= 2 && arcs.count == dotted.split(separator: ".").count && arcs[0] <= 2,
            "not a dotted OID: \(dotted)")
        var content: [UInt8] = []
        for arc in [arcs[0] * 40 + arcs[1]] + arcs.dropFirst(2) {
            var groups: [UInt8] = [UInt8(arc & 0x7F)]
            var remaining = arc >> 7
            while remaining > 0 {
                groups.insert(UInt8(remaining & 0x7F) | 0x80, at: 0)
                remaining >>= 7
            }
            content.append(contentsOf: groups)
        }
        return .primitive(0x06, content)
    }

    /// An AlgorithmIdentifier with NULL parameters.
    static func algorithm(_ dotted: String) -> ASN1Tree { .sequence([.objectIdentifier(dotted), .null]) }

    /// Minimal big-endian two's complement.
    static func integerContent(_ value: Int64) -> [UInt8] {
        var bytes = withUnsafeBytes(of: value.bigEndian) { Array($0) }
        while bytes.count > 1
            && ((bytes[0] == 0x00 && bytes[1] & 0x80 == 0) || (bytes[0] == 0xFF && bytes[1] & 0x80 != 0))
        {
            bytes.removeFirst()
        }
        return bytes
    }
}
