import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import ReceiptCore
import ReceiptServer
import ReceiptService
import ReceiptStore
import ReceiptTestKit
import TestSupport
import Testing

/// `/api` and `/apiencrypted` through the real application in process (`app.test(.router)`), over a temporary
/// SQLite store and a verifier trusting a test root: the routes, the middleware (log, metrics, JSON errors) and the
/// typed context, without sockets. The live-socket suites in APITests run the `serve` binary.
@Suite struct InProcessAPITests {
    static let pki = try! TestPKI(TestPKI.Options(keyType: .rsa2048))

    struct Fixture: Sendable {
        let app: Application<RouterResponder<ServerContext>>
        let tenancy: TenancyService
        let metrics: ServerMetrics
        let key: String
        let token: String
        let resultKey: [UInt8]
        let receipt: String
    }

    func withFixture(_ body: @Sendable (Fixture) async throws -> Void) async throws {
        try await withTemporarySQLite { store, logger in
            try await Self.withFixture(over: store, logger: logger, body)
        }
    }

    /// The fixture over `store`: a plan without a quota, an account with a key, an app trusting the test root and the
    /// application serving them.
    static func withFixture(
        over store: any DataStore, logger: Logger, _ body: @Sendable (Fixture) async throws -> Void
    ) async throws {
        let tenancy = TenancyService(store: store, masterKey: MasterKey.generate())
        _ = try await tenancy.setPlan(
            name: "pro", monthlyQuota: .some(nil), rateLimitPerSecond: 1000, includesEncryptedEndpoint: true,
            monthlyPriceCents: nil, overagePricePer1000Cents: nil)
        _ = try await tenancy.createAccount(name: "Acme", email: "ops@acme.test", planName: "pro")
        let key = try await tenancy.createAPIKey(account: "ops@acme.test", label: nil).clearText
        let anchors = try TrustAnchors(encoded: [Self.pki.rootDER])
        var settings = AppSettings(
            bundleIDs: ["com.example.app"], allowedEnvironments: ["sandbox", "production"],
            verificationMode: "local", resultCipher: "aes-256-gcm", allowsTestData: true)
        settings.testAnchors = anchors.anchors.map(\.fingerprint)
        let app = try await tenancy.addApp(account: "ops@acme.test", settings: settings)
        let verifier = ReceiptVerifier(anchors: anchors)
        let metrics = ServerMetrics()
        try await body(
            Fixture(
                // The in-process client has no peer address, so /metrics is served to anyone here; the live
                // tests (ProxyAPITests) check that it is served to loopback only by default.
                app: try buildApplication(
                    configuration: ServerConfiguration.forTests(publicMetrics: true), tenancy: tenancy,
                    verification: VerificationService(verifier: verifier, apple: nil), metrics: metrics,
                    logger: logger),
                tenancy: tenancy, metrics: metrics, key: key, token: app.token,
                resultKey: try tenancy.resultKey(of: app),
                receipt: try ReceiptBuilder(inAppPurchaseCount: 2).build(signedBy: Self.pki).base64))
    }

    static func form(_ fields: [String: String]) -> ByteBuffer {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        let text = fields.sorted { $0.key < $1.key }.map {
            "\($0.key)=\($0.value.addingPercentEncoding(withAllowedCharacters: allowed)!)"
        }.joined(separator: "&")
        return ByteBuffer(string: text)
    }

    static let formHeaders: HTTPFields = [.contentType: "application/x-www-form-urlencoded"]

    static func json(_ buffer: ByteBuffer) throws -> JSONObject {
        guard case .object(let object) = try JSONParser.parse(buffer.readableBytesView) else {
            throw TestKitError("not a JSON object")
        }
        return object
    }

    @Test func aValidReceiptIsAnsweredWithItsRequestIDAndCounted() async throws {
        try await withFixture { fixture in
            try await fixture.app.test(.router) { client in
                let body = Self.form(["apikey": fixture.key, "token": fixture.token, "receipt": fixture.receipt])
                try await client.execute(uri: "/api", method: .post, headers: Self.formHeaders, body: body) {
                    response in
                    #expect(response.status == .ok)
                    let answer = try Self.json(response.body)
                    #expect(answer["status"] == .integer(0))
                    #expect(answer["receipt"]?["bundle_id"] == .string("com.example.app"))
                    let requestID = try #require(response.headers[HTTPField.Name("X-Request-ID")!])
                    #expect(answer["request_id"] == .string(requestID) && requestID.count == 24)
                }
                try await client.execute(
                    uri: "/api", method: .post, headers: Self.formHeaders,
                    body: Self.form(["apikey": fixture.key, "token": fixture.token, "receipt": "bm90IGEgcmVjZWlwdA=="])
                ) { response in
                    let answer = try Self.json(response.body)
                    #expect(answer["status"] == .integer(21002))
                }
                try await client.execute(uri: "/metrics", method: .get) { response in
                    #expect(response.headers[.contentType]?.hasPrefix("text/plain; version=0.0.4") == true)
                    let text = String(buffer: response.body)
                    #expect(text.contains(#"http_server_requests_total{route="/api",method="POST",status="200"} 2"#))
                    #expect(
                        text.contains(
                            #"receiptverify_verifications_total{input="unified_receipt",source="local",status="0"} 1"#))
                    #expect(
                        text.contains(
                            #"receiptverify_verifications_total{input="none",source="none",status="21002"} 1"#))
                    // Labels never carry a token, a key or an account.
                    #expect(!text.contains(fixture.token) && !text.contains(fixture.key))
                }
            }
        }
    }

    @Test func anEncryptedAnswerOpensWithTheAppsKey() async throws {
        try await withFixture { fixture in
            try await fixture.app.test(.router) { client in
                let body = Self.form([
                    "apikey": fixture.key, "token": fixture.token, "receipt": fixture.receipt, "nonce": "n-1",
                ])
                try await client.execute(uri: "/apiencrypted", method: .post, headers: Self.formHeaders, body: body) {
                    response in
                    #expect(response.status == .ok)
                    #expect(response.headers[.contentType] == "text/plain; charset=utf-8")
                    let sealed = try #require(Data(base64Encoded: String(buffer: response.body)))
                    let box = try AES.GCM.SealedBox(
                        nonce: AES.GCM.Nonce(data: sealed.prefix(16)), ciphertext: sealed.dropFirst(16).dropLast(16),
                        tag: sealed.suffix(16))
                    let opened = try AES.GCM.open(box, using: SymmetricKey(data: fixture.resultKey))
                    let answer = try Self.json(ByteBuffer(bytes: opened))
                    #expect(answer["status"] == .integer(0) && answer["nonce"] == .string("n-1"))
                }
                // A failure is plain JSON, never sealed.
                try await client.execute(
                    uri: "/apiencrypted", method: .post, headers: Self.formHeaders,
                    body: Self.form(["apikey": "rvk_wrong", "token": fixture.token, "receipt": fixture.receipt])
                ) { response in
                    #expect(response.status == .unauthorized)
                    let answer = try Self.json(response.body)
                    #expect(answer["status"] == .integer(401))
                }
            }
        }
    }

    @Test func unknownPathsAndWrongMethodsAnswerInTheAPIsJSONShape() async throws {
        try await withFixture { fixture in
            try await fixture.app.test(.router) { client in
                for (uri, method, status, allow) in [
                    ("/nope", HTTPRequest.Method.get, 404, nil), ("/api", .get, 405, "POST"),
                    ("/healthz", .post, 405, "GET, HEAD"), ("/metrics", .delete, 405, "GET"),
                    ("/openapi.json", .put, 405, "GET"), ("/api", .trace, 405, "POST"),
                    ("/apiencrypted", HTTPRequest.Method("QUERY")!, 405, "POST"),
                ] {
                    try await client.execute(uri: uri, method: method) { response in
                        #expect(Int(response.status.code) == status, "\(method) \(uri)")
                        #expect(response.headers[.allow] == allow, "\(method) \(uri)")
                        let answer = try Self.json(response.body)
                        #expect(answer["status"] == .integer(Int64(status)))
                        #expect(answer.keys == ["status", "description", "request_id"])
                    }
                }
                try await client.execute(uri: "/openapi.json", method: .get) { response in
                    #expect(response.headers[.contentType] == "application/json")
                    let document = try Self.json(response.body)
                    #expect(document["openapi"] == .string("3.1.0"))
                }
            }
        }
    }

    @Test func metricsOnTheirOwnPortLeaveA404OnThePublicOne() async throws {
        try await withTemporaryTenancy { tenancy, logger in
            var configuration = ServerConfiguration.forTests()
            configuration.metricsPort = 1
            let app = try buildApplication(
                configuration: configuration, tenancy: tenancy,
                verification: VerificationService(verifier: nil, apple: nil), logger: logger)
            try await app.test(.router) { client in
                try await client.execute(uri: "/metrics", method: .get) { response in
                    #expect(response.status == .notFound)
                    let answer = try Self.json(response.body)
                    #expect(answer["status"] == .integer(404))
                }
            }
        }
    }
}
