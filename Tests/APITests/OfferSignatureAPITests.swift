import Crypto
import Foundation
import ReceiptCore
import TestSupport
import Testing

/// `POST /api/offers/signature` through the real server (docs/app-store-server-api.md, "Offers"): each kind signed
/// with the app's In-App Purchase key and checked here with the key's public half over the message Apple builds; the
/// refusals; metering. (CI also checks the answers against Apple's own App Store Server Library:
/// scripts/offers-check.py.)
@Suite struct OfferSignatureAPITests {
    static func integer(_ value: JSONValue?) -> Int64? {
        if case .integer(let number)? = value { number } else { nil }
    }

    static let keyID = "ABC123DEFG"

    /// An app with the test key as its App Store Server API key, and `arguments`.
    static func tenant(_ service: LiveService, _ arguments: [String] = []) throws -> LiveService.Tenant {
        let keyFile = service.cli.directory.appendingPathComponent("offer-key-\(UUID().uuidString).p8")
        try AppStoreServerAPITests.appKey.pemRepresentation.write(to: keyFile, atomically: true, encoding: .utf8)
        return try service.tenant(
            appArguments: [
                "--apple-issuer-id", AppStoreServerAPITests.issuerID, "--apple-key-id", keyID,
                "--apple-private-key-file", keyFile.path,
            ] + arguments)
    }

    static func sign(_ service: LiveService, _ tenant: LiveService.Tenant, _ fields: [(String, String)]) async throws
        -> LiveService.Answer
    {
        try await service.post(
            "/api/offers/signature", form: [("apikey", tenant.apiKey), ("token", tenant.token)] + fields)
    }

    /// A JWS's header and claims, its signature checked with the app key's public half.
    static func opened(_ jws: String) throws -> (header: JSONObject, claims: JSONObject) {
        let parts = jws.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        try #require(parts.count == 3)
        let signature = try P256.Signing.ECDSASignature(rawRepresentation: try #require(Base64URL.decode(parts[2])))
        #expect(
            AppStoreServerAPITests.appKey.publicKey.isValidSignature(
                signature, for: Data((parts[0] + "." + parts[1]).utf8)))
        let header = try JSONParser.parse(try #require(Base64URL.decode(parts[0])))
        let claims = try JSONParser.parse(try #require(Base64URL.decode(parts[1])))
        let headerObject = try #require(header.objectValue)
        return (headerObject, try #require(claims.objectValue))
    }

    @Test("each kind of offer is signed with the app's key for its bundle ID", arguments: StoreKind.available)
    func eachKindIsSigned(kind: StoreKind) async throws {
        try await withLiveService(kind) { service in
            let tenant = try Self.tenant(service)
            let before = Int64(Date().timeIntervalSince1970 * 1_000)

            // The original StoreKit API's promotional offer: DER ECDSA over Apple's joined fields.
            let v1 = try await Self.sign(
                service, tenant,
                [
                    ("kind", "promotional_offer"), ("product_id", "com.example.app.monthly"),
                    ("offer_id", "WINBACK10"), ("application_username", "User-7F"),
                ])
            #expect(v1.httpStatus == 200)
            let answer = try v1.json()
            #expect(answer["status"] == .integer(0) && answer["key_id"] == .string(Self.keyID))
            let nonce = try #require(answer["nonce"]?.stringValue)
            #expect(UUID(uuidString: nonce) != nil && nonce == nonce.lowercased())
            let timestamp = try #require(Self.integer(answer["timestamp"]))
            #expect(timestamp >= before && timestamp <= Int64(Date().timeIntervalSince1970 * 1_000))
            let message = [
                "com.example.app", Self.keyID, "com.example.app.monthly", "WINBACK10", "user-7f", nonce,
                String(timestamp),
            ].joined(separator: "\u{2063}")
            let text = try #require(answer["signature"]?.stringValue)
            let der = try #require(Data(base64Encoded: text))
            let signature = try P256.Signing.ECDSASignature(derRepresentation: der)
            #expect(AppStoreServerAPITests.appKey.publicKey.isValidSignature(signature, for: Data(message.utf8)))
            // A new nonce every time.
            let again = try await Self.sign(
                service, tenant,
                [("kind", "promotional_offer"), ("product_id", "com.example.app.monthly"), ("offer_id", "WINBACK10")])
            #expect(try again.json()["nonce"] != answer["nonce"])

            // StoreKit 2: a JWS for the audience of each kind.
            let v2 = try await Self.sign(
                service, tenant,
                [
                    ("kind", "promotional_offer_v2"), ("product_id", "com.example.app.monthly"),
                    ("offer_id", "WINBACK10"), ("transaction_id", "2000000001"),
                ])
            let (header, claims) = try Self.opened(try #require(try v2.json()["signature"]?.stringValue))
            #expect(header == ["alg": .string("ES256"), "kid": .string(Self.keyID), "typ": .string("JWT")])
            #expect(claims["aud"] == .string("promotional-offer") && claims["bid"] == .string("com.example.app"))
            #expect(claims["iss"] == .string(AppStoreServerAPITests.issuerID))
            #expect(claims["productId"] == .string("com.example.app.monthly"))
            #expect(
                claims["offerIdentifier"] == .string("WINBACK10") && claims["transactionId"] == .string("2000000001"))
            // Issued while the request ran (a loaded machine may take seconds over it).
            let after = Int64(Date().timeIntervalSince1970) + 1
            #expect(Self.integer(claims["iat"]).map { (before / 1_000 - 1...after).contains($0) } == true)
            #expect(claims["nonce"]?.stringValue.flatMap(UUID.init(uuidString:)) != nil)
            let withoutTransaction = try await Self.sign(
                service, tenant,
                [("kind", "promotional_offer_v2"), ("product_id", "com.example.app.monthly"), ("offer_id", "A")])
            let bare = try Self.opened(try #require(try withoutTransaction.json()["signature"]?.stringValue)).claims
            #expect(bare["transactionId"] == nil)

            let intro = try await Self.sign(
                service, tenant,
                [
                    ("kind", "introductory_offer_eligibility"), ("product_id", "com.example.app.monthly"),
                    ("allow_introductory_offer", "false"), ("transaction_id", "2000000001"),
                ])
            let eligibility = try Self.opened(try #require(try intro.json()["signature"]?.stringValue)).claims
            #expect(eligibility["aud"] == .string("introductory-offer-eligibility"))
            #expect(eligibility["allowIntroductoryOffer"] == .bool(false))
            #expect(eligibility["transactionId"] == .string("2000000001"))

            // No secret in the log.
            let pem = AppStoreServerAPITests.appKey.pemRepresentation
            let body = pem.split(separator: "\n").dropFirst().first.map(String.init) ?? pem
            #expect(!service.logText.contains(body))

            // Metered as its own endpoint: counts reach the database within about a second.
            var metered = false
            for _ in 0..<50 where !metered {
                let usage = try service.cli.expectSuccess(["usage", "--account", tenant.email, "--json"]).stdout
                metered = usage.contains("\"offers\"")
                if !metered { try await Task.sleep(for: .milliseconds(200)) }
            }
            #expect(metered)
        }
    }

    @Test("refusals say what is wrong and sign nothing", arguments: StoreKind.available)
    func refusals(kind: StoreKind) async throws {
        try await withLiveService(kind) { service in
            let tenant = try Self.tenant(service, ["--product", "com.example.app.monthly"])
            func refused(_ fields: [(String, String)], _ words: String, to app: LiveService.Tenant? = nil)
                async throws
            {
                let answer = try await Self.sign(service, app ?? tenant, fields)
                #expect(answer.httpStatus == 400, "\(fields)")
                let body = try answer.json()
                #expect(body["signature"] == nil)
                let description = body["description"]?.stringValue ?? ""
                #expect(description.lowercased().contains(words.lowercased()), "\(description)")
            }
            let monthly = ("product_id", "com.example.app.monthly")
            try await refused([monthly, ("offer_id", "A")], "kind is required")
            try await refused([("kind", "winback"), monthly], "kind must be one of")
            try await refused([("kind", "promotional_offer"), ("offer_id", "A")], "product_id is required")
            try await refused([("kind", "promotional_offer"), monthly], "offer_id is required")
            try await refused(
                [("kind", "promotional_offer"), ("product_id", "com.example.other"), ("offer_id", "A")],
                "not in the app's catalog")
            try await refused(
                [("kind", "introductory_offer_eligibility"), monthly, ("transaction_id", "1")],
                "allow_introductory_offer is required")
            try await refused(
                [("kind", "introductory_offer_eligibility"), monthly, ("allow_introductory_offer", "true")],
                "transaction_id is required")
            try await refused(
                [("kind", "promotional_offer"), monthly, ("offer_id", "A"), ("bundle_id", "com.evil.app")],
                "bundle_id is not one of the app's")
            try await refused(
                [("kind", "promotional_offer"), monthly, ("offer_id", "A"), ("nonce", "n-1")], "nonce is not taken")
            let withoutKey = try service.tenant()
            try await refused(
                [("kind", "promotional_offer"), monthly, ("offer_id", "A")], "no In-App Purchase key", to: withoutKey)
            let twoBundles = try Self.tenant(
                service, ["--bundle-id", "com.example.app", "--bundle-id", "com.example.lite"])
            try await refused(
                [("kind", "promotional_offer"), monthly, ("offer_id", "A")], "bundle_id is required", to: twoBundles)
            let chosen = try await Self.sign(
                service, twoBundles,
                [("kind", "promotional_offer_v2"), monthly, ("offer_id", "A"), ("bundle_id", "com.example.lite")])
            let claims = try Self.opened(try #require(try chosen.json()["signature"]?.stringValue)).claims
            #expect(claims["bid"] == .string("com.example.lite"))
            let stranger = try await service.post(
                "/api/offers/signature",
                form: [("apikey", "rv_wrong"), ("token", tenant.token), ("kind", "promotional_offer"), monthly])
            #expect(stranger.httpStatus == 401)
        }
    }
}
