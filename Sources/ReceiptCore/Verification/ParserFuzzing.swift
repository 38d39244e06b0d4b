/// The fuzzing seam: runs every parser that reads untrusted bytes, for the libFuzzer target in `Fuzz/`.
///
/// Errors are the expected outcome for random input; a crash, hang or unbounded allocation is the bug.
public enum ParserFuzzing {
    /// Feeds `bytes` to the base64 repairer, the PKCS#7 reader, the receipt payload decoder, the JSON, plist and
    /// certificate readers, and the JWS reader. Returns how many accepted the input (to keep the work observable).
    @discardableResult
    public static func exercise(_ bytes: [UInt8]) -> Int {
        var accepted = 0
        func attempt(_ body: () throws -> Void) {
            do {
                try body()
                accepted += 1
            } catch {
                // Rejection is the normal outcome for fuzzed input.
            }
        }
        attempt { _ = try ReceiptInput.decode(String(decoding: bytes, as: UTF8.self)) }
        attempt { _ = try SignedData(ber: bytes) }
        attempt { _ = try ReceiptPayload(der: bytes) }
        attempt { _ = try JSONParser.parse(bytes) }
        attempt { _ = try SignedJWS(compact: bytes) }
        attempt { _ = try LegacyCertificate(der: bytes) }
        if TextPlist.dictionary(bytes) != nil { accepted += 1 }
        return accepted
    }
}
