import SwiftASN1

/// Small, strict accessors over swift-asn1's BER node tree, each failing with ``ReceiptError`` `code`.
extension ASN1Node {
    /// The children of a constructed node.
    func children(_ code: ReceiptError.Code, _ what: String) throws -> [ASN1Node] {
        guard case .constructed(let nodes) = content else { throw ReceiptError(code, "\(what) is not constructed") }
        return Array(nodes)
    }

    /// The content octets of a primitive node, or the concatenated chunks of a constructed (BER) string.
    func octets(_ code: ReceiptError.Code, _ what: String) throws -> [UInt8] {
        switch content {
        case .primitive(let bytes): return Array(bytes)
        case .constructed(let nodes):
            var joined: [UInt8] = []
            for node in nodes { joined += try node.octets(code, what) }
            return joined
        }
    }

    /// The value of an INTEGER that fits in 64 bits.
    func smallInteger(_ code: ReceiptError.Code, _ what: String) throws -> Int64 {
        guard identifier == .integer else { throw ReceiptError(code, "\(what) is not an INTEGER") }
        return try ASN1Value.integer(try octets(code, what), code, what)
    }

    /// The dotted form of an OBJECT IDENTIFIER.
    func objectIdentifier(_ code: ReceiptError.Code, _ what: String) throws -> String {
        do {
            return try ASN1ObjectIdentifier(berEncoded: self).description
        } catch {
            throw ReceiptError(code, "\(what) is not an OBJECT IDENTIFIER")
        }
    }

    /// Whether this node carries the given context-specific tag.
    func isContextTag(_ number: UInt) -> Bool {
        identifier.tagClass == .contextSpecific && identifier.tagNumber == number
    }
}

/// Decoders for the DER values nested inside receipt attributes' OCTET STRINGs.
enum ASN1Value {
    /// A two's-complement big-endian INTEGER of at most 8 bytes.
    static func integer(_ bytes: [UInt8], _ code: ReceiptError.Code, _ what: String) throws -> Int64 {
        guard !bytes.isEmpty, bytes.count <= 8 else { throw ReceiptError(code, "\(what) is not a 64-bit INTEGER") }
        var value: Int64 = (bytes[0] & 0x80) != 0 ? -1 : 0
        for byte in bytes { value = (value << 8) | Int64(byte) }
        return value
    }

    /// One DER TLV with a short or long definite length; returns its tag and content.
    static func tlv(_ bytes: [UInt8]) -> (tag: UInt8, content: ArraySlice<UInt8>)? {
        guard bytes.count >= 2 else { return nil }
        let tag = bytes[0]
        var length = Int(bytes[1])
        var offset = 2
        if length & 0x80 != 0 {
            let count = length & 0x7F
            guard count >= 1, count <= 4, bytes.count >= 2 + count else { return nil }
            length = 0
            for byte in bytes[2..<(2 + count)] { length = length << 8 | Int(byte) }
            offset += count
        }
        guard bytes.count - offset == length else { return nil }
        return (tag, bytes[offset...])
    }
}
