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
        header(secrets: [secret], timestamp: timestamp, body: body)
    }

    /// The header value signed with each of `secrets` (a `v1` each: during a rotation's grace period, the new
    /// secret's and the previous one's).
    public static func header(secrets: [[UInt8]], timestamp: Int64, body: [UInt8]) -> String {
        (["t=\(timestamp)"] + secrets.map { "v1=" + hex(mac(secret: $0, timestamp: timestamp, body: body)) })
            .joined(separator: ",")
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

    /// A fresh signing secret, as Standard Webhooks writes one: `whsec_` and 24 random bytes in base64 (32 characters,
    /// no padding). Secrets made before were `whsec_` and 64 hex digits; both sign both headers.
    public static func newSecret() -> String {
        "whsec_" + Data(SecureRandom.bytes(24)).base64EncodedString()
    }

    // MARK: Standard Webhooks

    /// The Standard Webhooks headers' names (https://www.standardwebhooks.com), sent beside ``headerName``.
    public static let standardIDHeader = "webhook-id"
    public static let standardTimestampHeader = "webhook-timestamp"
    public static let standardSignatureHeader = "webhook-signature"

    /// The Standard Webhooks key of a secret: the base64 after `whsec_`, decoded as the libraries decode it (padding
    /// optional). A hex secret of before is base64 text too (64 characters, 48 bytes), so every secret has a key.
    public static func standardKey(secret: [UInt8]) -> [UInt8]? {
        var text = String(decoding: secret, as: UTF8.self)
        if text.hasPrefix("whsec_") { text.removeFirst("whsec_".count) }
        text = String(text.prefix { $0 != "=" })
        while text.utf8.count % 4 != 0 { text += "=" }
        guard let key = Data(base64Encoded: text), !key.isEmpty else { return nil }
        return Array(key)
    }

    /// `webhook-signature`'s value: `v1,` and the base64 HMAC-SHA256, keyed with each secret's Standard Webhooks key,
    /// of `ID.TIMESTAMP.BODY`; one signature per secret, separated by spaces (the libraries accept any that matches).
    public static func standardSignature(secrets: [[UInt8]], id: String, timestamp: Int64, body: [UInt8]) -> String {
        var message = Array("\(id).\(timestamp).".utf8)
        message += body
        return secrets.compactMap { secret in
            standardKey(secret: secret).map { key in
                "v1,"
                    + Data(HMAC<SHA256>.authenticationCode(for: message, using: SymmetricKey(data: key)))
                    .base64EncodedString()
            }
        }.joined(separator: " ")
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
