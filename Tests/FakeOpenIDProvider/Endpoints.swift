import Crypto
import Foundation
import Hummingbird
import Logging
// `request.body.collect(upTo:)` and `String(buffer:)` are NIOCore API.
import NIOCore
import Synchronization
import _CryptoExtras

/// The four routes. Every refusal is logged with its reason; `/authorize` also answers it (as text, never by
/// redirecting, so that a test sees it), `/token` answers only the OAuth error code, as real providers do.
extension FakeOpenIDProvider {
    /// How long a code may wait to be redeemed.
    static let codeLifetime: TimeInterval = 60
    /// `expires_in` of the access token and the ID token's lifetime.
    static let tokenLifetime = 3600

    // MARK: Discovery and keys

    func discovery() -> Response {
        let issuer = self.issuer
        return WireFormat.jsonResponse(
            Discovery(
                issuer: issuer, authorizationEndpoint: "\(issuer)/authorize", tokenEndpoint: "\(issuer)/token",
                jwksUri: "\(issuer)/jwks"))
    }

    func jwks() -> Response {
        guard let primitives = try? signingKey.publicKey.getKeyPrimitives() else {
            return WireFormat.textResponse(
                "cannot read the key", status: .internalServerError, contentType: "text/plain; charset=utf-8")
        }
        // JWK integers are unsigned big-endian without leading zeros (RFC 7518 §6.3.1).
        let key = JWK(
            kid: keyID, n: WireFormat.base64URL(primitives.modulus.drop { $0 == 0 }),
            e: WireFormat.base64URL(primitives.publicExponent.drop { $0 == 0 }))
        return WireFormat.jsonResponse(JWKSet(keys: [key]))
    }

    // MARK: Authorization

    func authorize(_ request: Request) -> Response {
        let items = WireFormat.formFields(request.uri.query ?? "")
        var query: [String: String] = [:]
        for item in items {
            // RFC 6749 §3.1: a parameter must not appear twice; which one would win is exactly what a test should not
            // depend on.
            guard query[item.name] == nil else { return refuseAuthorization("\(item.name) is repeated") }
            query[item.name] = item.value
        }
        guard query["response_type"] == "code" else { return refuseAuthorization("response_type must be code") }
        guard query["client_id"] == clientID else { return refuseAuthorization("unknown client_id") }
        guard let redirectURI = query["redirect_uri"], let target = URLComponents(string: redirectURI),
            target.scheme != nil, target.host != nil, target.fragment == nil
        else {
            return refuseAuthorization("redirect_uri must be an absolute URL without a fragment")
        }
        guard let scope = query["scope"], scope.split(separator: " ").contains("openid") else {
            return refuseAuthorization("scope must include openid")
        }
        guard let clientState = query["state"], !clientState.isEmpty else { return refuseAuthorization("no state") }
        guard let nonce = query["nonce"], !nonce.isEmpty else { return refuseAuthorization("no nonce") }
        guard let challenge = query["code_challenge"], !challenge.isEmpty else {
            return refuseAuthorization("no code_challenge")
        }
        guard query["code_challenge_method"] == "S256" else {
            return refuseAuthorization("code_challenge_method must be S256")
        }
        guard let email = query["email"] else { return signInPage(items) }
        guard !email.isEmpty else { return refuseAuthorization("email is empty") }

        // An unchecked checkbox sends nothing, so from the form (marked by `approved`) absence means unverified;
        // a test's direct request without the item means verified, the common case.
        let emailVerified = if let flag = query["email_verified"] { flag == "true" } else { query["approved"] == nil }
        let now = Date()
        let grant = Grant(
            clientID: clientID, redirectURI: redirectURI, nonce: nonce, codeChallenge: challenge, email: email,
            emailVerified: emailVerified, name: query["name"].flatMap { $0.isEmpty ? nil : $0 },
            subject: Self.subject(email: email), created: now)
        let code = WireFormat.randomToken()
        state.withLock { state in
            state.codes = state.codes.filter { now.timeIntervalSince($0.value.created) <= Self.codeLifetime }
            state.codes[code] = grant
        }
        let separator = redirectURI.contains("?") ? "&" : "?"
        let location = "\(redirectURI)\(separator)code=\(code)&state=\(WireFormat.queryEncode(clientState))"
        return Response(status: .seeOther, headers: [.location: location, .cacheControl: "no-store"])
    }

    /// Stable per address (case aside), so that a returning user is recognised by `sub` as with a real provider.
    static func subject(email: String) -> String {
        let digest = SHA256.hash(data: Data(email.lowercased().utf8))
        return String(digest.map { String(format: "%02x", $0) }.joined().prefix(20))
    }

    /// The sign-in form: a GET back to `/authorize` with the request's items, the address and its verified flag.
    private func signInPage(_ items: [(name: String, value: String)]) -> Response {
        let carried = items.filter { !["approved", "email", "email_verified"].contains($0.name) }
        let hidden = carried.map { item in
            #"<input type="hidden" name="\#(WireFormat.html(item.name))" value="\#(WireFormat.html(item.value))">"#
        }
        let page = """
            <!doctype html>
            <html lang="en">
            <head><meta charset="utf-8"><title>Fake OpenID provider: sign in</title></head>
            <body>
            <h1>Fake OpenID provider</h1>
            <form method="get" action="/authorize">
            \(hidden.joined(separator: "\n"))
            <input type="hidden" name="approved" value="1">
            <p><label for="email">Email</label> <input id="email" name="email" type="email"></p>
            <p><input id="email_verified" name="email_verified" type="checkbox" value="true" checked>
            <label for="email_verified">Email verified</label></p>
            <p><button id="approve" type="submit">Approve</button></p>
            </form>
            </body>
            </html>

            """
        return WireFormat.textResponse(page, status: .ok, contentType: "text/html; charset=utf-8")
    }

    private func refuseAuthorization(_ reason: String) -> Response {
        logger.notice("Fake OpenID provider refused an authorization request", metadata: ["reason": "\(reason)"])
        return WireFormat.textResponse(reason + "\n", status: .badRequest, contentType: "text/plain; charset=utf-8")
    }

    // MARK: Token

    func token(_ request: Request) async -> Response {
        state.withLock { $0.tokenRequests += 1 }
        if let type = request.headers[.contentType],
            !type.lowercased().hasPrefix("application/x-www-form-urlencoded")
        {
            return refuseToken("invalid_request", reason: "the body is \(type), not a form")
        }
        guard let body = try? await request.body.collect(upTo: 64 << 10) else {
            return refuseToken("invalid_request", reason: "the body is unreadable or too large")
        }
        var form: [String: String] = [:]
        for field in WireFormat.formFields(String(buffer: body)) {
            guard form[field.name] == nil else {
                return refuseToken("invalid_request", reason: "\(field.name) is repeated")
            }
            form[field.name] = field.value
        }
        guard authenticates(request, form: form) else {
            return refuseToken(
                "invalid_client", reason: "wrong client credentials", status: .unauthorized,
                headers: [.wwwAuthenticate: #"Basic realm="fake-openid""#])
        }
        guard form["grant_type"] == "authorization_code" else {
            return refuseToken("unsupported_grant_type", reason: "grant_type is \(form["grant_type"] ?? "missing")")
        }
        // Taken out on first presentation, whatever happens next: a code is good for one attempt only.
        guard let code = form["code"], let grant = state.withLock({ $0.codes.removeValue(forKey: code) }) else {
            return refuseToken("invalid_grant", reason: "unknown or already used code")
        }
        guard Date().timeIntervalSince(grant.created) <= Self.codeLifetime else {
            return refuseToken("invalid_grant", reason: "the code is older than \(Int(Self.codeLifetime)) s")
        }
        guard grant.clientID == clientID, form["redirect_uri"] == grant.redirectURI else {
            return refuseToken("invalid_grant", reason: "redirect_uri differs from the authorization request's")
        }
        guard let verifier = form["code_verifier"],
            WireFormat.base64URL(SHA256.hash(data: Data(verifier.utf8))) == grant.codeChallenge
        else {
            return refuseToken("invalid_grant", reason: "code_verifier does not match code_challenge")
        }
        let idToken: String
        do {
            idToken = try self.idToken(for: grant)
        } catch {
            logger.error("Fake OpenID provider could not sign", metadata: ["error": "\(error)"])
            return refuseToken("server_error", reason: "signing failed", status: .internalServerError)
        }
        let answer = TokenAnswer(
            accessToken: WireFormat.randomToken(), tokenType: "Bearer", expiresIn: Self.tokenLifetime, idToken: idToken,
            scope: "openid email profile")
        return WireFormat.jsonResponse(answer, extraHeaders: [.cacheControl: "no-store"])
    }

    /// `client_secret_basic` or `client_secret_post`, not both (RFC 6749 §2.3: one method per request).
    private func authenticates(_ request: Request, form: [String: String]) -> Bool {
        guard let authorization = request.headers[.authorization] else {
            return form["client_id"] == clientID && form["client_secret"] == clientSecret
        }
        guard authorization.lowercased().hasPrefix("basic "),
            let decoded = Data(base64Encoded: authorization.dropFirst(6).trimmingCharacters(in: .whitespaces)),
            let pair = String(data: decoded, encoding: .utf8), let colon = pair.firstIndex(of: ":"),
            form["client_secret"] == nil
        else { return false }
        // RFC 6749 §2.3.1: both halves are form-encoded before being joined.
        let id = WireFormat.formDecode(pair[..<colon])
        let secret = WireFormat.formDecode(pair[pair.index(after: colon)...])
        if let formID = form["client_id"], formID != id { return false }
        return id == clientID && secret == clientSecret
    }

    private func refuseToken(
        _ error: String, reason: String, status: HTTPResponse.Status = .badRequest, headers: HTTPFields = [:]
    ) -> Response {
        logger.notice(
            "Fake OpenID provider refused a token request", metadata: ["error": "\(error)", "reason": "\(reason)"])
        var headers = headers
        headers[.cacheControl] = "no-store"
        return WireFormat.jsonResponse(TokenError(error: error), status: status, extraHeaders: headers)
    }

    // MARK: ID token

    /// An RS256 JWT for `grant`, defective as the current fault says.
    func idToken(for grant: Grant, now: Date = Date()) throws -> String {
        let (issuer, fault) = state.withLock { ($0.issuer, $0.fault) }
        // An expired token is one issued two hours ago with the usual lifetime.
        let issuedAt = Int(now.timeIntervalSince1970) - (fault == .expired ? 7200 : 0)
        let authTime = min(Int(grant.created.timeIntervalSince1970), issuedAt)
        let claims = IDTokenClaims(
            iss: fault == .wrongIssuer ? "https://wrong-issuer.invalid" : issuer,
            aud: fault == .wrongAudience ? "someone-else" : grant.clientID,
            sub: grant.subject, email: grant.email, emailVerified: grant.emailVerified, name: grant.name,
            nonce: fault == .wrongNonce ? "not-\(grant.nonce)" : grant.nonce,
            iat: issuedAt, exp: issuedAt + Self.tokenLifetime, authTime: authTime)
        let header = JWTHeader(alg: "RS256", kid: keyID, typ: "JWT")
        let signingInput =
            WireFormat.base64URL(try WireFormat.json(header)) + "." + WireFormat.base64URL(try WireFormat.json(claims))
        // Same `kid`, other key: the relying party finds the key it expects and the signature must fail against it.
        let key = fault == .badSignature ? impostorKey : signingKey
        let signature = try key.signature(
            for: SHA256.hash(data: Data(signingInput.utf8)), padding: .insecurePKCS1v1_5)
        return signingInput + "." + WireFormat.base64URL(signature.rawRepresentation)
    }
}

// MARK: Wire shapes (snake_case on the wire, through `WireFormat.json`)

struct Discovery: Encodable {
    let issuer: String
    let authorizationEndpoint: String
    let tokenEndpoint: String
    let jwksUri: String
    let responseTypesSupported = ["code"]
    let subjectTypesSupported = ["public"]
    let idTokenSigningAlgValuesSupported = ["RS256"]
    let codeChallengeMethodsSupported = ["S256"]
    let scopesSupported = ["openid", "email", "profile"]
    let tokenEndpointAuthMethodsSupported = ["client_secret_post", "client_secret_basic"]
    let claimsSupported = ["iss", "aud", "sub", "email", "email_verified", "name", "nonce", "iat", "exp", "auth_time"]
}

struct JWK: Encodable {
    let kty = "RSA"
    let use = "sig"
    let alg = "RS256"
    let kid: String
    let n: String
    let e: String
}

struct JWKSet: Encodable {
    let keys: [JWK]
}

struct TokenAnswer: Encodable {
    let accessToken: String
    let tokenType: String
    let expiresIn: Int
    let idToken: String
    let scope: String
}

struct TokenError: Encodable {
    let error: String
}

struct JWTHeader: Encodable {
    let alg: String
    let kid: String
    let typ: String
}

struct IDTokenClaims: Encodable {
    let iss: String
    let aud: String
    let sub: String
    let email: String
    let emailVerified: Bool
    /// Left out when the sign-in gave none.
    let name: String?
    let nonce: String
    let iat: Int
    let exp: Int
    let authTime: Int
}
