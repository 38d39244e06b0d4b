import AsyncHTTPClient
import Crypto
import Foundation
import ReceiptCore
import Logging
import NIOCore
import NIOHTTP1
import ReceiptService
import Synchronization

/// Where and as whom the account screen signs customers in with OpenID Connect (Google, or any issuer).
public struct OpenIDConfiguration: Sendable {
    /// The issuer URL (`https://accounts.google.com`); its discovery document is `/.well-known/openid-configuration`.
    public var issuer: String
    /// Our client id at the issuer.
    public var clientID: String
    /// Our client secret at the issuer (never logged).
    public var clientSecret: String
    /// The provider's name on the sign-in button.
    public var displayName: String
    /// Seconds for one exchange with the issuer.
    public var timeout: Duration

    /// Creates a configuration.
    public init(
        issuer: String, clientID: String, clientSecret: String, displayName: String = "Google",
        timeout: Duration = .seconds(10)
    ) {
        // Kept exactly as given: `iss` must equal it, and some issuers' end in a slash.
        self.issuer = issuer
        self.clientID = clientID
        self.clientSecret = clientSecret
        self.displayName = displayName
        self.timeout = timeout
    }
}

/// The OpenID Connect relying party: the issuer's discovery document and JWKS (cached), the authorization request
/// with PKCE, `state` and `nonce`, and the token exchange whose ID token is checked by ``OpenIDToken``.
/// [OpenID Connect Core](https://openid.net/specs/openid-connect-core-1_0.html),
/// [RFC 7636 (PKCE)](https://www.rfc-editor.org/rfc/rfc7636)
public final class OpenIDClient: Sendable {
    /// The endpoints the discovery document names.
    struct Endpoints: Sendable {
        var authorization: String
        var token: String
        var jwks: String
    }

    /// A sign-in under way: what the browser carries (sealed) between the redirect and the callback.
    public struct PendingSignIn: Sendable, Codable, Equatable {
        /// The `state` sent; the callback must return it.
        public var state: String
        /// The `nonce` sent; the ID token must carry it.
        public var nonce: String
        /// The PKCE verifier, whose S256 challenge was sent.
        public var codeVerifier: String
        /// When it started (it is good for ten minutes).
        public var startedAt: Date

        /// A new sign-in's random values.
        public static func start(at date: Date) -> PendingSignIn {
            PendingSignIn(
                state: Base64URL.encode(SecureRandom.bytes(24)), nonce: Base64URL.encode(SecureRandom.bytes(24)),
                codeVerifier: Base64URL.encode(SecureRandom.bytes(32)), startedAt: date)
        }

        /// The PKCE challenge of the verifier: base64url(SHA-256(verifier)).
        public var codeChallenge: String { Base64URL.encode(SHA256.hash(data: Array(codeVerifier.utf8))) }
    }

    /// The configuration.
    public let configuration: OpenIDConfiguration
    private let http: HTTPClient
    private let cache = Mutex<(endpoints: Endpoints?, failedAt: Date?)>((nil, nil))
    private let jwks = JSONWebKeySetCache()
    /// How long a failed discovery is remembered: while the issuer is down, sign-ins fail at once instead of each
    /// asking it again.
    static let failureMemory: TimeInterval = 30
    private let logger: Logger
    /// The largest discovery, JWKS or token answer read.
    static let maximumResponseSize = 64 * 1_024

    /// Creates the client; nothing is fetched before the first sign-in.
    public init(configuration: OpenIDConfiguration, logger: Logger) {
        self.configuration = configuration
        self.logger = logger
        var httpConfiguration = HTTPClient.Configuration()
        httpConfiguration.timeout = .init(connect: .seconds(5), read: .seconds(10))
        httpConfiguration.redirectConfiguration = .disallow
        http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: httpConfiguration)
    }

    /// Stops the HTTP client.
    public func shutdown() async throws { try await http.shutdown() }

    /// The issuer's authorization URL for a pending sign-in, returning to `redirectURI`.
    public func authorizationURL(for pending: PendingSignIn, redirectURI: String) async throws -> String {
        let endpoints = try await endpoints()
        var components = URLComponents(string: endpoints.authorization)
        let existing = components?.queryItems ?? []
        components?.queryItems =
            existing + [
                URLQueryItem(name: "response_type", value: "code"),
                URLQueryItem(name: "client_id", value: configuration.clientID),
                URLQueryItem(name: "redirect_uri", value: redirectURI),
                URLQueryItem(name: "scope", value: "openid email profile"),
                URLQueryItem(name: "state", value: pending.state),
                URLQueryItem(name: "nonce", value: pending.nonce),
                URLQueryItem(name: "code_challenge", value: pending.codeChallenge),
                URLQueryItem(name: "code_challenge_method", value: "S256"),
            ]
        guard let url = components?.url?.absoluteString else {
            throw ServiceError(.signInFailed, "the issuer's authorization endpoint is not a URL")
        }
        return url
    }

    /// Exchanges the callback's code for an ID token and checks it; returns who signed in.
    public func identity(code: String, pending: PendingSignIn, redirectURI: String, now: Date) async throws
        -> VerifiedIdentity
    {
        let endpoints = try await endpoints()
        var request = HTTPClientRequest(url: endpoints.token)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
        request.headers.add(name: "Accept", value: "application/json")
        request.body = .bytes(
            ByteBuffer(
                string: Self.form([
                    ("grant_type", "authorization_code"), ("code", code), ("redirect_uri", redirectURI),
                    ("code_verifier", pending.codeVerifier), ("client_id", configuration.clientID),
                    ("client_secret", configuration.clientSecret),
                ])))
        let (status, body) = try await send(request, what: "token")
        struct TokenAnswer: Decodable {
            var idToken: String?
            var error: String?
            enum CodingKeys: String, CodingKey {
                case idToken = "id_token"
                case error
            }
        }
        let answer = try? JSONDecoder().decode(TokenAnswer.self, from: Data(body))
        guard status == 200, let idToken = answer?.idToken else {
            throw ServiceError(
                .signInFailed, "the issuer refused the code (HTTP \(status), \(answer?.error ?? "no error named"))")
        }
        let keys = try await keys(for: idToken)
        return try OpenIDToken.verify(
            idToken, keys: keys, issuer: configuration.issuer, clientID: configuration.clientID, nonce: pending.nonce,
            now: now)
    }

    /// Form encoding (`application/x-www-form-urlencoded`).
    static func form(_ fields: [(String, String)]) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return fields.map { name, value in
            "\(name)=\(value.addingPercentEncoding(withAllowedCharacters: allowed) ?? "")"
        }.joined(separator: "&")
    }

    /// The discovery document's endpoints, fetched once.
    private func endpoints() async throws -> Endpoints {
        let (cached, failedAt) = cache.withLock { ($0.endpoints, $0.failedAt) }
        if let cached { return cached }
        if let failedAt, Date().timeIntervalSince(failedAt) < Self.failureMemory {
            throw ServiceError(.signInFailed, "the issuer's discovery failed less than 30 s ago")
        }
        do {
            let endpoints = try await discover()
            cache.withLock { $0.endpoints = endpoints }
            return endpoints
        } catch {
            cache.withLock { $0.failedAt = Date() }
            throw error
        }
    }

    private func discover() async throws -> Endpoints {
        let base = configuration.issuer.hasSuffix("/") ? String(configuration.issuer.dropLast()) : configuration.issuer
        let (status, body) = try await send(
            HTTPClientRequest(url: base + "/.well-known/openid-configuration"), what: "discovery")
        struct Discovery: Decodable {
            var issuer: String
            var authorizationEndpoint: String
            var tokenEndpoint: String
            var jwksURI: String
            enum CodingKeys: String, CodingKey {
                case issuer
                case authorizationEndpoint = "authorization_endpoint"
                case tokenEndpoint = "token_endpoint"
                case jwksURI = "jwks_uri"
            }
        }
        guard status == 200, let discovery = try? JSONDecoder().decode(Discovery.self, from: Data(body)) else {
            throw ServiceError(.signInFailed, "the issuer's discovery document is unreadable (HTTP \(status))")
        }
        // The document must be the configured issuer's own (OpenID Connect Discovery, 4.3).
        guard discovery.issuer == configuration.issuer else {
            throw ServiceError(.signInFailed, "the discovery document names another issuer: \(discovery.issuer)")
        }
        return Endpoints(
            authorization: discovery.authorizationEndpoint, token: discovery.tokenEndpoint, jwks: discovery.jwksURI)
    }

    /// The issuer's keys (``JSONWebKeySetCache``): fetched again when a token names a key not in them (the issuer
    /// rotated), at most once a minute, and at least daily.
    private func keys(for idToken: String) async throws -> JSONWebKeySet {
        try await jwks.keys(forKeyID: JSONWebKeySet.keyID(of: idToken)) {
            let (status, body) = try await self.send(
                HTTPClientRequest(url: try await self.endpoints().jwks), what: "JWKS")
            guard status == 200 else { throw ServiceError(.signInFailed, "the issuer's JWKS answered HTTP \(status)") }
            return try JSONWebKeySet(json: body)
        }
    }

    private func send(_ request: HTTPClientRequest, what: String) async throws -> (status: Int, body: [UInt8]) {
        do {
            let response = try await http.execute(request, timeout: .init(configuration.timeout), logger: logger)
            let body = try await response.body.collect(upTo: Self.maximumResponseSize)
            return (Int(response.status.code), Array(buffer: body))
        } catch let error as ServiceError {
            throw error
        } catch {
            throw ServiceError(.signInFailed, "the issuer's \(what) endpoint could not be reached: \(error)")
        }
    }
}
