import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import ReceiptService

/// POSTs signed events to customers' webhook endpoints (docs/webhooks.md, "Deliveries").
///
/// A receiver cannot hold the deliverer: each attempt has one deadline for connecting, sending and the answer's
/// head (``timeout``), the answer's body is never read, and redirects are not followed (a 3xx is a failure, as the
/// receiver must name its final URL).
///
/// A customer's URL cannot reach inside: unless the operator allows private addresses, each attempt resolves the host
/// itself, refuses it unless every address is public (``WebhookAddress``), and connects to the address it checked,
/// with the URL's host still named in TLS and `Host` (a name that resolves elsewhere meanwhile, DNS rebinding, changes
/// nothing). What an attempt came to is told in words that hold no internal detail.
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

    /// Whether URLs may be plain http and reach private, loopback and other special addresses.
    public let allowsPrivateAddresses: Bool
    private let http: HTTPClient
    private let logger: Logger

    /// Creates a client whose attempts end after `timeout`.
    public init(timeout: Duration = .seconds(10), allowsPrivateAddresses: Bool = false, logger: Logger) {
        self.timeout = timeout
        self.allowsPrivateAddresses = allowsPrivateAddresses
        self.logger = logger
        http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: Self.configuration())
    }

    /// The HTTP client's settings: no redirects, a connect deadline, and `dnsOverride` pinning hosts to addresses.
    private static func configuration(dnsOverride: [String: String] = [:]) -> HTTPClient.Configuration {
        var configuration = HTTPClient.Configuration()
        configuration.timeout = .init(connect: .seconds(5), read: nil)
        configuration.redirectConfiguration = .disallow
        configuration.connectionPool = .init(idleTimeout: .seconds(30))
        configuration.dnsOverride = dnsOverride
        return configuration
    }

    /// Stops the HTTP client.
    public func shutdown() async throws { try await http.shutdown() }

    /// POSTs `event` to `url`, signed with `secret` at `now`.
    public func deliver(_ body: [UInt8], eventID: String, eventType: String, to url: String, secret: [UInt8], now: Date)
        async -> Result
    {
        await deliver(body, eventID: eventID, eventType: eventType, to: url, secrets: [secret], now: now)
    }

    /// POSTs `event` to `url`, signed with each of `secrets` (the current one first) at `now`.
    public func deliver(
        _ body: [UInt8], eventID: String, eventType: String, to url: String, secrets: [[UInt8]], now: Date
    ) async -> Result {
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        let timestamp = Int64(now.timeIntervalSince1970.rounded(.down))
        request.headers.add(name: "Content-Type", value: "application/json")
        request.headers.add(name: "User-Agent", value: Self.userAgent)
        request.headers.add(name: "ReceiptVerify-Event-Id", value: eventID)
        request.headers.add(name: "ReceiptVerify-Event-Type", value: eventType)
        request.headers.add(
            name: WebhookSignature.headerName,
            value: WebhookSignature.header(secrets: secrets, timestamp: timestamp, body: body))
        // The same delivery as Standard Webhooks signs it, so receivers verify it with a standardwebhooks library.
        request.headers.add(name: WebhookSignature.standardIDHeader, value: eventID)
        request.headers.add(name: WebhookSignature.standardTimestampHeader, value: String(timestamp))
        request.headers.add(
            name: WebhookSignature.standardSignatureHeader,
            value: WebhookSignature.standardSignature(secrets: secrets, id: eventID, timestamp: timestamp, body: body))
        request.body = .bytes(ByteBuffer(bytes: body))
        let deadline = NIODeadline.now() + TimeAmount(timeout)
        let client: HTTPClient
        var pinned: HTTPClient?
        if allowsPrivateAddresses {
            client = http
        } else {
            // Resolved and checked now, off the event loops; the connection goes to the address checked.
            let parts = URLComponents(string: url)
            guard let host = parts?.host, parts?.scheme == "https" else {
                return .failed("the URL is not https")
            }
            let checked =
                (try? await NIOThreadPool.singleton.runIfActive { WebhookAddress.checkedAddress(ofHost: host) })
            guard let checked else { return .failed("the host could not be resolved") }
            guard let address = checked.address else { return .failed(checked.refusal ?? "the host is refused") }
            let bare = host.hasPrefix("[") ? String(host.dropFirst().dropLast()) : host
            let own = HTTPClient(
                eventLoopGroupProvider: .singleton, configuration: Self.configuration(dnsOverride: [bare: address]))
            pinned = own
            client = own
        }
        let result: Result
        do {
            let response = try await client.execute(request, deadline: deadline, logger: logger)
            // The status is the answer. The body is not read (a receiver that trickles one would hold the slot past
            // the deadline): dropping it closes the connection.
            result = .answered(status: Int(response.status.code))
        } catch {
            result = .failed(Self.describe(error))
        }
        if let pinned { try? await pinned.shutdown() }
        return result
    }

    /// What went wrong, in words for the customer: never an address, a path or a message from inside.
    static func describe(_ error: any Error) -> String {
        switch error as? HTTPClientError {
        case .deadlineExceeded?, .readTimeout?, .connectTimeout?: return "timed out"
        case .remoteConnectionClosed?: return "the receiver closed the connection"
        case .some: return "the HTTP exchange failed"
        case nil: break
        }
        let name = String(describing: type(of: error))
        return name.contains("SSL") || name.contains("TLS") ? "TLS failed" : "the connection failed"
    }
}
