/// Base64 decoding that reports, rather than silently applies, the repairs clients need.
enum Base64 {
    private static let table: [UInt8] = {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (index, character) in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8.enumerated() {
            table[Int(character)] = UInt8(index)
        }
        return table
    }()

    static func isURLSafeCharacter(_ byte: UInt8) -> Bool {
        (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
            || (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z"))
            || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")) || byte == UInt8(ascii: "-")
            || byte == UInt8(ascii: "_")
    }

    /// Decodes `text` (no line breaks), first turning spaces into `+`, the URL-safe alphabet into the standard one
    /// and adding missing padding, each recorded in `repairs`.
    static func decodeRepairing(_ text: [UInt8], repairs: inout [ReceiptInput.Repair]) throws -> [UInt8] {
        var text = text
        if text.contains(0x20) {
            text = text.map { $0 == 0x20 ? UInt8(ascii: "+") : $0 }
            repairs.append(.spacesToPlus)
        }
        if text.contains(where: { $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "_") }) {
            text = text.map {
                $0 == UInt8(ascii: "-") ? UInt8(ascii: "+") : $0 == UInt8(ascii: "_") ? UInt8(ascii: "/") : $0
            }
            repairs.append(.urlSafeAlphabet)
        }
        let unpadded = text.count - text.reversed().prefix(while: { $0 == UInt8(ascii: "=") }).count
        if text.count % 4 != 0 {
            guard unpadded % 4 != 1, text.count == unpadded else {
                throw ReceiptError(.malformedBase64, "base64 text has an impossible length")
            }
            text.append(contentsOf: repeatElement(UInt8(ascii: "="), count: 4 - text.count % 4))
            repairs.append(.addedPadding)
        }
        guard let bytes = decode(text) else {
            throw ReceiptError(.malformedBase64, "receipt is not base64")
        }
        return bytes
    }

    /// Strict standard base64 with padding; nil on any stray character.
    static func decode(_ text: [UInt8]) -> [UInt8]? {
        guard text.count % 4 == 0 else { return nil }
        var output: [UInt8] = []
        output.reserveCapacity(text.count / 4 * 3)
        var index = 0
        while index < text.count {
            let a = table[Int(text[index])]
            let b = table[Int(text[index + 1])]
            let cPad = text[index + 2] == UInt8(ascii: "=")
            let dPad = text[index + 3] == UInt8(ascii: "=")
            let isLast = index + 4 == text.count
            guard a != 0xFF, b != 0xFF, !(cPad && !dPad), isLast || (!cPad && !dPad) else { return nil }
            let c = cPad ? 0 : table[Int(text[index + 2])]
            let d = dPad ? 0 : table[Int(text[index + 3])]
            guard c != 0xFF, d != 0xFF else { return nil }
            output.append(a << 2 | b >> 4)
            if !cPad { output.append((b & 0x0F) << 4 | c >> 2) }
            if !dPad { output.append((c & 0x03) << 6 | d) }
            index += 4
        }
        return output
    }

    /// Decodes base64url without padding (JWS parts).
    static func decodeURLSafe(_ text: some Collection<UInt8>) -> [UInt8]? {
        var standard = text.map {
            $0 == UInt8(ascii: "-") ? UInt8(ascii: "+") : $0 == UInt8(ascii: "_") ? UInt8(ascii: "/") : $0
        }
        guard standard.count % 4 != 1 else { return nil }
        if standard.count % 4 != 0 {
            standard.append(contentsOf: repeatElement(UInt8(ascii: "="), count: 4 - standard.count % 4))
        }
        return decode(standard)
    }
}
