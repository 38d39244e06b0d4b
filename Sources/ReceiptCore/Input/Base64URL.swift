/// base64url without padding, as JOSE writes it (JWS, JWT, OpenID Connect): the strict decoder the JWS reader uses,
/// and its encoder.
public enum Base64URL {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// The bytes of `text`; nil on a character outside the alphabet or a length no encoding has.
    public static func decode(_ text: some StringProtocol) -> [UInt8]? {
        Base64.decodeURLSafe(ArraySlice(text.utf8))
    }

    /// `bytes` in base64url without padding.
    public static func encode(_ bytes: some Sequence<UInt8>) -> String {
        let bytes = Array(bytes)
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count * 4 + 2) / 3)
        var index = 0
        while index < bytes.count {
            let count = min(3, bytes.count - index)
            let a = bytes[index]
            let b = count > 1 ? bytes[index + 1] : 0
            let c = count > 2 ? bytes[index + 2] : 0
            out.append(alphabet[Int(a >> 2)])
            out.append(alphabet[Int((a & 0x03) << 4 | b >> 4)])
            if count > 1 { out.append(alphabet[Int((b & 0x0F) << 2 | c >> 6)]) }
            if count > 2 { out.append(alphabet[Int(c & 0x3F)]) }
            index += 3
        }
        return String(decoding: out, as: UTF8.self)
    }
}
