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
import _CryptoExtras

/// The OAuth 2.0 access tokens of apps' Google service accounts (the JWT bearer grant, RFC 7523), each reused until
/// five minutes before it expires. Concurrent callers for one account share one grant; an account Google refused is
/// refused without asking for ``GooglePlayConfiguration/refusedCredentialsPause``, so that a wrong key never makes a
/// loop of grants.
/// [Google's documentation](https://developers.google.com/identity/protocols/oauth2/service-account#httprest)
public final class GoogleAccessTokens: Sendable {
    /// The scope of the Google Play Developer API.
    public static let scope = "https://www.googleapis.com/auth/androidpublisher"
    /// The lifetime the assertion asks for: Google's longest, one hour.
    static let assertionLifetime = 3_600

    private struct Granted {
        let token: String
        let expiresAt: ContinuousClock.Instant
    }

    private let configuration: GooglePlayConfiguration
    private let http: HTTPClient
    private let granted = Mutex<[GoogleServiceAccount: Granted]>([:])
    private let refused = Mutex<[GoogleServiceAccount: ContinuousClock.Instant]>([:])
    private let inFlight = Mutex<[GoogleServiceAccount: Task<Granted, any Error>]>([:])
    private let metrics: any MetricsFactory
    private let logger: Logger

    /// Creates the tokens of `configuration`'s token endpoint, on `http`, counting grants into `metrics`.
    public init(
        configuration: GooglePlayConfiguration, http: HTTPClient, metrics: (any MetricsFactory)? = nil,
        logger: Logger
    ) {
        self.configuration = configuration
        self.http = http
        self.metrics = metrics ?? NOOPMetricsHandler.instance
        self.logger = logger
    }

    /// An access token for `account`, good for at least five more minutes: the one granted before, or a new grant
    /// within `deadline`.
    public func token(for account: GoogleServiceAccount, deadline: ContinuousClock.Instant) async throws -> String {
        let now = ContinuousClock.now
        if let known = granted.withLock({ $0[account] }), known.expiresAt - .seconds(300) > now {
            return known.token
        }
        if let until = refused.withLock({ $0[account] }), until > now {
            throw GooglePlayError(
                .credentials, "Google refused the app's service account key; it is not asked again before a while")
        }
        let task = inFlight.withLock { running in
            if let existing = running[account] { return existing }
            let created = Task { [self] in
                defer { _ = self.inFlight.withLock { $0.removeValue(forKey: account) } }
                return try await self.grant(account, deadline: deadline)
            }
            running[account] = created
            return created
        }
        return try await task.value.token
    }

    /// Forgets `account`'s token (Google refused it on a resource: the next call asks for a new one).
    public func forget(_ account: GoogleServiceAccount) {
        _ = granted.withLock { $0.removeValue(forKey: account) }
    }

    private func grant(_ account: GoogleServiceAccount, deadline: ContinuousClock.Instant) async throws -> Granted {
        let assertion = try Self.assertion(for: account, at: Date())
        var request = HTTPClientRequest(url: configuration.tokenURL)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
        request.headers.add(name: "Accept", value: "application/json")
        request.body = .bytes(
            ByteBuffer(
                string: "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=" + assertion))
        let remaining = min(ContinuousClock.now.duration(to: deadline), configuration.timeout)
        guard remaining > .zero else { throw GooglePlayError(.unavailable, "the call's time ran out") }
        let started = ContinuousClock.now
        let status: Int
        let body: [UInt8]
        do {
            let response = try await http.execute(request, timeout: .init(remaining), logger: logger)
            status = Int(response.status.code)
            body = Array(buffer: try await response.body.collect(upTo: configuration.maximumResponseSize))
        } catch {
            count("network")
            throw GooglePlayError(.unavailable, "Google's token endpoint could not be reached: \(error)")
        }
        count(String(status))
        let object: JSONObject? = if case .object(let parsed)? = try? JSONParser.parse(body) { parsed } else { nil }
        switch status {
        case 200:
            guard case .string(let token)? = object?["access_token"], !token.isEmpty,
                case .integer(let seconds)? = object?["expires_in"], seconds > 0
            else {
                throw GooglePlayError(.invalidResponse, "Google's token endpoint answered no access_token", status: 200)
            }
            // Kept until five minutes before it expires: a short-lived one (under ten minutes) for half its life.
            let lifetime = seconds >= 600 ? Int(seconds) : Int(seconds) / 2 + 300
            let fresh = Granted(token: token, expiresAt: started + .seconds(lifetime))
            granted.withLock { granted in
                // A handful of apps per server: the table is small, but never unbounded.
                if granted.count >= 10_000 { granted.removeAll() }
                granted[account] = fresh
            }
            return fresh
        case 400, 401, 403:
            // invalid_grant, invalid_client, unauthorized_client: the key is wrong, revoked, or its clock claims.
            let error = object?["error"]?.stringValue.map(Self.word) ?? "refused"
            refused.withLock { refused in
                if refused.count >= 10_000 { refused = refused.filter { $0.value > .now } }
                refused[account] = .now + configuration.refusedCredentialsPause
            }
            throw GooglePlayError(
                .credentials, "Google refused the app's service account key (\(status) \(error))", status: status)
        case 429:
            throw GooglePlayError(.rateLimited, "Google's token endpoint is rate limiting (429)", status: status)
        default:
            throw GooglePlayError(.unavailable, "Google's token endpoint answered \(status)", status: status)
        }
    }

    /// The signed JWT (RS256) the grant presents: the service account as issuer, the key's token URI as audience, the
    /// Play Developer API's scope, one hour.
    static func assertion(for account: GoogleServiceAccount, at date: Date) throws -> String {
        let key: _RSA.Signing.PrivateKey
        do {
            key = try _RSA.Signing.PrivateKey(pemRepresentation: account.privateKeyPEM)
        } catch {
            throw GooglePlayError(.credentials, "the app's service account key is not an RSA private key in PEM")
        }
        let issuedAt = Int(date.timeIntervalSince1970)
        var header = JSONObject(capacity: 3)
        header.append("alg", .string("RS256"))
        header.append("typ", .string("JWT"))
        header.append("kid", .string(account.keyID))
        var claims = JSONObject(capacity: 5)
        claims.append("iss", .string(account.clientEmail))
        claims.append("scope", .string(scope))
        claims.append("aud", .string(account.tokenURI))
        claims.append("iat", .integer(Int64(issuedAt)))
        claims.append("exp", .integer(Int64(issuedAt + assertionLifetime)))
        let input =
            Base64URL.encode(JSONValue.object(header).encoded) + "."
            + Base64URL.encode(JSONValue.object(claims).encoded)
        let signature = try key.signature(for: Data(input.utf8), padding: .insecurePKCS1v1_5)
        return input + "." + Base64URL.encode(Array(signature.rawRepresentation))
    }

    /// Google's error code made safe for a log line: letters, digits and `_`, at most 40.
    static func word(_ text: String) -> String {
        String(
            text.unicodeScalars.filter {
                $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "_")
            }.prefix(40))
    }

    private func count(_ result: String) {
        metrics.makeCounter(
            label: "receiptverify_google_requests_total", dimensions: [("endpoint", "token"), ("result", result)]
        ).increment(by: 1)
    }
}
