import AsyncHTTPClient
import CoreMetrics
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import ReceiptCore
import ReceiptService

/// The Google Play Developer API (androidpublisher v3) on behalf of apps' service accounts: each request carries the
/// account's access token (``GoogleAccessTokens``), answers are reused for the cache's lifetime (a burst of
/// verifications of one purchase costs Google one request), and Google's statuses become ``GooglePlayError``s.
/// [Google's documentation](https://developers.google.com/android-publisher/api-ref/rest)
public final class GooglePlayClient: GooglePlayLooking {
    /// The configuration.
    public let configuration: GooglePlayConfiguration
    private let http: HTTPClient
    private let tokens: GoogleAccessTokens
    private let answers: AnswerCache<GooglePlayAnswer>
    private let pushKeys: GooglePushKeys
    private let metrics: any MetricsFactory
    private let logger: Logger

    /// Creates a client counting its requests into `metrics` (nil: nowhere).
    public init(configuration: GooglePlayConfiguration, metrics: (any MetricsFactory)? = nil, logger: Logger) {
        self.configuration = configuration
        self.metrics = metrics ?? NOOPMetricsHandler.instance
        self.logger = logger
        var httpConfiguration = HTTPClient.Configuration()
        httpConfiguration.timeout = .init(connect: .seconds(3), read: nil)
        httpConfiguration.redirectConfiguration = .disallow
        http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: httpConfiguration)
        tokens = GoogleAccessTokens(configuration: configuration, http: http, metrics: metrics, logger: logger)
        answers = AnswerCache(lifetime: configuration.cacheLifetime)
        pushKeys = GooglePushKeys(url: configuration.pushKeysURL, http: http, logger: logger)
    }

    public func pushKeys(forKeyID keyID: String?) async throws -> JSONWebKeySet {
        try await pushKeys.keys(forKeyID: keyID)
    }

    /// Stops the HTTP client.
    public func shutdown() async throws { try await http.shutdown() }

    public func productPurchase(
        packageName: String, productID: String, token: String, account: GoogleServiceAccount, fresh: Bool
    ) async throws -> GooglePlayAnswer {
        try await get(
            "/androidpublisher/v3/applications/\(Self.segment(packageName))/purchases/products/"
                + "\(Self.segment(productID))/tokens/\(Self.segment(token))",
            endpoint: "products_get", account: account, fresh: fresh)
    }

    public func subscriptionPurchase(
        packageName: String, token: String, account: GoogleServiceAccount, fresh: Bool
    ) async throws -> GooglePlayAnswer {
        try await get(
            "/androidpublisher/v3/applications/\(Self.segment(packageName))/purchases/subscriptionsv2/tokens/"
                + Self.segment(token),
            endpoint: "subscriptionsv2_get", account: account, fresh: fresh)
    }

    public func acknowledge(
        packageName: String, productID: String, token: String, isSubscription: Bool, account: GoogleServiceAccount
    ) async throws {
        let kind = isSubscription ? "subscriptions" : "products"
        _ = try await send(
            "/androidpublisher/v3/applications/\(Self.segment(packageName))/purchases/\(kind)/"
                + "\(Self.segment(productID))/tokens/\(Self.segment(token)):acknowledge",
            method: .POST, endpoint: "\(kind)_acknowledge", account: account)
    }

    public func consume(packageName: String, productID: String, token: String, account: GoogleServiceAccount)
        async throws
    {
        _ = try await send(
            "/androidpublisher/v3/applications/\(Self.segment(packageName))/purchases/products/"
                + "\(Self.segment(productID))/tokens/\(Self.segment(token)):consume",
            method: .POST, endpoint: "products_consume", account: account)
    }

    public func voidedPurchases(
        packageName: String, startTime: Int64?, pageToken: String?, account: GoogleServiceAccount
    ) async throws -> (purchases: [JSONObject], nextPageToken: String?) {
        // Quantity-based partial refunds are listed only when asked for (money review M8).
        var query = ["type=1", "maxResults=1000", "includeQuantityBasedPartialRefund=true"]
        if let startTime { query.append("startTime=\(startTime)") }
        if let pageToken { query.append("token=\(Self.segment(pageToken))") }
        let page = try await send(
            "/androidpublisher/v3/applications/\(Self.segment(packageName))/purchases/voidedpurchases?"
                + query.joined(separator: "&"),
            method: .GET, endpoint: "voidedpurchases_list", account: account)
        let purchases = (page["voidedPurchases"]?.arrayValue ?? []).compactMap { item -> JSONObject? in
            if case .object(let object) = item { return object }
            return nil
        }
        var next: String?
        if case .object(let pagination)? = page["tokenPagination"] { next = pagination["nextPageToken"]?.stringValue }
        return (purchases, next.flatMap { $0.isEmpty ? nil : $0 })
    }

    /// A GET of `path`, from the cache when the same account asked for it within its lifetime and `fresh` is false.
    private func get(_ path: String, endpoint: String, account: GoogleServiceAccount, fresh: Bool) async throws
        -> GooglePlayAnswer
    {
        let key = "\(account.clientEmail) \(account.keyID) \(path)"
        if fresh { answers.forget(key) }
        return try await answers.value(key) {
            GooglePlayAnswer(
                resource: try await self.send(path, method: .GET, endpoint: endpoint, account: account),
                fetchedAt: Date())
        }.value
    }

    private func send(_ path: String, method: HTTPMethod, endpoint: String, account: GoogleServiceAccount)
        async throws -> JSONObject
    {
        let deadline = ContinuousClock.now + configuration.timeout
        // A token Google no longer takes (revoked, or its key rotated) is dropped and granted anew, once.
        for attempt in 0..<2 {
            let token = try await tokens.token(for: account, deadline: deadline)
            var request = HTTPClientRequest(url: configuration.apiURL + path)
            request.method = method
            if method == .POST {
                request.headers.add(name: "Content-Type", value: "application/json")
                request.body = .bytes(ByteBuffer(string: "{}"))
            }
            request.headers.add(name: "Authorization", value: "Bearer " + token)
            request.headers.add(name: "Accept", value: "application/json")
            let remaining = ContinuousClock.now.duration(to: deadline)
            guard remaining > .zero else { throw GooglePlayError(.unavailable, "the call's time ran out") }
            let status: Int
            let body: [UInt8]
            do {
                let response = try await http.execute(request, timeout: .init(remaining), logger: logger)
                status = Int(response.status.code)
                body = Array(buffer: try await response.body.collect(upTo: configuration.maximumResponseSize))
            } catch {
                count(endpoint, "network")
                throw GooglePlayError(.unavailable, "Google Play could not be reached: \(error)")
            }
            count(endpoint, String(status))
            switch status {
            case 200 where method == .POST, 204 where method == .POST:
                // An acknowledgement answers an empty body.
                return JSONObject()
            case 200:
                guard case .object(let object)? = try? JSONParser.parse(body) else {
                    throw GooglePlayError(.invalidResponse, "Google answered 200 with a body that is not a JSON object")
                }
                return object
            case 401 where attempt == 0:
                tokens.forget(account)
                continue
            case 401:
                throw GooglePlayError(.credentials, "Google refused the app's access token (401)", status: status)
            case 403:
                throw GooglePlayError(
                    .permission, "Google says the service account may not act for the package (403)", status: status)
            case 400, 404, 410:
                throw GooglePlayError(.notFound, "Google does not know the purchase (\(status))", status: status)
            case 429:
                throw GooglePlayError(.rateLimited, "Google Play's quota is spent (429)", status: status)
            default:
                throw GooglePlayError(.unavailable, "Google Play answered \(status)", status: status)
            }
        }
        throw GooglePlayError(.credentials, "Google refused the app's access token (401)", status: 401)
    }

    /// A path segment, percent-encoded (the package, product and token are checked to be plain before this).
    static func segment(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(CharacterSet(charactersIn: "._-")))
            ?? ""
    }

    private func count(_ endpoint: String, _ result: String) {
        metrics.makeCounter(
            label: "receiptverify_google_requests_total", dimensions: [("endpoint", endpoint), ("result", result)]
        ).increment(by: 1)
    }
}
