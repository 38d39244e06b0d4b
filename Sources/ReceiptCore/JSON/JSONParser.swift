/// A strict JSON reader (RFC 8259) that keeps object key order and tells integers from other numbers.
///
/// Used on untrusted input (JWS headers and payloads): nesting is limited and every malformed byte is an error.
public enum JSONParser {
    /// Deepest nesting accepted.
    public static let maximumDepth = 64

    /// The text is not JSON (or nests deeper than ``maximumDepth``).
    public struct Failure: Error, Sendable {}

    /// The longest number accepted, in characters: real ones are short, and converting a long one is not linear.
    public static let maximumNumberLength = 64

    /// Parses one JSON value that must fill `bytes` (surrounding whitespace allowed).
    ///
    /// The cost is linear in the input: duplicate keys are found through a hash set, numbers are bounded.
    ///
    /// - Parameters:
    ///   - maximumDepth: the deepest nesting accepted (at most ``maximumDepth``).
    ///   - maximumMembers: the most members one object may have; more is a ``Failure``.
    public static func parse(
        _ bytes: some Collection<UInt8>, maximumDepth: Int = maximumDepth, maximumMembers: Int = .max
    ) throws -> JSONValue {
        var reader = Reader(
            bytes: Array(bytes), maximumDepth: min(maximumDepth, Self.maximumDepth), maximumMembers: maximumMembers)
        reader.skipWhitespace()
        let value = try reader.value(depth: 0)
        reader.skipWhitespace()
        guard reader.index == reader.bytes.count else { throw Failure() }
        return value
    }

    private struct Reader {
        let bytes: [UInt8]
        let maximumDepth: Int
        let maximumMembers: Int
        var index = 0

        mutating func skipWhitespace() {
            while index < bytes.count {
                switch bytes[index] {
                case 0x20, 0x09, 0x0A, 0x0D: index += 1
                default: return
                }
            }
        }

        mutating func value(depth: Int) throws -> JSONValue {
            guard depth < maximumDepth, index < bytes.count else { throw Failure() }
            switch bytes[index] {
            case UInt8(ascii: "{"): return .object(try object(depth: depth))
            case UInt8(ascii: "["): return .array(try array(depth: depth))
            case UInt8(ascii: "\""): return .string(try string())
            case UInt8(ascii: "t"): try literal("true"); return .bool(true)
            case UInt8(ascii: "f"): try literal("false"); return .bool(false)
            case UInt8(ascii: "n"): try literal("null"); return .null
            default: return try number()
            }
        }

        mutating func literal(_ text: String) throws {
            let expected = Array(text.utf8)
            guard bytes.count - index >= expected.count, Array(bytes[index..<(index + expected.count)]) == expected
            else { throw Failure() }
            index += expected.count
        }

        mutating func object(depth: Int) throws -> JSONObject {
            index += 1
            var object = JSONObject()
            skipWhitespace()
            if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
                index += 1
                return object
            }
            // Duplicate keys are ambiguous: refuse them. Small objects are searched; a large one keeps a set, so that
            // the check stays linear in the object's size.
            var keys: Set<String>?
            while true {
                skipWhitespace()
                guard index < bytes.count, bytes[index] == UInt8(ascii: "\""),
                    object.members.count < maximumMembers
                else { throw Failure() }
                let key = try string()
                skipWhitespace()
                guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw Failure() }
                index += 1
                skipWhitespace()
                let value = try value(depth: depth + 1)
                if keys == nil, object.members.count >= 8 { keys = Set(object.keys) }
                if keys != nil {
                    guard keys?.insert(key).inserted == true else { throw Failure() }
                } else {
                    guard object[key] == nil else { throw Failure() }
                }
                object.append(key, value)
                skipWhitespace()
                guard index < bytes.count else { throw Failure() }
                if bytes[index] == UInt8(ascii: ",") {
                    index += 1
                } else if bytes[index] == UInt8(ascii: "}") {
                    index += 1
                    return object
                } else {
                    throw Failure()
                }
            }
        }

        mutating func array(depth: Int) throws -> [JSONValue] {
            index += 1
            var elements: [JSONValue] = []
            skipWhitespace()
            if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
                index += 1
                return elements
            }
            while true {
                skipWhitespace()
                elements.append(try value(depth: depth + 1))
                skipWhitespace()
                guard index < bytes.count else { throw Failure() }
                if bytes[index] == UInt8(ascii: ",") {
                    index += 1
                } else if bytes[index] == UInt8(ascii: "]") {
                    index += 1
                    return elements
                } else {
                    throw Failure()
                }
            }
        }

        mutating func string() throws -> String {
            index += 1
            // Most strings have no escape: found whole, they are made from the input's bytes in one step.
            let start = index
            while index < bytes.count {
                let byte = bytes[index]
                if byte == UInt8(ascii: "\"") {
                    let text = try Self.text(bytes[start..<index])
                    index += 1
                    return text
                }
                if byte == UInt8(ascii: "\\") || byte < 0x20 { break }
                index += 1
            }
            var output = Array(bytes[start..<index])
            while true {
                guard index < bytes.count else { throw Failure() }
                let byte = bytes[index]
                index += 1
                switch byte {
                case UInt8(ascii: "\""):
                    guard let text = String(validating: output, as: UTF8.self) else { throw Failure() }
                    return text
                case UInt8(ascii: "\\"):
                    guard index < bytes.count else { throw Failure() }
                    let escape = bytes[index]
                    index += 1
                    switch escape {
                    case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): output.append(escape)
                    case UInt8(ascii: "b"): output.append(0x08)
                    case UInt8(ascii: "f"): output.append(0x0C)
                    case UInt8(ascii: "n"): output.append(0x0A)
                    case UInt8(ascii: "r"): output.append(0x0D)
                    case UInt8(ascii: "t"): output.append(0x09)
                    case UInt8(ascii: "u"):
                        var scalar = try hex4()
                        if (0xD800..<0xDC00).contains(scalar) {
                            guard bytes.count - index >= 6, bytes[index] == UInt8(ascii: "\\"),
                                bytes[index + 1] == UInt8(ascii: "u")
                            else { throw Failure() }
                            index += 2
                            let low = try hex4()
                            guard (0xDC00..<0xE000).contains(low) else { throw Failure() }
                            scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                        }
                        guard let unicode = Unicode.Scalar(scalar) else { throw Failure() }
                        output.append(contentsOf: Array(String(Character(unicode)).utf8))
                    default: throw Failure()
                    }
                case 0..<0x20: throw Failure()
                default: output.append(byte)
                }
            }
        }

        /// `bytes` as a string: ASCII directly (the stdlib's validating initialiser is generic and costs metadata
        /// look-ups), anything else validated as UTF-8.
        static func text(_ bytes: ArraySlice<UInt8>) throws -> String {
            try bytes.withUnsafeBufferPointer { buffer in
                var high: UInt8 = 0
                for byte in buffer { high |= byte }
                if high < 0x80 { return String(decoding: buffer, as: UTF8.self) }
                guard let text = String(validating: buffer, as: UTF8.self) else { throw Failure() }
                return text
            }
        }

        mutating func hex4() throws -> UInt32 {
            guard bytes.count - index >= 4 else { throw Failure() }
            var value: UInt32 = 0
            for _ in 0..<4 {
                let byte = bytes[index]
                index += 1
                let digit: UInt8
                switch byte {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
                case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
                case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
                default: throw Failure()
                }
                value = value << 4 | UInt32(digit)
            }
            return value
        }

        mutating func number() throws -> JSONValue {
            let start = index
            if index < bytes.count, bytes[index] == UInt8(ascii: "-") { index += 1 }
            let integerStart = index
            while index < bytes.count, bytes[index] >= UInt8(ascii: "0"), bytes[index] <= UInt8(ascii: "9") {
                index += 1
            }
            let integerDigits = index - integerStart
            guard integerDigits > 0, !(integerDigits > 1 && bytes[integerStart] == UInt8(ascii: "0")) else {
                throw Failure()
            }
            var isInteger = true
            if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
                isInteger = false
                index += 1
                let fractionStart = index
                while index < bytes.count, bytes[index] >= UInt8(ascii: "0"), bytes[index] <= UInt8(ascii: "9") {
                    index += 1
                }
                guard index > fractionStart else { throw Failure() }
            }
            if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
                isInteger = false
                index += 1
                if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
                    index += 1
                }
                let exponentStart = index
                while index < bytes.count, bytes[index] >= UInt8(ascii: "0"), bytes[index] <= UInt8(ascii: "9") {
                    index += 1
                }
                guard index > exponentStart else { throw Failure() }
            }
            guard index - start <= JSONParser.maximumNumberLength else { throw Failure() }
            // Integers of up to 18 digits cannot overflow: their value is summed directly.
            if isInteger, integerDigits <= 18 {
                var value: Int64 = 0
                for position in integerStart..<index { value = value * 10 + Int64(bytes[position] &- 0x30) }
                return .integer(integerStart > start ? -value : value)
            }
            let text = String(decoding: bytes[start..<index], as: UTF8.self)
            if isInteger, let integer = Int64(text) { return .integer(integer) }
            guard let double = Double(text), double.isFinite else { throw Failure() }
            return .double(double)
        }
    }
}
