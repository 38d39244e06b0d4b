/// What a client sent as `receipt`, decoded: its kind, its bytes, and the repairs that made it readable.
public struct ReceiptInput: Sendable, Equatable {
    /// The formats we verify.
    public enum Kind: String, Sendable, Equatable {
        /// A unified app receipt: PKCS#7 SignedData (base64 starts `MI…`).
        case unifiedReceipt = "unified_receipt"
        /// An iOS 6 transaction receipt: a signed text plist (base64 starts `ew…`).
        case transactionReceipt = "transaction_receipt"
        /// A StoreKit 2 JWS in compact form (`eyJ….….…`).
        case jws
    }

    /// A fix applied to the client's text before it could be decoded, reported back to the client.
    public enum Repair: String, Sendable, Equatable, CaseIterable {
        /// Line breaks or tabs inside the text were removed.
        case removedLineBreaks = "removed_line_breaks"
        /// Spaces were turned back into `+` (form decoding of an unescaped `+`).
        case spacesToPlus = "spaces_to_plus"
        /// The URL-safe alphabet (`-`, `_`) was mapped to the standard one.
        case urlSafeAlphabet = "url_safe_alphabet"
        /// Missing `=` padding was added.
        case addedPadding = "added_padding"
        /// The text was base64 of base64, and was decoded twice.
        case doubleBase64 = "double_base64"
    }

    /// The detected format.
    public let kind: Kind
    /// The decoded bytes: DER/BER for a unified receipt, plist text for iOS 6, the compact JWS text for a JWS.
    public let bytes: [UInt8]
    /// The repairs applied, in order; empty when the text was clean.
    public let repairs: [Repair]

    /// Creates a decoded input.
    public init(kind: Kind, bytes: [UInt8], repairs: [Repair]) {
        self.kind = kind
        self.bytes = bytes
        self.repairs = repairs
    }

    /// The repairs as the answer's `repairs` array, or nil when the text was clean.
    public var repairsValue: JSONValue? {
        repairs.isEmpty ? nil : .array(repairs.map { .string($0.rawValue) })
    }

    /// The longest receipt text accepted (1 MiB base64 decodes to 768 KiB; real receipts are a few KiB to ~100 KiB).
    public static let maximumTextLength = 1 << 20

    /// Decodes what a client sent, repairing what clients commonly break; throws ``ReceiptError`` when the text
    /// cannot be read or is none of the formats we verify.
    public static func decode(_ text: String) throws -> ReceiptInput {
        guard text.utf8.count <= maximumTextLength else {
            throw ReceiptError(.malformedBase64, "receipt text is longer than \(maximumTextLength) bytes")
        }
        var characters = Array(text.utf8)
        trimWhitespace(&characters)
        // The common cases, a clean compact JWS and clean padded base64 of a receipt, in one pass each.
        if isCompactJWS(characters) { return ReceiptInput(kind: .jws, bytes: characters, repairs: []) }
        if !characters.starts(with: Self.jwsPrefix), let bytes = Base64.decode(characters),
            let input = recognised(bytes)
        {
            return input
        }
        var repairs: [Repair] = []
        guard !characters.isEmpty else { throw ReceiptError(.malformedBase64, "receipt is empty") }

        if characters.contains(where: { $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }) {
            characters.removeAll { $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }
            repairs.append(.removedLineBreaks)
        }
        if isCompactJWS(characters) {
            if characters.contains(0x20) { throw ReceiptError(.malformedJWS, "JWS contains spaces") }
            return ReceiptInput(kind: .jws, bytes: characters, repairs: repairs)
        }
        var bytes = try Base64.decodeRepairing(characters, repairs: &repairs)

        // Base64 of base64: decode once more when the result is itself the text of a format we know.
        if isCompactJWS(bytes) {
            repairs.append(.doubleBase64)
            return ReceiptInput(kind: .jws, bytes: bytes, repairs: repairs)
        }
        if bytes.starts(with: Array("MI".utf8)) || bytes.starts(with: Array("ew".utf8)) {
            var inner = bytes
            trimWhitespace(&inner)
            inner.removeAll { $0 == 0x0A || $0 == 0x0D }
            var innerRepairs: [Repair] = []
            do {
                bytes = try Base64.decodeRepairing(inner, repairs: &innerRepairs)
                repairs.append(.doubleBase64)
                for repair in innerRepairs where !repairs.contains(repair) { repairs.append(repair) }
            } catch {
                // Not base64 after all: the bytes stand as decoded once, and the kind check below judges them.
            }
        }

        switch bytes.first {
        case 0x30:  // ASN.1 SEQUENCE: PKCS#7 ContentInfo
            return ReceiptInput(kind: .unifiedReceipt, bytes: bytes, repairs: repairs)
        case UInt8(ascii: "{"):  // NeXTSTEP-style text plist of an iOS 6 transaction receipt
            return ReceiptInput(kind: .transactionReceipt, bytes: bytes, repairs: repairs)
        default:
            throw ReceiptError(
                .unknownFormat, "decoded bytes are neither PKCS#7, an iOS 6 receipt plist nor a JWS")
        }
    }

    /// A once-decoded text that is plainly a unified receipt or an iOS 6 receipt (not base64 of base64, not a JWS).
    private static func recognised(_ bytes: [UInt8]) -> ReceiptInput? {
        switch bytes.first {
        case 0x30: return ReceiptInput(kind: .unifiedReceipt, bytes: bytes, repairs: [])
        case UInt8(ascii: "{"): return ReceiptInput(kind: .transactionReceipt, bytes: bytes, repairs: [])
        default: return nil
        }
    }

    /// Whether `text` reads as a compact JWS: it starts `eyJ` (`{"`), has two dots and no line break or tab.
    ///
    /// The characters of its parts are not checked here: decoding them as base64url does that (an unreadable one is
    /// a malformed JWS), and a header already seen is matched byte for byte without being decoded again.
    static func isCompactJWS(_ text: [UInt8]) -> Bool {
        text.starts(with: jwsPrefix) && Base64.occurrences(of: UInt8(ascii: "."), in: text) == 2
            && Base64.occurrences(of: 0x0A, in: text) == 0 && Base64.occurrences(of: 0x0D, in: text) == 0
            && Base64.occurrences(of: 0x09, in: text) == 0
    }

    /// How a compact JWS begins: base64url of `{"`.
    static let jwsPrefix: [UInt8] = Array("eyJ".utf8)

    private static func trimWhitespace(_ bytes: inout [UInt8]) {
        func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 }
        while let last = bytes.last, isSpace(last) { bytes.removeLast() }
        let leading = bytes.prefix(while: isSpace).count
        if leading > 0 { bytes.removeFirst(leading) }
    }
}
