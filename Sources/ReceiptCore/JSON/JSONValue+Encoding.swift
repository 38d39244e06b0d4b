extension JSONValue {
    /// Compact JSON text (UTF-8), keys in order, `/` not escaped.
    public var encoded: [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(16_384)
        write(to: &output)
        return output
    }

    /// Compact JSON text.
    public var encodedString: String { String(decoding: encoded, as: UTF8.self) }

    func write(to output: inout [UInt8]) {
        switch self {
        case .string(let text): JSONValue.writeString(text, to: &output)
        case .integer(let number): output.append(contentsOf: String(number).utf8)
        case .double(let number):
            if number.isFinite {
                output.append(
                    contentsOf: (number == number.rounded() && abs(number) < 1e15
                        ? String(Int64(number)) : String(number)).utf8)
            } else {
                output.append(contentsOf: "null".utf8)
            }
        case .bool(let flag): output.append(contentsOf: (flag ? "true" : "false").utf8)
        case .null: output.append(contentsOf: "null".utf8)
        case .array(let elements):
            output.append(UInt8(ascii: "["))
            for (index, element) in elements.enumerated() {
                if index > 0 { output.append(UInt8(ascii: ",")) }
                element.write(to: &output)
            }
            output.append(UInt8(ascii: "]"))
        case .object(let object):
            output.append(UInt8(ascii: "{"))
            for (index, member) in object.members.enumerated() {
                if index > 0 { output.append(UInt8(ascii: ",")) }
                JSONValue.writeString(member.key, to: &output)
                output.append(UInt8(ascii: ":"))
                member.value.write(to: &output)
            }
            output.append(UInt8(ascii: "}"))
        }
    }

    private static let hexDigits = Array("0123456789abcdef".utf8)

    static func writeString(_ text: String, to output: inout [UInt8]) {
        output.append(UInt8(ascii: "\""))
        var text = text
        // Almost every string is plain: copy it in one go when nothing needs escaping.
        let plain = text.withUTF8 { bytes -> Bool in
            guard !needsEscaping(bytes) else { return false }
            output.append(contentsOf: bytes)
            return true
        }
        if !plain {
            for byte in text.utf8 {
                switch byte {
                case UInt8(ascii: "\""): output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\"")])
                case UInt8(ascii: "\\"): output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\\")])
                case 0x0A: output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
                case 0x0D: output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "r")])
                case 0x09: output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "t")])
                case 0..<0x20:
                    output.append(contentsOf: "\\u00".utf8)
                    output.append(hexDigits[Int(byte >> 4)])
                    output.append(hexDigits[Int(byte & 0x0F)])
                default: output.append(byte)
                }
            }
        }
        output.append(UInt8(ascii: "\""))
    }

    /// Whether any byte of `bytes` needs escaping, eight at a time: a word has a byte below 0x20, or equal to `"` or
    /// `\\`, exactly when the classic has-less / has-zero bit tricks leave a high bit set.
    private static func needsEscaping(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        var index = 0
        if let base = UnsafeRawPointer(bytes.baseAddress) {
            while index + 8 <= bytes.count {
                let word = base.loadUnaligned(fromByteOffset: index, as: UInt64.self)
                let quote = word ^ (ones &* 0x22)
                let backslash = word ^ (ones &* 0x5C)
                let control = (word &- ones &* 0x20) & ~word
                let zeroQuote = (quote &- ones) & ~quote
                let zeroBackslash = (backslash &- ones) & ~backslash
                if (control | zeroQuote | zeroBackslash) & highs != 0 { return true }
                index += 8
            }
        }
        while index < bytes.count {
            if needsEscaping(bytes[index]) { return true }
            index += 1
        }
        return false
    }

    @inline(__always)
    private static func needsEscaping(_ byte: UInt8) -> Bool {
        byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\")
    }
}

/// Writes one JSON object's text member by member, straight into its bytes: for an answer assembled from parts (a
/// body and the fields added to it), without first building the whole object as a ``JSONObject``.
public struct JSONObjectWriter: ~Copyable {
    private var output: [UInt8] = []
    private var isEmpty = true

    /// A writer whose output has room for `capacity` bytes before it grows.
    public init(capacity: Int) {
        output.reserveCapacity(capacity)
        output.append(UInt8(ascii: "{"))
    }

    /// Writes the member `key`: `value` (keys are not checked for repeats).
    public mutating func write(_ key: String, _ value: JSONValue) {
        if isEmpty { isEmpty = false } else { output.append(UInt8(ascii: ",")) }
        JSONValue.writeString(key, to: &output)
        output.append(UInt8(ascii: ":"))
        value.write(to: &output)
    }

    /// The object's text, closed.
    public consuming func finish() -> [UInt8] {
        output.append(UInt8(ascii: "}"))
        return output
    }
}
