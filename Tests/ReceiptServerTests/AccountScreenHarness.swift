import Clients
import AsyncHTTPClient
import FakeOpenIDProvider
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import ReceiptServer
import ReceiptService
import ReceiptStore
import NIOHTTP1
import Synchronization
import TestSupport

/// The account screen in process (`app.test(.router)`) over a fresh store of either kind, signing in through a
/// fake OpenID provider on loopback, with a clock the test moves.
struct AccountScreen: Sendable {
    let client: any TestClientProtocol
    let tenancy: TenancyService
    let provider: FakeOpenIDProvider
    let clock: TestClock
    let http: HTTPClient

    static let clientID = "rv-test-client"

    /// The server's errors on standard error: a page that answers 503 or 500 in a test says why in the test's output.
    static let serverLogger: Logger = {
        var logger = Logger(label: "account-screen", factory: { LineLogHandler(label: $0) })
        logger.logLevel = .error
        return logger
    }()
    static let clientSecret = "rv-test-secret"

    static func run(
        _ kind: StoreKind, publicURL: String = "https://rv.example", settings: CustomerSettings = .init(),
        _ body: @Sendable (AccountScreen) async throws -> Void
    ) async throws {
        try await withTestStore(kind) { store, _ in
            let clock = TestClock()
            let tenancy = TenancyService(store: store, masterKey: MasterKey.generate(), now: { clock.now })
            let logger = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
            let provider = try await FakeOpenIDProvider.start(
                clientID: clientID, clientSecret: clientSecret, logger: logger)
            let openID = OpenIDClient(
                configuration: OpenIDConfiguration(
                    issuer: provider.issuer, clientID: clientID, clientSecret: clientSecret, displayName: "Fake"),
                logger: logger)
            var configuration = ServerConfiguration.forTests()
            configuration.publicURL = publicURL
            configuration.customers = settings
            // These tests are about behaviour, not time: a suite running beside them on two cores must not turn a
            // slow write into the deadline's 503 (StrangerCostTests hold the pages to the deadline).
            configuration.databaseTimeout = .seconds(30)
            let app = try buildApplication(
                configuration: configuration, tenancy: tenancy,
                verification: VerificationService(verifier: nil, apple: nil), openID: openID,
                logger: Self.serverLogger)
            var httpConfiguration = HTTPClient.Configuration()
            httpConfiguration.redirectConfiguration = .disallow
            let http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: httpConfiguration)
            do {
                try await app.test(.router) { client in
                    try await body(
                        AccountScreen(client: client, tenancy: tenancy, provider: provider, clock: clock, http: http))
                }
            } catch {
                try? await http.shutdown()
                try? await openID.shutdown()
                await provider.stop()
                throw error
            }
            try await http.shutdown()
            try await openID.shutdown()
            await provider.stop()
        }
    }

    /// A browser: the cookies it holds, and requests that send them.
    final class Browser: Sendable {
        let screen: AccountScreen
        let cookies = Mutex([String: String]())
        /// The `Set-Cookie` lines of the last answer, whole (for the flags).
        let lastSetCookies = Mutex([String]())

        init(_ screen: AccountScreen) { self.screen = screen }

        @discardableResult
        func get(_ uri: String) async throws -> TestResponse { try await send(uri, method: .get, body: nil) }

        @discardableResult
        func post(_ uri: String, _ fields: [(String, String)]) async throws -> TestResponse {
            try await send(uri, method: .post, body: ByteBuffer(string: OpenIDClientForm.encode(fields)))
        }

        /// A form post carrying the session's CSRF token, read from `page`.
        @discardableResult
        func submit(_ uri: String, _ fields: [(String, String)], from page: String = "/account/keys") async throws
            -> TestResponse
        {
            let html = String(buffer: try await get(page).body)
            return try await post(uri, [("csrf", Self.csrf(in: html) ?? "")] + fields)
        }

        static func csrf(in html: String) -> String? {
            guard let range = html.range(of: #"name="csrf" value=""#) else { return nil }
            return String(html[range.upperBound...].prefix { $0 != "\"" })
        }

        private func send(_ uri: String, method: HTTPRequest.Method, body: ByteBuffer?) async throws -> TestResponse {
            var headers: HTTPFields = [:]
            let cookieLine = cookies.withLock { $0.map { "\($0.key)=\($0.value)" }.sorted().joined(separator: "; ") }
            if !cookieLine.isEmpty { headers[.cookie] = cookieLine }
            if body != nil { headers[.contentType] = "application/x-www-form-urlencoded" }
            let response = try await screen.client.executeRequest(
                uri: uri, method: method, headers: headers, body: body)
            let lines = response.headers[values: .setCookie]
            lastSetCookies.withLock { $0 = lines }
            cookies.withLock { jar in
                for line in lines {
                    let pair = line.split(separator: ";")[0].split(separator: "=", maxSplits: 1)
                    let name = String(pair[0])
                    let value = pair.count > 1 ? String(pair[1]) : ""
                    if value.isEmpty || line.contains("Max-Age=0") { jar[name] = nil } else { jar[name] = value }
                }
            }
            return response
        }

        /// The path of a 303's `Location` relative to our server (or the whole URL elsewhere).
        static func location(_ response: TestResponse) -> String { response.headers[.location] ?? "" }

        /// Starts a sign-in and has the provider approve `email`; returns the callback URI (path and query) the
        /// provider sends the browser back to, not yet visited.
        func approvedCallback(email: String, verified: Bool = true) async throws -> String {
            let start = try await get("/auth/oidc")
            guard start.status == .seeOther else { throw TestSetupError("GET /auth/oidc answered \(start.status)") }
            let authorize =
                Self.location(start) + "&email=\(email.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!)"
                + (verified ? "" : "&email_verified=false")
            let answer = try await screen.http.execute(
                HTTPClientRequest(url: authorize), timeout: .seconds(10))
            guard answer.status == .seeOther, let back = answer.headers.first(name: "location"),
                let url = URLComponents(string: back)
            else { throw TestSetupError("the provider answered \(answer.status)") }
            return url.path + "?" + (url.percentEncodedQuery ?? "")
        }

        /// Signs in through the provider; returns the callback's answer.
        @discardableResult
        func signIn(email: String, verified: Bool = true) async throws -> TestResponse {
            try await get(try await approvedCallback(email: email, verified: verified))
        }

        var hasSession: Bool { cookies.withLock { $0[WebSiteNames.session] != nil } }
    }
}

/// Cookie names as the site sets them over https (the harness's public URL): `__Host-` names.
enum WebSiteNames {
    static let session = "__Host-rv_session"
    static let signIn = "__Host-rv_signin"
}

/// Form encoding for the tests' posts.
enum OpenIDClientForm {
    static func encode(_ fields: [(String, String)]) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return fields.map { "\($0.0)=\($0.1.addingPercentEncoding(withAllowedCharacters: allowed)!)" }
            .joined(separator: "&")
    }
}

/// A clock the test moves.
final class TestClock: Sendable {
    private let date = Mutex(Date())
    var now: Date { date.withLock { $0 } }
    func advance(_ seconds: TimeInterval) { date.withLock { $0 = $0.addingTimeInterval(seconds) } }
}
