import SwiftASN1

/// Small, strict accessors over swift-asn1's node tree (used for the iOS 6 receipt certificate), each failing with ``ReceiptError`` `code`.
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
