import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import ReceiptService

/// POSTs signed events to customers' webhook endpoints (docs/webhooks.md, "Deliveries").
///
/// A receiver cannot hold the deliverer: each attempt has one deadline for connecting, sending and the answer's
/// head (``timeout``), the answer's body is never read, and redirects are not followed (a 3xx is a failure, as the
/// receiver must name its final URL).
public struct WebhookClient: Sendable {
    /// What one attempt came to.
    public enum Result: Sendable, Equatable {
        /// The receiver answered with this HTTP status.
        case answered(status: Int)
        /// No answer: the error, without secrets.
        case failed(String)
    }

    /// The whole attempt's deadline.
    public let timeout: Duration
    /// The `User-Agent` of deliveries.
    public static let userAgent = "ReceiptVerify-Webhooks/1"

    private let http: HTTPClient
    private let logger: Logger

    /// Creates a client whose attempts end after `timeout`.
    public init(timeout: Duration = .seconds(10), logger: Logger) {
        self.timeout = timeout
        self.logger = logger
        var configuration = HTTPClient.Configuration()
        configuration.timeout = .init(connect: .seconds(5), read: nil)
        configuration.redirectConfiguration = .disallow
        configuration.connectionPool = .init(idleTimeout: .seconds(30))
        http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }

    /// Stops the HTTP client.
    public func shutdown() async throws { try await http.shutdown() }

    /// POSTs `event` to `url`, signed with `secret` at `now`.
    public func deliver(_ body: [UInt8], eventID: String, eventType: String, to url: String, secret: [UInt8], now: Date)
        async -> Result
    {
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        let timestamp = Int64(now.timeIntervalSince1970.rounded(.down))
        request.headers.add(name: "Content-Type", value: "application/json")
        request.headers.add(name: "User-Agent", value: Self.userAgent)
        request.headers.add(name: "ReceiptVerify-Event-Id", value: eventID)
        request.headers.add(name: "ReceiptVerify-Event-Type", value: eventType)
        request.headers.add(
            name: WebhookSignature.headerName,
            value: WebhookSignature.header(secret: secret, timestamp: timestamp, body: body))
        // The same delivery as Standard Webhooks signs it, so receivers verify it with a standardwebhooks library.
        request.headers.add(name: WebhookSignature.standardIDHeader, value: eventID)
        request.headers.add(name: WebhookSignature.standardTimestampHeader, value: String(timestamp))
        request.headers.add(
            name: WebhookSignature.standardSignatureHeader,
            value: WebhookSignature.standardSignature(secrets: [secret], id: eventID, timestamp: timestamp, body: body))
        request.body = .bytes(ByteBuffer(bytes: body))
        let deadline = NIODeadline.now() + TimeAmount(timeout)
        do {
            let response = try await http.execute(request, deadline: deadline, logger: logger)
            // The status is the answer. The body is not read (a receiver that trickles one would hold the slot past
            // the deadline): dropping it closes the connection.
            return .answered(status: Int(response.status.code))
        } catch let error as HTTPClientError {
            return .failed(Self.describe(error))
        } catch {
            return .failed("\(type(of: error))")
        }
    }

    private static func describe(_ error: HTTPClientError) -> String {
        switch error {
        case .deadlineExceeded, .readTimeout, .connectTimeout: "timed out"
        case .remoteConnectionClosed: "the receiver closed the connection"
        default: "\(error)"
        }
    }
}
