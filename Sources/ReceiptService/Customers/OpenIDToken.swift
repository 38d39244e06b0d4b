import Crypto
import Foundation
import ReceiptCore
import _CryptoExtras

/// An OpenID Connect ID token, checked: its signature against the issuer's JWKS, then `iss`, `aud`, `exp`, `iat` and
/// `nonce`. What the sign-in learns from it is ``VerifiedIdentity``.
/// [OpenID Connect Core, 3.1.3.7](https://openid.net/specs/openid-connect-core-1_0.html#IDTokenValidation)
public enum OpenIDToken {
    /// The longest ID token read (Google's are about 1 KB).
    public static let maximumLength = 16 * 1_024
    /// How far the issuer's clock may be ahead of ours.
    public static let clockSkew: TimeInterval = 120

    /// Checks `token` and returns who signed in.
    ///
    /// - Parameters:
    ///   - keys: the issuer's signing keys (its JWKS).
    ///   - issuer: the issuer the discovery document names; `iss` must equal it.
    ///   - clientID: our client id; `aud` must hold it (and `azp`, when there are several audiences, must be it).
    ///   - nonce: the nonce this sign-in sent; the token must carry it.
    ///   - now: the time to judge `exp` and `iat` at.
    public static func verify(
        _ token: String, keys: JSONWebKeySet, issuer: String, clientID: String, nonce: String, now: Date
    ) throws -> VerifiedIdentity {
        guard token.utf8.count <= maximumLength else { throw failure("the ID token is too long") }
        let payloadBytes: [UInt8]
        switch keys.verifiedPayload(of: token) {
        case .success(let payload): payloadBytes = payload
        case .failure(let refusal): throw failure("the ID token \(refusal.reason)")
        }
        let claims: Claims
        do {
            claims = try JSONDecoder().decode(Claims.self, from: Data(payloadBytes))
        } catch {
            throw failure("the ID token's claims are unreadable")
        }
        guard claims.iss == issuer else { throw failure("the ID token's issuer is not \(issuer)") }
        guard claims.aud.contains(clientID) else { throw failure("the ID token is not for this client (aud)") }
        // `azp`, when present (and always with several audiences), must be us.
        if claims.aud.count > 1 || claims.azp != nil, claims.azp != clientID {
            throw failure("the ID token's azp is not this client")
        }
        guard Date(timeIntervalSince1970: claims.exp) > now.addingTimeInterval(-clockSkew) else {
            throw failure("the ID token has expired")
        }
        guard Date(timeIntervalSince1970: claims.iat) < now.addingTimeInterval(clockSkew) else {
            throw failure("the ID token was issued in the future")
        }
        guard let tokenNonce = claims.nonce,
            ConstantTime.equals(Array(tokenNonce.utf8), Array(nonce.utf8))
        else { throw failure("the ID token's nonce is not this sign-in's") }
        guard !claims.sub.isEmpty, claims.sub.utf8.count <= 255 else { throw failure("the ID token has no subject") }
        return VerifiedIdentity(
            issuer: claims.iss, subject: claims.sub, email: claims.email.map(asciiLowercased),
            emailVerified: claims.emailVerified ?? false, name: claims.name)
    }

    private static func failure(_ reason: String) -> ServiceError { ServiceError(.signInFailed, reason) }

    /// A-Z as a-z, nothing else: Unicode case folding would make look-alikes (the Kelvin sign and `k`) one email.
    static func asciiLowercased(_ text: String) -> String {
        String(
            decoding: text.utf8.map { (0x41...0x5A).contains($0) ? $0 + 0x20 : $0 }, as: UTF8.self)
    }

    private struct Claims: Decodable {
        var iss: String
        var sub: String
        var aud: [String]
        var azp: String?
        var exp: Double
        var iat: Double
        var nonce: String?
        var email: String?
        var emailVerified: Bool?
        var name: String?

        enum CodingKeys: String, CodingKey {
            case iss, sub, aud, azp, exp, iat, nonce, email, name
            case emailVerified = "email_verified"
        }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            iss = try container.decode(String.self, forKey: .iss)
            sub = try container.decode(String.self, forKey: .sub)
            // `aud` is one string or an array of them.
            if let one = try? container.decode(String.self, forKey: .aud) {
                aud = [one]
            } else {
                aud = try container.decode([String].self, forKey: .aud)
            }
            azp = try container.decodeIfPresent(String.self, forKey: .azp)
            exp = try container.decode(Double.self, forKey: .exp)
            iat = try container.decode(Double.self, forKey: .iat)
            nonce = try container.decodeIfPresent(String.self, forKey: .nonce)
            email = try container.decodeIfPresent(String.self, forKey: .email)
            // Some issuers write `"email_verified": "true"`.
            if let flag = try? container.decodeIfPresent(Bool.self, forKey: .emailVerified) {
                emailVerified = flag
            } else {
                emailVerified = (try? container.decodeIfPresent(String.self, forKey: .emailVerified)) == "true"
            }
            name = try container.decodeIfPresent(String.self, forKey: .name)
        }
    }
}

/// Who an ID token says signed in.
public struct VerifiedIdentity: Sendable, Equatable {
    /// The issuer.
    public var issuer: String
    /// The issuer's stable id of the person.
    public var subject: String
    /// The email, lowercased, if the token has one.
    public var email: String?
    /// Whether the issuer verified the email.
    public var emailVerified: Bool
    /// The person's name, if given.
    public var name: String?

    /// Creates an identity.
    public init(issuer: String, subject: String, email: String?, emailVerified: Bool, name: String?) {
        self.issuer = issuer
        self.subject = subject
        self.email = email
        self.emailVerified = emailVerified
        self.name = name
    }
}

/// An issuer's signing keys: its JWKS (`jwks_uri`), RSA (RS256) and P-256 (ES256) keys; others are skipped.
public struct JSONWebKeySet: Sendable {
    /// A usable key.
    public struct Key: Sendable {
        enum Material: Sendable {
            case rsa(_RSA.Signing.PublicKey)
            case p256(P256.Signing.PublicKey)
        }

        /// The key's id, if it has one.
        public let id: String?
        let material: Material

        var algorithm: String {
            switch material {
            case .rsa: "RS256"
            case .p256: "ES256"
            }
        }

        func isValidSignature(_ signature: [UInt8], for data: Data) -> Bool {
            switch material {
            case .rsa(let key):
                return key.isValidSignature(
                    _RSA.Signing.RSASignature(rawRepresentation: signature), for: data,
                    padding: .insecurePKCS1v1_5)
            case .p256(let key):
                guard let ecdsa = try? P256.Signing.ECDSASignature(rawRepresentation: signature) else { return false }
                return key.isValidSignature(ecdsa, for: data)
            }
        }
    }

    /// The usable keys.
    public let keys: [Key]

    /// The largest JWKS document read.
    public static let maximumLength = 64 * 1_024

    /// Reads a JWKS document; keys of other types or algorithms, or unreadable ones, are skipped.
    public init(json: [UInt8]) throws {
        struct Document: Decodable {
            struct Entry: Decodable {
                var kty: String
                var kid: String?
                var alg: String?
                var use: String?
                var n: String?
                var e: String?
                var crv: String?
                var x: String?
                var y: String?
            }
            var keys: [Entry]
        }
        guard json.count <= Self.maximumLength,
            let document = try? JSONDecoder().decode(Document.self, from: Data(json))
        else { throw ServiceError(.signInFailed, "the issuer's JWKS is unreadable") }
        keys = document.keys.compactMap { entry in
            guard entry.use == nil || entry.use == "sig" else { return nil }
            switch entry.kty {
            case "RSA":
                guard entry.alg == nil || entry.alg == "RS256", let n = entry.n.flatMap(Base64URL.decode),
                    let e = entry.e.flatMap(Base64URL.decode),
                    let key = try? _RSA.Signing.PublicKey(n: n, e: e), key.keySizeInBits >= 2048
                else { return nil }
                return Key(id: entry.kid, material: .rsa(key))
            case "EC":
                guard entry.crv == "P-256", entry.alg == nil || entry.alg == "ES256",
                    let x = entry.x.flatMap(Base64URL.decode), let y = entry.y.flatMap(Base64URL.decode),
                    x.count == 32, y.count == 32, let key = try? P256.Signing.PublicKey(rawRepresentation: x + y)
                else { return nil }
                return Key(id: entry.kid, material: .p256(key))
            default:
                return nil
            }
        }
    }

    /// Why a token's signature is not taken.
    public struct Refusal: Error, Sendable {
        /// What is wrong, after the token's name (`is not a compact JWS`).
        public let reason: String
    }

    /// The payload of a compact JWS (RS256 or ES256) signed by one of the keys, or why it is not taken.
    public func verifiedPayload(of token: String) -> Result<[UInt8], Refusal> {
        struct Header: Decodable {
            var alg: String
            var kid: String?
        }
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let headerBytes = Base64URL.decode(parts[0]),
            let payloadBytes = Base64URL.decode(parts[1]), let signature = Base64URL.decode(parts[2])
        else { return .failure(Refusal(reason: "is not a compact JWS")) }
        guard let header = try? JSONDecoder().decode(Header.self, from: Data(headerBytes)) else {
            return .failure(Refusal(reason: "has an unreadable header"))
        }
        guard let key = key(id: header.kid, algorithm: header.alg) else {
            return .failure(
                Refusal(reason: "names no key of the issuer's JWKS (kid \(header.kid ?? "none"), \(header.alg))"))
        }
        let signed = Data(token.utf8.prefix(parts[0].utf8.count + 1 + parts[1].utf8.count))
        guard key.isValidSignature(signature, for: signed) else {
            return .failure(Refusal(reason: "has a signature that does not verify"))
        }
        return .success(payloadBytes)
    }

    /// The key a token's header names: by `kid` when it has one, else the only key of its algorithm.
    func key(id: String?, algorithm: String) -> Key? {
        let candidates = keys.filter { $0.algorithm == algorithm }
        guard let id else { return candidates.count == 1 ? candidates[0] : nil }
        return candidates.first { $0.id == id }
    }

    /// The `kid` a compact JWS's header names, if any (the key to look for before its signature is checked).
    public static func keyID(of token: String) -> String? {
        guard let header = token.split(separator: ".", maxSplits: 1).first, header.utf8.count <= 4_096,
            let bytes = Base64URL.decode(header),
            case .object(let object)? = try? JSONParser.parse(bytes, maximumDepth: 2)
        else { return nil }
        return object["kid"]?.stringValue
    }

    /// Whether a key with this id is in the set (an unknown one makes the client fetch the JWKS again).
    public func contains(keyID: String?) -> Bool { keyID == nil || keys.contains { $0.id == keyID } }
}
