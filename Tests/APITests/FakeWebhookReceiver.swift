import Crypto
import Fakes
import Foundation
import Hummingbird
import NIOCore
import ReceiptCore
import Synchronization

/// A customer's webhook receiver on loopback: a real HTTP server that checks each delivery's signature as a customer
/// would (HMAC-SHA256 of `t.body` with the endpoint's secret, a timestamp within five minutes), records it, and
/// answers as scripted: 200, 500, a redirect, or no answer for a while.
final class FakeWebhookReceiver: Sendable {
    /// How it answers.
    enum Mode: Sendable {
        case accept
        case fail(Int)
        case redirect
        case hang(Duration)
    }

    /// One delivery as it arrived.
    struct Delivery: Sendable {
        let path: String
        let eventID: String
        let type: String
        let body: JSONObject
        /// Whether its signature checked out with the path's secret: our header, and the Standard Webhooks headers.
        let isSigned: Bool
        /// The status it was answered with.
        let answered: Int
    }

    private let state = Mutex<(modes: [String: Mode], secrets: [String: [UInt8]], deliveries: [Delivery])>(
        ([:], [:], []))

    /// Sets how deliveries to `path` are answered.
    func set(_ path: String, _ mode: Mode) { state.withLock { $0.modes[path] = mode } }
    /// The secret deliveries to `path` must be signed with.
    func expect(secret: String, on path: String) { state.withLock { $0.secrets[path] = Array(secret.utf8) } }

    var deliveries: [Delivery] { state.withLock { $0.deliveries } }

    /// The deliveries to `path` that were answered 2xx.
    func accepted(on path: String) -> [Delivery] {
        deliveries.filter { $0.path == path && (200...299).contains($0.answered) }
    }

    /// Waits until `condition` holds of the deliveries, up to `timeout`.
    func wait(for timeout: Duration = .seconds(20), until condition: ([Delivery]) -> Bool) async throws -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if condition(deliveries) { return true }
            try await Task.sleep(for: .milliseconds(100))
        }
        return condition(deliveries)
    }

    private func respond(_ request: Request) async -> Response {
        let path = request.uri.path
        let body = Array((try? await request.body.collect(upTo: 1 << 20)).map { Array(buffer: $0) } ?? [])
        let (mode, secret) = state.withLock { ($0.modes[path] ?? .accept, $0.secrets[path]) }
        let header = Self.header("ReceiptVerify-Signature", of: request)
        let isSigned =
            secret.map {
                Self.isSigned(header: header, body: body, secret: $0)
                    && Self.isStandardSigned(
                        id: Self.header("webhook-id", of: request),
                        timestamp: Self.header("webhook-timestamp", of: request),
                        signatures: Self.header("webhook-signature", of: request), body: body, secret: $0)
                    && Self.header("webhook-id", of: request) == Self.header("ReceiptVerify-Event-Id", of: request)
            } ?? false
        let status: Int
        switch mode {
        case .accept: status = 200
        case .fail(let code): status = code
        case .redirect: status = 302
        case .hang(let duration):
            try? await Task.sleep(for: duration)
            status = 200
        }
        let object: JSONObject
        if case .object(let parsed)? = try? JSONParser.parse(body) {
            object = parsed
        } else {
            object = JSONObject(capacity: 0)
        }
        state.withLock {
            $0.deliveries.append(
                Delivery(
                    path: path, eventID: Self.header("ReceiptVerify-Event-Id", of: request),
                    type: Self.header("ReceiptVerify-Event-Type", of: request), body: object,
                    isSigned: isSigned, answered: status))
        }
        var headers = HTTPFields()
        if status == 302 { headers[.location] = "http://127.0.0.1:9/elsewhere" }
        return Response(status: .init(code: status), headers: headers)
    }

    /// A request header's value ("" when absent).
    static func header(_ name: String, of request: Request) -> String {
        request.headers.first { $0.name.canonicalName == name.lowercased() }?.value ?? ""
    }

    /// The check a customer's receiver makes (docs/webhooks.md, "Checking a delivery"), written here independently
    /// of the service's code.
    static func isSigned(header: String, body: [UInt8], secret: [UInt8]) -> Bool {
        var timestamp: Int64?
        var presented: [String] = []
        for part in header.split(separator: ",") {
            let pair = part.split(separator: "=", maxSplits: 1)
            guard pair.count == 2 else { continue }
            if pair[0] == "t" { timestamp = Int64(pair[1]) }
            if pair[0] == "v1" { presented.append(String(pair[1])) }
        }
        guard let timestamp, abs(Date().timeIntervalSince1970 - Double(timestamp)) <= 300 else { return false }
        let mac = HMAC<SHA256>.authenticationCode(
            for: Array("\(timestamp).".utf8) + body, using: SymmetricKey(data: secret))
        let expected = mac.map { String(format: "%02x", $0) }.joined()
        return presented.contains(expected)
    }

    /// The check a Standard Webhooks library makes (standardwebhooks.com), written here independently: the key is the
    /// base64 after `whsec_`, the HMAC-SHA256 of `id.timestamp.body` in base64 after `v1,`, any of the space-separated
    /// signatures, a timestamp within five minutes.
    static func isStandardSigned(id: String, timestamp: String, signatures: String, body: [UInt8], secret: [UInt8])
        -> Bool
    {
        var encoded = String(String(decoding: secret, as: UTF8.self).dropFirst("whsec_".count))
        while encoded.count % 4 != 0 { encoded += "=" }
        guard !id.isEmpty, let seconds = Int64(timestamp), abs(Date().timeIntervalSince1970 - Double(seconds)) <= 300,
            let key = Data(base64Encoded: encoded)
        else { return false }
        let mac = HMAC<SHA256>.authenticationCode(
            for: Array("\(id).\(timestamp).".utf8) + body, using: SymmetricKey(data: key))
        let expected = "v1," + Data(mac).base64EncodedString()
        return signatures.split(separator: " ").contains { $0 == expected }
    }

    /// Runs a receiver for `body`, which gets it and its base URL.
    static func run<T: Sendable>(_ body: @Sendable (FakeWebhookReceiver, String) async throws -> T) async throws -> T {
        let receiver = FakeWebhookReceiver()
        let router = Router()
        router.post("/**") { request, _ in await receiver.respond(request) }
        return try await withLoopbackServer(router, label: "fake-webhook-receiver") { base in
            try await body(receiver, base)
        }
    }
}
