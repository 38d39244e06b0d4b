/// A fast, allocation-free reader of BER/DER TLVs over a byte array, for the hot path (receipt payloads).
///
/// It walks index ranges instead of building a node tree. Definite and indefinite lengths are accepted (BER);
/// nesting depth and lengths are bounded by the input, so hostile bytes end in an error, never a crash.
struct BERReader {
    /// One element: its tag byte and where its content lies.
    struct Element {
        let tag: UInt8
        /// The index of the tag byte.
        let start: Int
        let contentStart: Int
        let contentEnd: Int
        /// The index just after the element (after the end-of-contents octets for an indefinite length).
        let end: Int

        var isConstructed: Bool { tag & 0x20 != 0 }

        /// The index of the tag byte (spelled as a call to read well at use sites).
        func start(in _: BERReader) -> Int { start }
    }

    let bytes: [UInt8]
    let code: ReceiptError.Code

    /// Deepest nesting accepted.
    static let maximumDepth = 32

    /// The element starting at `index`, which must end by `limit`.
    func element(at index: Int, limit: Int, depth: Int = 0) throws -> Element {
        guard depth < Self.maximumDepth else { throw ReceiptError(code, "ASN.1 nesting is too deep") }
        guard index + 2 <= limit, limit <= bytes.count else { throw ReceiptError(code, "ASN.1 element is truncated") }
        let tag = bytes[index]
        guard tag & 0x1F != 0x1F else { throw ReceiptError(code, "multi-byte ASN.1 tags are not used here") }
        let first = bytes[index + 1]
        var cursor = index + 2
        if first == 0x80 {
            // Indefinite length: constructed only; children until the end-of-contents octets 00 00.
            guard tag & 0x20 != 0 else { throw ReceiptError(code, "indefinite length on a primitive element") }
            let contentStart = cursor
            while true {
                guard cursor + 2 <= limit else { throw ReceiptError(code, "indefinite-length element is unterminated") }
                if bytes[cursor] == 0 && bytes[cursor + 1] == 0 {
                    return Element(
                        tag: tag, start: index, contentStart: contentStart, contentEnd: cursor, end: cursor + 2)
                }
                cursor = try element(at: cursor, limit: limit, depth: depth + 1).end
            }
        }
        var length = 0
        if first & 0x80 == 0 {
            length = Int(first)
        } else {
            let count = Int(first & 0x7F)
            guard count <= 4, cursor + count <= limit else { throw ReceiptError(code, "ASN.1 length is too long") }
            for _ in 0..<count {
                length = length << 8 | Int(bytes[cursor])
                cursor += 1
            }
        }
        guard length <= limit - cursor else { throw ReceiptError(code, "ASN.1 length runs past the data") }
        return Element(tag: tag, start: index, contentStart: cursor, contentEnd: cursor + length, end: cursor + length)
    }

    /// The children of a constructed element, in order.
    func children(of element: Element, depth: Int = 0) throws -> [Element] {
        guard element.isConstructed else { throw ReceiptError(code, "ASN.1 element is not constructed") }
        var children: [Element] = []
        var cursor = element.contentStart
        while cursor < element.contentEnd {
            let child = try self.element(at: cursor, limit: element.contentEnd, depth: depth + 1)
            children.append(child)
            cursor = child.end
        }
        return children
    }

    /// Calls `body` for each child of a constructed element, without collecting them.
    func forEachChild(of element: Element, depth: Int = 0, _ body: (Element) throws -> Void) throws {
        guard element.isConstructed else { throw ReceiptError(code, "ASN.1 element is not constructed") }
        var cursor = element.contentStart
        while cursor < element.contentEnd {
            let child = try self.element(at: cursor, limit: element.contentEnd, depth: depth + 1)
            try body(child)
            cursor = child.end
        }
    }

    /// The content of a primitive element, or the concatenated chunks of a constructed (BER) string.
    func octets(of element: Element, depth: Int = 0) throws -> ArraySlice<UInt8> {
        guard element.isConstructed else { return bytes[element.contentStart..<element.contentEnd] }
        var joined: [UInt8] = []
        try forEachChild(of: element, depth: depth) { chunk in joined += try octets(of: chunk, depth: depth + 1) }
        return joined[...]
    }

    /// The dotted form of an OBJECT IDENTIFIER, or nil when the element is not a well-formed one.
    func oid(_ element: Element) -> String? {
        guard element.tag == 0x06, element.contentEnd > element.contentStart else { return nil }
        var arcs: [UInt64] = []
        var value: UInt64 = 0
        for index in element.contentStart..<element.contentEnd {
            let byte = bytes[index]
            guard value < (1 << 56) else { return nil }
            value = value << 7 | UInt64(byte & 0x7F)
            if byte & 0x80 == 0 {
                if arcs.isEmpty {
                    arcs.append(value < 80 ? value / 40 : 2)
                    arcs.append(value < 80 ? value % 40 : value - 80)
                } else {
                    arcs.append(value)
                }
                value = 0
            }
        }
        guard bytes[element.contentEnd - 1] & 0x80 == 0 else { return nil }
        return arcs.map(String.init).joined(separator: ".")
    }

    /// A two's-complement INTEGER of at most 8 bytes.
    func integer(_ element: Element) throws -> Int64 {
        guard element.tag == 0x02 else { throw ReceiptError(code, "expected an INTEGER") }
        let count = element.contentEnd - element.contentStart
        guard count >= 1, count <= 8 else { throw ReceiptError(code, "INTEGER does not fit 64 bits") }
        var value: Int64 = (bytes[element.contentStart] & 0x80) != 0 ? -1 : 0
        for index in element.contentStart..<element.contentEnd { value = (value << 8) | Int64(bytes[index]) }
        return value
    }
}
