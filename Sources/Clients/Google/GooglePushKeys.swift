import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import ReceiptCore
import ReceiptService
import Synchronization

/// Google's OIDC signing keys (its JWKS), which sign the tokens of Pub/Sub's authenticated pushes: fetched on the first
/// push, kept, fetched again when a token names a key not among them (Google rotated them; at most once a minute) and
/// at least daily, as an OpenID issuer's are. Concurrent pushes share one fetch; a failed fetch is remembered for
/// ``failureMemory`` so that pushes while Google's endpoint is down fail at once (Pub/Sub retries them).
final class GooglePushKeys: Sendable {
    /// How long a failed fetch is remembered.
    static let failureMemory: TimeInterval = 30

    private struct State {
        var keys: JSONWebKeySet?
        var fetchedAt: Date?
        var failedAt: Date?
        var fetching: Task<JSONWebKeySet, any Error>?
    }

    private let url: String
    private let http: HTTPClient
    private let logger: Logger
    private let state = Mutex(State())

    /// Creates the keys' client for `url` (`serve --google-pubsub-jwks-url`) over `http` (the Google Play client's);
    /// nothing is fetched before the first push.
    init(url: String, http: HTTPClient, logger: Logger) {
        self.url = url
        self.http = http
        self.logger = logger
    }

    /// The keys to check a token whose header names `keyID`.
    func keys(forKeyID keyID: String?, now: Date = Date()) async throws -> JSONWebKeySet {
        let task: Task<JSONWebKeySet, any Error> = try state.withLock { state in
            if let keys = state.keys, let fetchedAt = state.fetchedAt, now.timeIntervalSince(fetchedAt) < 86_400,
                keys.contains(keyID: keyID) || now.timeIntervalSince(fetchedAt) < 60
            {
                return Task { keys }
            }
            if let fetching = state.fetching { return fetching }
            if let failedAt = state.failedAt, now.timeIntervalSince(failedAt) < Self.failureMemory {
                if let keys = state.keys { return Task { keys } }
                throw GooglePlayError(.unavailable, "Google's keys could not be fetched less than 30 s ago")
            }
            let fetching = Task { try await self.fetch() }
            state.fetching = fetching
            return fetching
        }
        do {
            let keys = try await task.value
            state.withLock { state in
                if state.fetching != nil {
                    state.keys = keys
                    state.fetchedAt = now
                    state.fetching = nil
                }
            }
            return keys
        } catch {
            state.withLock { state in
                if state.fetching != nil {
                    state.failedAt = now
                    state.fetching = nil
                }
            }
            throw error
        }
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
