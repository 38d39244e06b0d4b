import Crypto
import Foundation
import Hummingbird
import Logging
// `channel.localAddress` (learning the bound port) is NIOCore API that Hummingbird does not re-export.
import NIOCore
import Synchronization
import _CryptoExtras

/// A fake OpenID Connect provider on loopback, for the sign-in tests and (through the `fake-openid` executable) the
/// browser tests: discovery, JWKS, an authorization endpoint with a one-field sign-in page, and a token endpoint for
/// the authorization-code flow with PKCE (S256). ID tokens are RS256 JWTs signed by the provider's own RSA-2048 key.
///
/// It is strict where a real provider is, so that a client bug shows up as a refusal rather than passing unnoticed:
/// codes are single use and live 60 seconds, the redirect URI and PKCE verifier must match, the client must
/// authenticate. ``setFault(_:)`` makes it issue tokens a relying party must reject.
///
/// Routes (relative to ``issuer``):
/// - `GET /.well-known/openid-configuration`
/// - `GET /jwks`
/// - `GET /authorize`: with an `email` query item it approves at once and redirects with a code; without one it shows
///   a form asking for it (ids `email`, `email_verified`, `approve`). `email_verified=false` and `name` are honoured.
/// - `POST /token`: `client_secret_post` or `client_secret_basic`.
public final class FakeOpenIDProvider: Sendable {
    /// A defect in the ID tokens issued from now on (until ``setFault(_:)`` changes it), each of which a relying party
    /// must refuse.
    public enum Fault: Sendable, Hashable {
        /// `aud` names another client.
        case wrongAudience
        /// `exp` is an hour in the past (`iat` two hours ago).
        case expired
        /// `iss` is another issuer.
        case wrongIssuer
        /// Signed by another RSA key that carries the published key's `kid`.
        case badSignature
        /// `nonce` is not the one the authorization request sent.
        case wrongNonce
    }

    /// What an authorization code stands for, kept until the code is redeemed or found stale.
    struct Grant: Sendable {
        let clientID: String
        let redirectURI: String
        let nonce: String
        let codeChallenge: String
        let email: String
        let emailVerified: Bool
        let name: String?
        let subject: String
        let created: Date
    }

    struct State: Sendable {
        var issuer = ""
        var fault: Fault?
        var codes: [String: Grant] = [:]
        var tokenRequests = 0
        var server: Task<Void, Never>?
    }

    /// The client ID the provider knows; any other is refused.
    public let clientID: String
    let clientSecret: String
    /// The published key's `kid`, also carried by the impostor key of ``Fault/badSignature``.
    let keyID: String
    let signingKey: _RSA.Signing.PrivateKey
    let impostorKey: _RSA.Signing.PrivateKey
    let logger: Logger
    let state = Mutex(State())

    /// `http://127.0.0.1:PORT`, without a trailing slash: what ID tokens carry as `iss` and discovery lives under.
    public var issuer: String { state.withLock { $0.issuer } }

    /// How many `POST /token` requests the provider has answered, whatever the answer: lets a test prove that the
    /// relying party did (or did not) go back to the provider, e.g. with a replayed code.
    public var tokenRequests: Int { state.withLock { $0.tokenRequests } }

    /// Makes the ID tokens issued from now on defective in the given way; `nil` restores correct tokens.
    public func setFault(_ fault: Fault?) {
        state.withLock { $0.fault = fault }
    }

    private init(clientID: String, clientSecret: String, logger: Logger) throws {
        self.clientID = clientID
        self.clientSecret = clientSecret
        self.logger = logger
        signingKey = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        // Generated up front rather than on demand, so that setting the fault never costs a key generation mid-test.
        impostorKey = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        // Derived from the key, as many providers do, so that it changes with every run like a rotated key would.
        let digest = SHA256.hash(data: signingKey.publicKey.derRepresentation)
        keyID = "fake-" + digest.prefix(8).map { String(format: "%02x", $0) }.joined()
    }

    /// Starts a provider on `127.0.0.1` in the background; it serves until ``stop()``.
    ///
    /// - Parameters:
    ///   - clientID: The only client ID it accepts.
    ///   - clientSecret: That client's secret.
    ///   - port: The port to listen on; 0 picks a free one (see ``issuer``).
    ///   - logger: Where refusals are logged (with their reason, which the HTTP answer does not always carry); by
    ///     default standard error at `notice`, leaving standard output to the `fake-openid` executable.
    public static func start(
        clientID: String, clientSecret: String, port: Int = 0, logger: Logger? = nil
    ) async throws -> FakeOpenIDProvider {
        let logger = logger ?? defaultLogger()
        let provider = try FakeOpenIDProvider(clientID: clientID, clientSecret: clientSecret, logger: logger)
        let router = Router()
        provider.addRoutes(to: router)

        let (ports, continuation) = AsyncStream.makeStream(of: Int.self)
        let app = Application(
            router: router, configuration: .init(address: .hostname("127.0.0.1", port: port), serverName: nil),
            onServerRunning: { channel in
                let port = channel.localAddress?.port ?? 0
                // Set before anyone can know the port, so no request sees an empty issuer.
                provider.state.withLock { $0.issuer = "http://127.0.0.1:\(port)" }
                continuation.yield(port)
                continuation.finish()
            }, logger: logger)
        let server = Task {
            do {
                try await app.run()
            } catch {
                // Cancellation is how `stop()` ends it; anything else is worth a line.
                if !Task.isCancelled {
                    logger.error("Fake OpenID provider stopped", metadata: ["error": "\(error)"])
                }
            }
            // Unblocks `start` when the server could not start (the port is taken, say).
            continuation.finish()
        }
        var iterator = ports.makeAsyncIterator()
        guard let bound = await iterator.next(), bound > 0 else {
            server.cancel()
            await server.value
            throw StartFailure(port: port)
        }
        provider.state.withLock { $0.server = server }
        return provider
    }

    /// Stops the server and waits until it has closed its socket. Calling it twice is harmless.
    public func stop() async {
        let server = state.withLock { state in
            defer { state.server = nil }
            return state.server
        }
        guard let server else { return }
        server.cancel()
        await server.value
    }

    /// The server did not start listening.
    struct StartFailure: Error, CustomStringConvertible {
        let port: Int
        var description: String { "the fake OpenID provider could not listen on 127.0.0.1:\(port)" }
    }

    private static func defaultLogger() -> Logger {
        var logger = Logger(label: "fake-openid", factory: { label in StreamLogHandler.standardError(label: label) })
        // Hummingbird's per-request and start-up lines are `info`; refusals are `notice`.
        logger.logLevel = .notice
        return logger
    }

    private func addRoutes(to router: Router<BasicRequestContext>) {
        router.get("/.well-known/openid-configuration") { _, _ -> Response in self.discovery() }
        router.get("/jwks") { _, _ -> Response in self.jwks() }
        router.get("/authorize") { request, _ -> Response in self.authorize(request) }
        router.post("/token") { request, _ -> Response in await self.token(request) }
    }
}
