import Crypto
import Foundation

/// The signature of a delivery: header `ReceiptVerify-Signature: t=TIMESTAMP,v1=HEX`, where HEX is the lower-case
/// HMAC-SHA256, keyed with the endpoint's secret, of `TIMESTAMP.BODY` (the UNIX time in seconds, a dot, the body's
/// bytes) (docs/webhooks.md, "Checking a delivery").
///
/// The timestamp is signed with the body, so a receiver that refuses old timestamps (5 minutes in our examples)
/// cannot be fed a recorded delivery later.
public enum WebhookSignature {
    /// The header's name.
    public static let headerName = "ReceiptVerify-Signature"

    /// The header value for `body` sent at `timestamp` (seconds since 1970).
    public static func header(secret: [UInt8], timestamp: Int64, body: [UInt8]) -> String {
        "t=\(timestamp),v1=\(hex(mac(secret: secret, timestamp: timestamp, body: body)))"
    }

    /// Whether `header` signs `body` with `secret` at a timestamp within `tolerance` seconds of `now`; the
    /// comparison takes the same time whatever the presented signature.
    public static func isValid(
        header: String, body: [UInt8], secret: [UInt8], now: Date, tolerance: TimeInterval = 300
    ) -> Bool {
        var timestamp: Int64?
        var signatures: [String] = []
        for part in header.split(separator: ",") {
            let pair = part.split(separator: "=", maxSplits: 1).map(String.init)
            guard pair.count == 2 else { continue }
            if pair[0] == "t" { timestamp = Int64(pair[1]) }
            if pair[0] == "v1" { signatures.append(pair[1]) }
        }
        guard let timestamp, abs(now.timeIntervalSince1970 - Double(timestamp)) <= tolerance else { return false }
        let expected = Array(hex(mac(secret: secret, timestamp: timestamp, body: body)).utf8)
        return signatures.contains { ConstantTime.equals(Array($0.utf8), expected) }
    }

    /// A fresh signing secret: `whsec_` and 32 random bytes in hex.
    public static func newSecret() -> String {
        "whsec_" + hex(SecureRandom.bytes(32))
    }

    private static func mac(secret: [UInt8], timestamp: Int64, body: [UInt8]) -> [UInt8] {
        var message = Array("\(timestamp).".utf8)
        message += body
        return Array(HMAC<SHA256>.authenticationCode(for: message, using: SymmetricKey(data: secret)))
    }

    private static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: text, as: UTF8.self)
    }
}
