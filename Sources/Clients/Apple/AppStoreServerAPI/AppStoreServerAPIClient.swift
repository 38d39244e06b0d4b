import AsyncHTTPClient
import CoreMetrics
import Crypto
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import ReceiptCore
import ReceiptService
import Synchronization

/// The App Store Server API: what Apple's servers know of an app's transactions, within Apple's limits.
/// [Apple's documentation](https://developer.apple.com/documentation/appstoreserverapi)
///
/// Every call is authorized by an ES256 JWT of the app's credentials (reused until near its expiry), paced by a
/// request budget per app's credentials (issuer, key and bundle ID: an app that names another team's issuer with its
/// own key spends only its own turns) and a ceiling per issuer below Apple's limits, and bounded by one total time.
/// Credentials Apple refused (401) and never accepted are refused here for a pause without asking Apple, so that they
/// cost its issuer nothing more; 429 is honoured with its
/// `Retry-After` (a UNIX time in milliseconds), 5xx and network errors are retried with jittered backoff, and an id
/// Apple does not know yet (4040010) is asked of the sandbox, then again after a backoff. Every signed value Apple
/// returns is verified (chain to Apple's root at its `signedDate`) before it is handed back.
public final class AppStoreServerAPIClient: Sendable {
    /// Which of Apple's environments to ask.
    public enum Environment: String, Sendable {
        case production, sandbox
    }

    /// One signed value Apple returned, verified.
    public struct Signed: Sendable {
        /// The compact JWS as Apple sent it.
        public let jws: String
        /// What the verifier read from it (payload, environment, signing date).
        public let verified: VerifiedReceipt
    }

    /// A page of a paged answer: its signed transactions, the revision to ask for next, whether there is more.
    public struct Page: Sendable {
        public let transactions: [Signed]
        public let revision: String?
        public let hasMore: Bool
        /// Which environment answered.
        public let environment: Environment
    }

    /// The configuration.
    public let configuration: AppStoreServerAPIConfiguration
    private let http: HTTPClient
    private let tokens: AppStoreServerTokens
    private let budget = RequestBudget()
    /// Credentials Apple refused, by digest, until when they are refused without asking.
    private let refused = Mutex<[String: ContinuousClock.Instant]>([:])
    /// Credentials Apple has accepted (by digest): a 401 for them is Apple's of the moment, never held against them.
    private let accepted = Mutex<Set<String>>([])
    private let verifier: ReceiptVerifier
    /// What each endpoint made of Apple's answer (its signed values verified), by request.
    private let answers: AnswerCache<any Sendable>
    private let metrics: any MetricsFactory
    private let logger: Logger

    /// An answer and the environment that gave it.
    struct Answer: Sendable {
        let object: JSONObject
        let environment: Environment
    }

    /// Creates a client that verifies what Apple signs with `verifier` (Apple's roots, or test roots in tests),
    /// counting its requests into `metrics` (nil: nowhere).
    public init(
        configuration: AppStoreServerAPIConfiguration, verifier: ReceiptVerifier, metrics: (any MetricsFactory)? = nil,
        logger: Logger
    ) {
        self.configuration = configuration
        self.verifier = verifier
        self.metrics = metrics ?? NOOPMetricsHandler.instance
        self.logger = logger
        answers = AnswerCache(lifetime: configuration.cacheLifetime)
        tokens = AppStoreServerTokens(lifetime: configuration.tokenLifetime)
        var httpConfiguration = HTTPClient.Configuration()
        httpConfiguration.timeout = .init(connect: .seconds(3), read: nil)
        httpConfiguration.redirectConfiguration = .disallow
        http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: httpConfiguration)
    }

    /// Stops the HTTP client.
    public func shutdown() async throws { try await http.shutdown() }

    // MARK: Endpoints

    /// Get Transaction Info: one transaction, signed.
    public func transactionInfo(_ transactionID: String, credentials: AppStoreServerAPICredentials) async throws
        -> Signed
    {
        try await get(
            "/inApps/v1/transactions/\(try Self.pathID(transactionID))", endpoint: "transaction_info",
            credentials: credentials
        ) { answer in
            guard case .string(let jws)? = answer.object["signedTransactionInfo"] else {
                throw AppStoreServerAPIError(
                    .invalidResponse, "Get Transaction Info answered no signedTransactionInfo")
            }
            return try self.verify(jws)
        }
    }

    /// Get Transaction History (v2): one page, from `revision` (nil: the first), oldest first (or newest first).
    public func transactionHistory(
        _ transactionID: String, revision: String?, credentials: AppStoreServerAPICredentials,
        in environment: Environment? = nil, newestFirst: Bool = false
    ) async throws -> Page {
        var query = [("sort", newestFirst ? "DESCENDING" : "ASCENDING")]
        if let revision { query.append(("revision", revision)) }
        return try await get(
            "/inApps/v2/history/\(try Self.pathID(transactionID))", query: query, endpoint: "transaction_history",
            credentials: credentials, in: environment, read: page)
    }

    /// Get Refund History (v2): one page of refunded transactions, from `revision`.
    public func refundHistory(_ transactionID: String, revision: String?, credentials: AppStoreServerAPICredentials)
        async throws -> Page
    {
        try await get(
            "/inApps/v2/refund/lookup/\(try Self.pathID(transactionID))",
            query: revision.map { [("revision", $0)] } ?? [], endpoint: "refund_history", credentials: credentials,
            read: page)
    }

    /// Look Up Order ID: the transactions of a customer's order id (from their receipt email).
    public func lookUpOrder(_ orderID: String, credentials: AppStoreServerAPICredentials) async throws -> [Signed] {
        try await get(
            "/inApps/v1/lookup/\(try Self.pathID(orderID))", endpoint: "order_lookup", credentials: credentials,
            read: signedTransactions)
    }

    /// Get All Subscription Statuses: the raw answer (groups, statuses), with every signed transaction and renewal
    /// info in it verified.
    public func subscriptionStatuses(_ transactionID: String, credentials: AppStoreServerAPICredentials) async throws
        -> (answer: JSONObject, signed: [Signed])
    {
        try await get(
            "/inApps/v1/subscriptions/\(try Self.pathID(transactionID))", endpoint: "subscription_statuses",
            credentials: credentials
        ) { answer in (answer.object, try Self.signedValues(in: answer.object).map { try self.verify($0) }) }
    }

    // MARK: Transport

    /// An id in a path: Apple's ids are digits (order ids letters and digits too); anything else is refused before
    /// a request is spent on it.
    static func pathID(_ id: String) throws -> String {
        let alphanumeric = { (byte: UInt8) in
            (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
        }
        guard (1...64).contains(id.utf8.count), id.utf8.allSatisfy(alphanumeric) else {
            throw AppStoreServerAPIError(.refused, "malformed id")
        }
        return id
    }

    @Sendable private func page(_ answer: Answer) throws -> Page {
        Page(
            transactions: try signedTransactions(in: answer), revision: answer.object["revision"]?.stringValue,
            hasMore: answer.object["hasMore"] == .bool(true), environment: answer.environment)
    }

    /// The answer's `signedTransactions`, each verified; none when it has none.
    @Sendable private func signedTransactions(in answer: Answer) throws -> [Signed] {
        guard case .array(let items)? = answer.object["signedTransactions"] else { return [] }
        return try items.map { item in
            guard case .string(let jws) = item else {
                throw AppStoreServerAPIError(.invalidResponse, "a signed transaction is not a string")
            }
            return try verify(jws)
        }
    }

    /// Every signed value an answer of Get All Subscription Statuses holds, in its order.
    static func signedValues(in object: JSONObject) -> [String] {
        var values: [String] = []
        for case .object(let group) in object["data"]?.arrayValue ?? [] {
            for case .object(let item) in group["lastTransactions"]?.arrayValue ?? [] {
                for field in ["signedTransactionInfo", "signedRenewalInfo"] {
                    if case .string(let jws)? = item[field] { values.append(jws) }
                }
            }
        }
        return values
    }

    func verify(_ jws: String) throws -> Signed {
        do {
            let input = ReceiptInput(kind: .jws, bytes: Array(jws.utf8), repairs: [])
            return Signed(
                jws: jws, verified: try verifier.verify(input, allowTestData: configuration.acceptsTestSignatures))
        } catch let error as ReceiptError {
            throw AppStoreServerAPIError(.invalidResponse, "a signed value Apple returned does not verify: \(error)")
        }
    }

    /// One request: what to send, and where.
    struct Call: Sendable {
        var method: HTTPMethod = .GET
        var path: String
        var query: [(String, String)] = []
        /// A JSON body (POST).
        var body: [UInt8]? = nil
        /// The metrics' name of the endpoint.
        var endpoint: String
        /// Production then the sandbox (nil), or this environment alone.
        var environment: Environment? = nil
        /// Whether a failure after the request went out (5xx, network) is tried again: not for an action Apple may
        /// have taken (an extension), which the caller repeats, if at all, under the same request identifier.
        var retries = true
    }

    /// What `read` makes of the answer to GET `path` (its signed values verified): reused for
    /// ``AppStoreServerAPIConfiguration/cacheLifetime``, one fetch for concurrent asks of the same request. What is
    /// reused is `read`'s result, so an answer from the cache costs no signature check.
    func get<T: Sendable>(
        _ path: String, query: [(String, String)] = [], endpoint: String, credentials: AppStoreServerAPICredentials,
        in environment: Environment? = nil, read: @escaping @Sendable (Answer) throws -> T
    ) async throws -> T {
        // The credentials in full: an account that names another's app without its key must not read its answers.
        let key =
            "\(credentials.issuerID)/\(credentials.keyID)/\(Hex.encode(SHA256.hash(data: Array(credentials.privateKeyPEM.utf8))))"
            + "/\(credentials.bundleID)\(path)?"
            + query.map { "\($0.0)=\($0.1)" }.joined(separator: "&") + "#\(environment?.rawValue ?? "")"
        let (value, hit) = try await answers.value(key) {
            try read(
                try await self.fetch(
                    Call(path: path, query: query, endpoint: endpoint, environment: environment),
                    credentials: credentials))
        }
        guard let answer = value as? T else {
            throw AppStoreServerAPIError(.invalidResponse, "a cached answer of another kind for \(endpoint)")
        }
        Counter(
            label: "receiptverify_storekit_cache_total", dimensions: [("result", hit ? "hit" : "miss")],
            factory: metrics
        )
        .increment()
        return answer
    }

    /// Sends `call` to production, then to the sandbox when production does not know the id (or to the call's one
    /// environment), retrying what may pass within the call's time; returns the JSON answer and which environment
    /// gave it.
    func fetch(_ call: Call, credentials: AppStoreServerAPICredentials) async throws -> Answer {
        let deadline = ContinuousClock.now + configuration.totalTimeout
        var backoff = Duration.milliseconds(200)
        var lastError = AppStoreServerAPIError(.unavailable, "no attempt was made")
        for attempt in 1...max(1, configuration.maximumAttempts) {
            do {
                if let only = call.environment {
                    return Answer(object: try await send(call, in: only, credentials, deadline), environment: only)
                }
                do {
                    return Answer(
                        object: try await send(call, in: .production, credentials, deadline), environment: .production)
                } catch let error as AppStoreServerAPIError where error.code == .notFound {
                    // An app not yet released, or a sandbox purchase: the sandbox knows it.
                    return Answer(
                        object: try await send(call, in: .sandbox, credentials, deadline), environment: .sandbox)
                }
            } catch let error as AppStoreServerAPIError {
                // A fresh transaction may not have reached Apple's servers yet; a 5xx or a network error may pass.
                guard call.retries, error.code == .notFound || error.code == .unavailable,
                    attempt < configuration.maximumAttempts
                else { throw error }
                lastError = error
                let jittered = backoff * Double.random(in: 0.5...1.0)
                guard ContinuousClock.now + jittered < deadline else { break }
                Counter(label: "receiptverify_storekit_retries_total", factory: metrics).increment()
                try await Task.sleep(for: jittered)
                backoff *= 2
            }
        }
        throw lastError
    }

    private func send(
        _ call: Call, in environment: Environment, _ credentials: AppStoreServerAPICredentials,
        _ deadline: ContinuousClock.Instant
    ) async throws -> JSONObject {
        let (path, query, endpoint) = (call.path, call.query, call.endpoint)
        let base = environment == .production ? configuration.productionURL : configuration.sandboxURL
        let rate =
            environment == .production
            ? configuration.productionRequestsPerSecond : configuration.sandboxRequestsPerSecond
        var components = URLComponents(string: base + path)
        if !query.isEmpty { components?.queryItems = query.map { URLQueryItem(name: $0.0, value: $0.1) } }
        guard let url = components?.url?.absoluteString else {
            throw AppStoreServerAPIError(.refused, "not a URL: \(base)\(path)")
        }
        let digest = Self.digest(of: credentials)
        while true {
            try checkNotRefused(digest)
            guard
                let waited = try await budget.acquire(
                    "app/\(digest)/\(environment.rawValue)", rate: rate, deadline: deadline),
                let waitedForIssuer = try await budget.acquire(
                    "issuer/\(credentials.issuerID)/\(environment.rawValue)",
                    rate: rate * max(1, configuration.issuerCeiling), deadline: deadline)
            else {
                throw AppStoreServerAPIError(
                    .rateLimited, "the app's request budget has no turn within the call's time")
            }
            if waited + waitedForIssuer > .zero { recordWait(waited + waitedForIssuer) }
            // Another call may have learned meanwhile that Apple refuses these credentials.
            try checkNotRefused(digest)
            var request = HTTPClientRequest(url: url)
            request.method = call.method
            if let body = call.body {
                request.headers.add(name: "Content-Type", value: "application/json")
                request.body = .bytes(body)
            }
            request.headers.add(
                name: "Authorization", value: "Bearer " + (try tokens.token(for: credentials, now: Date())))
            request.headers.add(name: "Accept", value: "application/json")
            let remaining = ContinuousClock.now.duration(to: deadline)
            guard remaining > .zero else { throw AppStoreServerAPIError(.unavailable, "the call's time ran out") }
            let status: Int
            let body: [UInt8]
            let retryAfter: String?
            let started = ContinuousClock.now
            do {
                let response = try await http.execute(request, timeout: .init(remaining), logger: logger)
                status = Int(response.status.code)
                retryAfter = response.headers.first(name: "Retry-After")
                body = Array(buffer: try await response.body.collect(upTo: configuration.maximumResponseSize))
            } catch {
                record(endpoint: endpoint, environment: environment, status: "network", since: started)
                throw AppStoreServerAPIError(.unavailable, "Apple's \(environment.rawValue) API: \(error)")
            }
            record(endpoint: endpoint, environment: environment, status: String(status), since: started)
            let object: JSONObject? =
                if case .object(let parsed)? = try? JSONParser.parse(body) { parsed } else { nil }
            let appleCode: Int? =
                if case .integer(let code)? = object?["errorCode"] { Int(exactly: code) } else { nil }
            if (200...299).contains(status) || status == 404 {
                // Apple took the credentials (a 404 is an id it does not know, asked with a valid token).
                accepted.withLock { accepted in
                    if accepted.count >= 10_000 { accepted.removeAll() }
                    accepted.insert(digest)
                }
            }
            switch status {
            case 200 where call.method != .GET && body.isEmpty, 202, 204:
                return JSONObject()
            case 200:
                guard let object else {
                    throw AppStoreServerAPIError(.invalidResponse, "Apple answered 200 with a body that is not JSON")
                }
                return object
            case 401:
                if !accepted.withLock({ $0.contains(digest) }) {
                    refused.withLock { refused in
                        if refused.count >= 10_000 { refused = refused.filter { $0.value > .now } }
                        refused[digest] = .now + configuration.refusedCredentialsPause
                    }
                }
                throw AppStoreServerAPIError(
                    .credentials, "Apple refused the app's App Store Server API credentials (401)")
            case 429:
                // Retry-After: the UNIX time in milliseconds from which Apple takes requests again.
                let until = retryAfter.flatMap(Int64.init).map { Date(timeIntervalSince1970: Double($0) / 1_000) }
                let wait = until.map { max(0, $0.timeIntervalSinceNow) } ?? 1
                guard ContinuousClock.now + .seconds(wait) < deadline else {
                    throw AppStoreServerAPIError(
                        .rateLimited, "Apple's rate limit (429) lasts past the call's time", appleErrorCode: appleCode)
                }
                recordWait(.seconds(wait))
                try await Task.sleep(for: .seconds(wait))
                continue
            case 404 where appleCode.map { (4040000...4049999).contains($0) } ?? true:
                throw AppStoreServerAPIError(
                    .notFound, "Apple's \(environment.rawValue) API does not know it (\(appleCode ?? 404))",
                    appleErrorCode: appleCode)
            case 500...599:
                throw AppStoreServerAPIError(
                    .unavailable, "Apple's \(environment.rawValue) API failed (HTTP \(status))",
                    appleErrorCode: appleCode)
            default:
                throw AppStoreServerAPIError(
                    .refused, "Apple refused the request (HTTP \(status), \(appleCode.map(String.init) ?? "no code"))",
                    appleErrorCode: appleCode)
            }
        }
    }

    /// The credentials' identity: issuer, key id, the key's SHA-256 and the bundle ID.
    static func digest(of credentials: AppStoreServerAPICredentials) -> String {
        let text =
            "\(credentials.issuerID)\u{0}\(credentials.keyID)\u{0}\(credentials.privateKeyPEM)\u{0}\(credentials.bundleID)"
        return Hex.encode(SHA256.hash(data: Array(text.utf8)))
    }

    /// Throws ``AppStoreServerAPIError/Code/credentials`` while Apple's refusal of these credentials is recent.
    private func checkNotRefused(_ digest: String) throws {
        guard let until = refused.withLock({ $0[digest] }), until > .now else { return }
        throw AppStoreServerAPIError(
            .credentials, "Apple refused the app's App Store Server API credentials (401) within the last minute")
    }

    /// Counts one exchange (its HTTP status, or `network`) and its duration.
    private func record(
        endpoint: String, environment: Environment, status: String, since started: ContinuousClock.Instant
    ) {
        Counter(
            label: "receiptverify_storekit_requests_total",
            dimensions: [("endpoint", endpoint), ("environment", environment.rawValue), ("status", status)],
            factory: metrics
        ).increment()
        Timer(
            label: "receiptverify_storekit_request_duration_seconds", dimensions: [("endpoint", endpoint)],
            factory: metrics
        ).recordNanoseconds(started.duration(to: .now).nanoseconds)
    }

    /// Counts a wait for the request budget or for Apple's Retry-After.
    private func recordWait(_ wait: Duration) {
        Timer(label: "receiptverify_storekit_rate_limit_wait_seconds", factory: metrics).recordNanoseconds(
            wait.nanoseconds)
    }
}
