import Fakes
import Foundation
import Hummingbird
import Logging
import NIOCore
import ReceiptCore
import Synchronization

/// A stand-in for Apple's `verifyReceipt` on loopback: a real HTTP server that answers with scripted replies
/// (recorded Apple answers, status sequences, hangs, HTTP errors, garbage) and records what it was sent.
///
/// Paths: `/production/verifyReceipt` and `/sandbox/verifyReceipt`. Each environment has a queue of replies; when the
/// queue is empty it answers `{"status":21002}`, which is what Apple says to a receipt it cannot read.
final class FakeApple: Sendable {
    /// One scripted reply.
    enum Reply: Sendable {
        /// HTTP 200 with this JSON text.
        case json(String)
        /// HTTP 200 with `{"status": N}`, plus `"is-retryable"` when given.
        case status(Int, isRetryable: Bool? = nil)
        /// Sleeps this long before answering `{"status":0}` (longer than the client's timeout: a hang).
        case delay(Duration, then: String = #"{"status":0}"#)
        /// This HTTP status with an HTML body, as a failing proxy answers.
        case http(Int)
        /// HTTP 200 with a body that is not JSON.
        case garbage
    }

    /// What one request sent.
    struct Received: Sendable {
        let environment: String
        let body: JSONObject

        var receiptData: String? { body["receipt-data"]?.stringValue }
        var password: String? { body["password"]?.stringValue }
        var excludeOldTransactions: Bool? {
            if case .bool(let flag)? = body["exclude-old-transactions"] { return flag }
            return nil
        }
    }

    private let state = Mutex<(queues: [String: [Reply]], received: [Received])>(([:], []))

    /// Queues replies for `environment` (`production` or `sandbox`).
    func script(_ environment: String, _ replies: Reply...) {
        state.withLock { $0.queues[environment, default: []].append(contentsOf: replies) }
    }

    /// Every request received so far, oldest first.
    var received: [Received] { state.withLock { $0.received } }

    /// Forgets scripts and requests.
    func reset() { state.withLock { $0 = ([:], []) } }

    private func next(for environment: String, body: JSONObject) -> Reply {
        state.withLock { state in
            state.received.append(Received(environment: environment, body: body))
            guard var queue = state.queues[environment], !queue.isEmpty else { return .status(21002) }
            let reply = queue.removeFirst()
            state.queues[environment] = queue
            return reply
        }
    }

    private func respond(_ request: Request, environment: String) async throws -> Response {
        let bytes = try await request.body.collect(upTo: 4 << 20)
        guard case .object(let body) = try JSONParser.parse(bytes.readableBytesView) else {
            return Response(status: .badRequest)
        }
        switch next(for: environment, body: body) {
        case .json(let text): return Self.json(text)
        case .status(let status, let isRetryable):
            let flag = isRetryable.map { #","is-retryable":\#($0)"# } ?? ""
            return Self.json(#"{"status":\#(status)\#(flag)}"#)
        case .delay(let duration, let text):
            try await Task.sleep(for: duration)
            return Self.json(text)
        case .http(let code):
            return Response(
                status: .init(code: code), headers: [.contentType: "text/html"],
                body: .init(byteBuffer: ByteBuffer(string: "<html>Service Unavailable</html>")))
        case .garbage:
            return Response(
                status: .ok, headers: [.contentType: "application/json"],
                body: .init(byteBuffer: ByteBuffer(string: "{\"status\": 0, \"receipt\": {")))
        }
    }

    private static func json(_ text: String) -> Response {
        Response(
            status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(string: text)))
    }

    /// Runs a fake Apple on a free loopback port for the duration of `body`, which gets it and its base URL.
    static func run<T: Sendable>(_ body: @Sendable (FakeApple, String) async throws -> T) async throws -> T {
        let apple = FakeApple()
        let router = Router()
        for environment in ["production", "sandbox"] {
            router.post("/\(environment)/verifyReceipt") { request, _ in
                try await apple.respond(request, environment: environment)
            }
        }
        return try await withLoopbackServer(router, label: "fake-apple") { base in try await body(apple, base) }
    }
}
