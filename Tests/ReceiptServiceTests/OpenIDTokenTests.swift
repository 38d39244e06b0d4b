import Crypto
import Foundation
import ReceiptCore
import ReceiptService
import Testing
import _CryptoExtras

/// The ID token's checks, against keys made here: the signature by the JWKS key the header names (RS256, ES256), and
/// `iss`, `aud`, `azp`, `exp`, `iat`, `nonce`; each claim wrong in turn is refused.
@Suite struct OpenIDTokenTests {
    static let rsa = try! _RSA.Signing.PrivateKey(keySize: .bits2048)
    static let ec = P256.Signing.PrivateKey()
    static let now = Date(timeIntervalSince1970: 1_790_000_000)
    static let issuer = "https://issuer.example/"

    static var jwks: JSONWebKeySet {
        let primitives = try! rsa.publicKey.getKeyPrimitives()
        let raw = ec.publicKey.rawRepresentation
        let document = """
            {"keys":[
            {"kty":"RSA","kid":"r1","alg":"RS256","use":"sig",
             "n":"\(Base64URL.encode(primitives.modulus.drop { $0 == 0 }))","e":"\(Base64URL.encode(primitives.publicExponent))"},
            {"kty":"EC","kid":"e1","crv":"P-256",
             "x":"\(Base64URL.encode(raw.prefix(32)))","y":"\(Base64URL.encode(raw.suffix(32)))"},
            {"kty":"oct","kid":"h1","k":"c2VjcmV0"}
            ]}
            """
        return try! JSONWebKeySet(json: Array(document.utf8))
    }

    static func claims(_ changes: [String: Any] = [:]) -> [String: Any] {
        var claims: [String: Any] = [
            "iss": issuer, "aud": "client", "sub": "s-1", "email": "Ann@Example.com", "email_verified": true,
            "nonce": "n-1", "iat": now.timeIntervalSince1970 - 10, "exp": now.timeIntervalSince1970 + 3_600,
        ]
        for (key, value) in changes {
            if value is NSNull { claims[key] = nil } else { claims[key] = value }
        }
        return claims
    }

    static func token(alg: String = "RS256", kid: String? = "r1", claims: [String: Any] = claims()) -> String {
        var header: [String: Any] = ["alg": alg, "typ": "JWT"]
        if let kid { header["kid"] = kid }
        let input =
            Base64URL.encode(try! JSONSerialization.data(withJSONObject: header)) + "."
            + Base64URL.encode(try! JSONSerialization.data(withJSONObject: claims))
        let signature: [UInt8]
        switch alg {
        case "RS256":
            signature = Array(
                try! rsa.signature(for: Data(input.utf8), padding: .insecurePKCS1v1_5).rawRepresentation)
        case "ES256": signature = Array(try! ec.signature(for: Data(input.utf8)).rawRepresentation)
        case "HS256":
            signature = Array(
                HMAC<SHA256>.authenticationCode(for: Data(input.utf8), using: SymmetricKey(data: Array("secret".utf8))))
        default: signature = []
        }
        return input + "." + Base64URL.encode(signature)
    }

    static func verify(_ token: String) throws -> VerifiedIdentity {
        try OpenIDToken.verify(token, keys: jwks, issuer: issuer, clientID: "client", nonce: "n-1", now: now)
    }

    @Test func aGoodTokenNamesWhoSignedIn() throws {
        for token in [Self.token(), Self.token(alg: "ES256", kid: "e1")] {
            let identity = try Self.verify(token)
            #expect(identity.subject == "s-1" && identity.issuer == Self.issuer && identity.emailVerified)
            #expect(identity.email == "ann@example.com")
        }
        #expect(
            try Self.verify(Self.token(claims: Self.claims(["aud": ["other", "client"], "azp": "client"]))).subject
                == "s-1")
    }

    @Test(arguments: [
        ("alg none", token(alg: "none", kid: "r1")),
        ("HS256 with a symmetric key", token(alg: "HS256", kid: "h1")),
        ("RS256 under the EC key's id", token(alg: "RS256", kid: "e1")),
        ("an unknown kid", token(kid: "r2")),
        ("another issuer", token(claims: claims(["iss": "https://issuer.example"]))),
        ("another audience", token(claims: claims(["aud": "someone-else"]))),
        ("azp of another client", token(claims: claims(["azp": "someone-else"]))),
        ("several audiences without azp", token(claims: claims(["aud": ["client", "other"]]))),
        ("expired", token(claims: claims(["exp": now.timeIntervalSince1970 - 300]))),
        ("issued in the future", token(claims: claims(["iat": now.timeIntervalSince1970 + 600]))),
        ("another nonce", token(claims: claims(["nonce": "n-2"]))),
        ("no nonce", token(claims: claims(["nonce": NSNull()]))),
        ("a tampered payload", token().replacingOccurrences(of: ".", with: ".e", options: [], range: nil)),
    ])
    func aTokenThatDoesNotCheckOutIsRefused(_ what: String, _ token: String) {
        #expect(throws: ServiceError(.signInFailed), "\(what)") { try Self.verify(token) }
    }

    @Test func emailsAreLowercasedInASCIIOnly() throws {
        // The Kelvin sign (U+212A) is not the letter k: folding it would make two emails one.
        let identity = try Self.verify(Self.token(claims: Self.claims(["email": "\u{212A}im@Example.com"])))
        #expect(identity.email == "\u{212A}im@example.com")
    }

    @Test func aJWKSWithoutUsableKeysHasNone() throws {
        let small = try _RSA.Signing.PrivateKey(unsafeKeySize: .init(bitCount: 1024)).publicKey.getKeyPrimitives()
        let document = """
            {"keys":[{"kty":"RSA","kid":"weak","n":"\(Base64URL.encode(small.modulus))","e":"AQAB"},
            {"kty":"EC","crv":"P-384","x":"AA","y":"AA"}]}
            """
        #expect(try JSONWebKeySet(json: Array(document.utf8)).keys.isEmpty)
        #expect(throws: ServiceError(.signInFailed)) { try JSONWebKeySet(json: Array("not json".utf8)) }
    }
}
