import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import ReceiptCore
import ReceiptService

/// Google's OIDC signing keys (its JWKS), which sign the tokens of Pub/Sub's authenticated pushes: fetched on the first
/// push, kept, fetched again when a token names a key not among them (Google rotated them; at most once a minute) and
/// at least daily, as an OpenID issuer's are. Concurrent pushes share one fetch; a failed fetch is remembered for
/// ``failureMemory`` so that pushes while Google's endpoint is down fail at once (Pub/Sub retries them).
final class GooglePushKeys: Sendable {
    /// How long a failed fetch is remembered.
    static let failureMemory: TimeInterval = 30

    private let url: String
    private let http: HTTPClient
    private let logger: Logger
    private let cache = JSONWebKeySetCache(failureMemory: failureMemory) {
        GooglePlayError(.unavailable, "Google's keys could not be fetched less than 30 s ago")
    }

    /// Creates the keys' client for `url` (`serve --google-pubsub-jwks-url`) over `http` (the Google Play client's);
    /// nothing is fetched before the first push.
    init(url: String, http: HTTPClient, logger: Logger) {
        self.url = url
        self.http = http
        self.logger = logger
    }

    /// The keys to check a token whose header names `keyID`.
    func keys(forKeyID keyID: String?) async throws -> JSONWebKeySet {
        try await cache.keys(forKeyID: keyID) { try await self.fetch() }
    }

    private func fetch() async throws -> JSONWebKeySet {
        do {
            let response = try await http.execute(HTTPClientRequest(url: url), timeout: .seconds(10), logger: logger)
            let body = try await response.body.collect(upTo: JSONWebKeySet.maximumLength)
            guard response.status.code == 200 else {
                throw GooglePlayError(.unavailable, "Google's keys answered HTTP \(response.status.code)")
            }
            return try JSONWebKeySet(json: Array(buffer: body))
        } catch let error as GooglePlayError {
            logger.warning("Google's push keys could not be fetched", metadata: ["error": "\(error.reason)"])
            throw error
        } catch {
            logger.warning("Google's push keys could not be fetched", metadata: ["error": "\(error)"])
            throw GooglePlayError(.unavailable, "Google's keys could not be fetched: \(error)")
        }
    }
}
