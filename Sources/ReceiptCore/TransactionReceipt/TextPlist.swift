/// A reader for the NeXTSTEP-style text plists of iOS 6 transaction receipts: `{ "key" = "value"; … }`.
///
/// Only what Apple writes is accepted: one dictionary of quoted string keys and quoted string values.
enum TextPlist {
    /// The dictionary's members in order; nil when the text is not such a dictionary.
    static func dictionary(_ bytes: [UInt8]) -> [(key: String, value: String)]? {
        var index = 0
        func skipWhitespace() {
            while index < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[index]) { index += 1 }
        }
        func expect(_ character: Character) -> Bool {
            skipWhitespace()
            guard index < bytes.count, bytes[index] == character.asciiValue else { return false }
            index += 1
            return true
        }
        func quoted() -> String? {
            guard expect("\"") else { return nil }
            var output: [UInt8] = []
            while index < bytes.count {
                let byte = bytes[index]
                index += 1
                if byte == UInt8(ascii: "\"") { return String(validating: output, as: UTF8.self) }
                if byte == UInt8(ascii: "\\") {
                    guard index < bytes.count else { return nil }
                    let escaped = bytes[index]
                    index += 1
                    switch escaped {
                    case UInt8(ascii: "n"): output.append(0x0A)
                    case UInt8(ascii: "t"): output.append(0x09)
                    default: output.append(escaped)
                    }
                } else {
                    output.append(byte)
                }
            }
            return nil
        }

        guard expect("{") else { return nil }
        var members: [(key: String, value: String)] = []
        while true {
            if expect("}") {
                skipWhitespace()
                return index == bytes.count ? members : nil
            }
            guard let key = quoted(), expect("="), let value = quoted(), expect(";") else { return nil }
            members.append((key, value))
            guard members.count <= 256 else { return nil }
        }
    }
}
