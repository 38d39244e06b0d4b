import Foundation
import Hummingbird
import NIOCore

/// The encodings the provider speaks: base64url, `application/x-www-form-urlencoded`, HTML text, JSON answers.
enum WireFormat {
    /// Base64url without padding (RFC 7515 §2), as JWTs, JWKs and PKCE challenges use it.
    static func base64URL(_ bytes: some Sequence<UInt8>) -> String {
        var text = Data(bytes).base64EncodedString()
        text = text.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        while text.hasSuffix("=") { text.removeLast() }
        return text
    }

    /// `count` random bytes in base64url: codes and access tokens.
    static func randomToken(count: Int = 32) -> String {
        var generator = SystemRandomNumberGenerator()
        return base64URL((0..<count).map { _ in UInt8.random(in: .min ... .max, using: &generator) })
    }

    /// The name/value pairs of a query string or form body, in order, decoded (`+` is a space, as HTML forms send
    /// it; Hummingbird's own query parser leaves it a plus).
    static func formFields(_ text: String) -> [(name: String, value: String)] {
        text.split(separator: "&", omittingEmptySubsequences: true).map { pair in
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let value = parts.count > 1 ? formDecode(parts[1]) : ""
            return (name: formDecode(parts[0]), value: value)
        }
    }

    static func formDecode(_ text: some StringProtocol) -> String {
        let spaced = text.replacingOccurrences(of: "+", with: " ")
        return spaced.removingPercentEncoding ?? spaced
    }

    /// RFC 3986's unreserved characters: everything else is percent-encoded in a query value.
    private static var unreserved: CharacterSet {
        CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
    }

    static func queryEncode(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: unreserved) ?? text
    }

    /// Text safe inside an HTML element or a double-quoted attribute.
    static func html(_ text: String) -> String {
        var escaped = ""
        for character in text {
            switch character {
            case "&": escaped += "&amp;"
            case "<": escaped += "&lt;"
            case ">": escaped += "&gt;"
            case "\"": escaped += "&quot;"
            case "'": escaped += "&#39;"
            default: escaped.append(character)
            }
        }
        return escaped
    }

    /// JSON without escaped slashes (URLs stay readable) and in a stable key order.
    static func json(_ value: some Encodable) throws -> Data {
        let encoder = JSONEncoder()
        // Swift names in, OpenID names out: `emailVerified` is `email_verified`, `jwksUri` is `jwks_uri`.
        encoder.keyEncodingStrategy = .convertToSnakeCase
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return try encoder.encode(value)
    }

    /// A JSON answer; `extraHeaders` add to the content type.
    static func jsonResponse(
        _ value: some Encodable, status: HTTPResponse.Status = .ok, extraHeaders: HTTPFields = [:]
    ) -> Response {
        var headers = extraHeaders
        headers[.contentType] = "application/json"
        // Every value encoded here is plain strings, numbers and booleans: encoding cannot fail.
        let body = (try? json(value)) ?? Data("{}".utf8)
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: body)))
    }

    static func textResponse(_ text: String, status: HTTPResponse.Status, contentType: String) -> Response {
        Response(
            status: status, headers: [.contentType: contentType], body: .init(byteBuffer: ByteBuffer(string: text)))
    }
}
