import Crypto
import Fakes
import Foundation
import Hummingbird
import Logging
import NIOCore
import ReceiptCore
import ReceiptService
import Synchronization

/// A stand-in for Apple's App Store Server API on loopback: a real HTTP server under `/production` and `/sandbox`
/// that checks each request's JWT (ES256 by the app's key, `iss`, `aud`, `bid`, a lifetime of at most an hour) and
/// answers with scripted replies, recording when each request came.
final class FakeAppStoreServer: Sendable {
    /// One scripted reply.
    enum Reply: Sendable {
        /// 200 with this JSON text.
        case json(String)
        /// This HTTP status with Apple's error body `{"errorCode": N}` (when given) and a `Retry-After` (ms).
        case error(Int, appleCode: Int? = nil, retryAfter: Int64? = nil)
        /// A customer's whole Transaction History (signed transactions, oldest first), served as Apple serves it:
        /// pages of 20 in the order the request's `sort` asks (ASCENDING by default), `revision` naming the next
        /// page and `hasMore` while one is left. The first page's request takes it from the queue; a request with a
        /// `revision` reads on in the history the environment's last first page opened.
        case history([String], environment: String = "Sandbox", bundleID: String = "com.example.app")
    }

    /// The page size of Apple's Transaction History.
    static let historyPageSize = 20

    /// The page of `transactions` a history request asks (its `sort` and `revision`), and whether one is left.
    static func historyPage(
        _ transactions: [String], query: String, environment: String, bundleID: String
    ) -> (text: String, hasMore: Bool) {
        let items = query.split(separator: "&").map { $0.split(separator: "=", maxSplits: 1).map(String.init) }
        let value = { (name: String) in items.first { $0.first == name && $0.count == 2 }?[1] }
        let ordered = value("sort") == "DESCENDING" ? Array(transactions.reversed()) : transactions
        let start = value("revision").flatMap { Int($0.dropFirst("page-".count)) } ?? 0
        let page = Array(ordered.dropFirst(start).prefix(historyPageSize))
        let hasMore = start + page.count < ordered.count
        var object = JSONObject()
        object.append("revision", .string("page-\(start + page.count)"))
        object.append("hasMore", .bool(hasMore))
        object.append("bundleId", .string(bundleID))
        object.append("environment", .string(environment))
        object.append("signedTransactions", .array(page.map { .string($0) }))
        return (JSONValue.object(object).encodedString, hasMore)
    }

    /// What one request was.
    struct Received: Sendable {
        let method: String
        let environment: String
        let path: String
        let query: String
        let token: String
        /// The request's body (POST), as text.
        let body: String
        let at: ContinuousClock.Instant
        /// The wall-clock time, to compare with a `Retry-After`.
        let date: Date
    }

    let publicKey: P256.Signing.PublicKey
    let issuerID: String
    let bundleID: String
    private let state = Mutex<(queues: [String: [Reply]], received: [Received], badTokens: Int)>(([:], [], 0))
    /// The history each environment's last first page opened (``Reply/history(_:environment:bundleID:)``).
    private let openHistories = Mutex<[String: Reply]>([:])

    init(publicKey: P256.Signing.PublicKey, issuerID: String, bundleID: String) {
        self.publicKey = publicKey
        self.issuerID = issuerID
        self.bundleID = bundleID
    }

    /// Queues replies for `environment`; with none queued it answers 404 with 4040010 (unknown transaction).
    func script(_ environment: String, _ replies: Reply...) {
        state.withLock { $0.queues[environment, default: []].append(contentsOf: replies) }
    }

    var received: [Received] { state.withLock { $0.received } }
    /// Where it listens (`BASE`, with `/production` and `/sandbox` under it), once it runs.
    var baseURL: String { base.withLock { $0 } }
    private let base = Mutex("")
    /// Requests refused for their JWT.
    var badTokens: Int { state.withLock { $0.badTokens } }

    private func respond(_ request: Request, environment: String) async -> Response {
        let body = (try? await request.body.collect(upTo: 1 << 20)).map { String(buffer: $0) } ?? ""
        let token = request.headers[.authorization].flatMap { $0.hasPrefix("Bearer ") ? String($0.dropFirst(7)) : nil }
        guard let token, isValid(token) else {
            state.withLock { $0.badTokens += 1 }
            return Response(status: .unauthorized)
        }
        let reply = state.withLock { state -> Reply in
            state.received.append(
                Received(
                    method: request.method.rawValue, environment: environment,
                    path: String(request.uri.path.dropFirst(environment.count + 1)),
                    query: request.uri.query ?? "", token: token, body: body, at: .now, date: Date()))
            let query = request.uri.query ?? ""
            var reply: Reply
            if request.uri.path.contains("/inApps/v2/history/"), query.contains("revision="),
                let open = openHistories.withLock({ $0[environment] })
            {
                reply = open
            } else {
                guard var queue = state.queues[environment], !queue.isEmpty else {
                    return .error(404, appleCode: 4_040_010)
                }
                reply = queue.removeFirst()
                state.queues[environment] = queue
                if case .history = reply { openHistories.withLock { $0[environment] = reply } }
            }
            if case .history(let transactions, let answering, let bundleID) = reply {
                reply = .json(
                    Self.historyPage(transactions, query: query, environment: answering, bundleID: bundleID).text)
            }
            return reply
        }
        switch reply {
        case .json(let text):
            return Response(
                status: .ok, headers: [.contentType: "application/json"],
                body: .init(byteBuffer: ByteBuffer(string: text)))
        case .history:
            preconditionFailure("a history reply is served as its page")
        case .error(let status, let appleCode, let retryAfter):
            var headers: HTTPFields = [.contentType: "application/json"]
            if let retryAfter { headers[.retryAfter] = String(retryAfter) }
            let body = appleCode.map { #"{"errorCode":\#($0),"errorMessage":"scripted"}"# } ?? ""
            return Response(
                status: .init(code: status), headers: headers, body: .init(byteBuffer: ByteBuffer(string: body)))
        }
    }

    /// The JWT Apple would accept from this app: ES256 by its key, its issuer and bundle ID, Apple's audience, an
    /// hour at most, not expired.
    private func isValid(_ token: String) -> Bool {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let header = Base64URL.decode(parts[0]), let payload = Base64URL.decode(parts[1]),
            let signature = Base64URL.decode(parts[2]),
            let ecdsa = try? P256.Signing.ECDSASignature(rawRepresentation: signature),
            publicKey.isValidSignature(ecdsa, for: Data((parts[0] + "." + parts[1]).utf8)),
            case .object(let head)? = try? JSONParser.parse(header), head["alg"] == .string("ES256"),
            head["typ"] == .string("JWT"),
            case .object(let claims)? = try? JSONParser.parse(payload),
            claims["iss"] == .string(issuerID), claims["aud"] == .string("appstoreconnect-v1"),
            claims["bid"] == .string(bundleID),
            case .integer(let issuedAt)? = claims["iat"], case .integer(let expires)? = claims["exp"]
        else { return false }
        let now = Int64(Date().timeIntervalSince1970)
        return expires - issuedAt <= 3_600 && expires > now && issuedAt <= now + 60
    }

    /// Runs the fake for the duration of `body`, which gets it and its base URL (`BASE/production`, `BASE/sandbox`).
    static func run<T: Sendable>(
        publicKey: P256.Signing.PublicKey, issuerID: String, bundleID: String,
        _ body: @Sendable (FakeAppStoreServer, String) async throws -> T
    ) async throws -> T {
        let fake = FakeAppStoreServer(publicKey: publicKey, issuerID: issuerID, bundleID: bundleID)
        let router = Router()
        for environment in ["production", "sandbox"] {
            router.get("/\(environment)/**") { request, _ in await fake.respond(request, environment: environment) }
            router.post("/\(environment)/**") { request, _ in await fake.respond(request, environment: environment) }
            router.put("/\(environment)/**") { request, _ in await fake.respond(request, environment: environment) }
        }
        return try await withLoopbackServer(router, label: "fake-app-store-server") { base in
            fake.base.withLock { $0 = base }
            return try await body(fake, base)
        }
    }
}
