import Crypto
import Foundation
import Hummingbird
import NIOCore
import ReceiptCore
import ReceiptService
import Synchronization
import _CryptoExtras

/// A stand-in for Google on loopback: the OAuth 2.0 token endpoint, checking each JWT bearer grant as Google does (a
/// form POST with the grant type, an RS256 assertion signed by the service account's key and naming its key id, the
/// account as issuer, the Play Developer API's scope, Google's token URI as audience, and a lifetime of at most an
/// hour issued now), answering with scripted replies or a fresh access token; and the Google Play Developer API's
/// purchase resources (androidpublisher v3, in Google's documented shapes), answered only for a token it granted to
/// an account granted the package, as Play Console does.
public final class FakeGoogle: Sendable {
    public init() {}

    /// One scripted reply of the token endpoint.
    public enum Reply: Sendable {
        /// 200 with a new token living this many seconds.
        case token(expiresIn: Int)
        /// This status with Google's error body (`{"error": …}`).
        case error(Int, String)
    }

    /// A service account Google knows: its identity and key.
    public struct Account: Sendable {
        public let email: String
        public let keyID: String
        public let key: _RSA.Signing.PrivateKey

        /// The JSON key file Google issues for it.
        public var keyFile: String {
            var object = JSONObject()
            object.append("type", .string("service_account"))
            object.append("project_id", .string("receiptverify-test"))
            object.append("private_key_id", .string(keyID))
            object.append("private_key", .string(key.pkcs8PEMRepresentation))
            object.append("client_email", .string(email))
            object.append("client_id", .string("100000000000000000001"))
            object.append("auth_uri", .string("https://accounts.google.com/o/oauth2/auth"))
            object.append("token_uri", .string("https://oauth2.googleapis.com/token"))
            return JSONValue.object(object).encodedString
        }

        /// The opened credentials the server holds for it.
        public var credentials: GoogleServiceAccount {
            GoogleServiceAccount(
                clientEmail: email, keyID: keyID, tokenURI: "https://oauth2.googleapis.com/token",
                privateKeyPEM: key.pkcs8PEMRepresentation)
        }

        /// A new account with a fresh 2048-bit key.
        public static func make(_ name: String = "verifier") throws -> Account {
            Account(
                email: "\(name)@receiptverify-test.iam.gserviceaccount.com",
                keyID: Hex.encode(SecureRandom.bytes(20)), key: try _RSA.Signing.PrivateKey(keySize: .bits2048))
        }
    }

    private struct State {
        var accounts: [String: Account] = [:]
        var replies: [Reply] = []
        var grants = 0
        var refusedAssertions: [String] = []
        var issued: [String: String] = [:]
        /// Packages each account may read (Play Console's users and permissions).
        var grantedPackages: [String: Set<String>] = [:]
        /// Resources by path (`PACKAGE/products/PRODUCT/TOKEN`, `PACKAGE/subscriptionsv2/TOKEN`).
        var resources: [String: String] = [:]
        /// Statuses answered to the next resource requests, in order, before any resource.
        var failures: [Int] = []
        var resourceRequests: [String] = []
        /// Statuses answered to the next acknowledgements, in order.
        var acknowledgementFailures: [Int] = []
        /// The purchases acknowledged (`PACKAGE/products/PRODUCT/TOKEN`, `PACKAGE/subscriptions/PRODUCT/TOKEN`).
        var acknowledged: [String] = []
        /// Each package's voided purchases, page by page (`VoidedPurchase` JSON objects).
        var voided: [String: [[String]]] = [:]
        /// The voided-purchase list requests, as their query strings.
        var voidedQueries: [String] = []
        /// Requests of the JWKS.
        var keysFetched = 0
        /// The purchases consumed (`PACKAGE/products/PRODUCT/TOKEN`).
        var consumed: [String] = []
    }

    /// Google's OIDC signing key, whose tokens authenticate Pub/Sub's pushes; published at `/oauth2/v3/certs`.
    public let signingKey = try! _RSA.Signing.PrivateKey(keySize: .bits2048)
    public let signingKeyID = Hex.encode(SecureRandom.bytes(20))
    /// A key Google does not publish (a forger's).
    public let strangerKey = try! _RSA.Signing.PrivateKey(keySize: .bits2048)

    private let state = Mutex(State())

    /// Lets `account` be granted tokens.
    public func add(_ account: Account) { state.withLock { $0.accounts[account.email] = account } }
    /// Queues token replies; with none queued a valid grant gets a token of an hour.
    public func script(_ replies: Reply...) { state.withLock { $0.replies.append(contentsOf: replies) } }
    /// Grant requests received.
    public var grants: Int { state.withLock { $0.grants } }
    /// Why each refused assertion was refused.
    public var refusedAssertions: [String] { state.withLock { $0.refusedAssertions } }
    /// Whether `token` is one this fake granted.
    public func issued(_ token: String) -> Bool { state.withLock { $0.issued[token] != nil } }
    /// Lets `account` read `package`'s purchases.
    public func grant(_ account: Account, package: String) {
        state.withLock { $0.grantedPackages[account.email, default: []].insert(package) }
    }
    /// Sets the `ProductPurchase` of `product` bought with `token` in `package`.
    public func setProduct(_ package: String, _ product: String, token: String, _ json: String) {
        state.withLock { $0.resources["\(package)/products/\(product)/\(token)"] = json }
    }
    /// Sets the `SubscriptionPurchaseV2` bought with `token` in `package`.
    public func setSubscription(_ package: String, token: String, _ json: String) {
        state.withLock { $0.resources["\(package)/subscriptionsv2/\(token)"] = json }
    }
    /// Answers the next resource requests with these statuses (Google's error body), in order.
    public func fail(_ statuses: Int...) { state.withLock { $0.failures.append(contentsOf: statuses) } }
    /// Answers the next acknowledgements with these statuses, in order.
    public func failAcknowledgements(_ statuses: Int...) {
        state.withLock { $0.acknowledgementFailures.append(contentsOf: statuses) }
    }
    /// The purchases acknowledged, in order (`PACKAGE/products/PRODUCT/TOKEN` or `PACKAGE/subscriptions/…`).
    public var acknowledged: [String] { state.withLock { $0.acknowledged } }
    /// Sets `package`'s voided purchases, page by page.
    public func setVoided(_ package: String, pages: [[String]]) { state.withLock { $0.voided[package] = pages } }
    /// Adds one voided purchase (a `VoidedPurchase` JSON object) to `package`'s list, on its last page.
    public func addVoided(_ package: String, _ voided: String) {
        state.withLock { state in
            var pages = state.voided[package] ?? [[]]
            pages[pages.count - 1].append(voided)
            state.voided[package] = pages
        }
    }
    /// The voided-purchase list requests' query strings, in order.
    public var voidedQueries: [String] { state.withLock { $0.voidedQueries } }
    /// The resource paths asked for, in order.
    public var resourceRequests: [String] { state.withLock { $0.resourceRequests } }

    /// The one-time purchases consumed, in order (`PACKAGE/products/PRODUCT/TOKEN`).
    public var consumed: [String] { state.withLock { $0.consumed } }
    /// Requests of the JWKS so far.
    public var keysFetched: Int { state.withLock { $0.keysFetched } }

    /// The OIDC token Pub/Sub sends with a push of a subscription authenticating as `email` with `audience`, signed by
    /// Google's key (or `key`), with `claims` changed (a nil value removes the claim).
    public func pushToken(
        audience: String, email: String, key: _RSA.Signing.PrivateKey? = nil, keyID: String? = nil,
        claims changes: [String: JSONValue?] = [:]
    ) -> String {
        let now = Int64(Date().timeIntervalSince1970)
        var claims: [String: JSONValue] = [
            "aud": .string(audience), "azp": .string("113774264463038321964"), "email": .string(email),
            "email_verified": .bool(true), "exp": .integer(now + 3_600), "iat": .integer(now),
            "iss": .string("https://accounts.google.com"), "sub": .string("113774264463038321964"),
        ]
        for (name, value) in changes { claims[name] = value }
        var payload = JSONObject()
        for name in claims.keys.sorted() { payload.append(name, claims[name]!) }
        let header = #"{"alg":"RS256","kid":"\#(keyID ?? signingKeyID)","typ":"JWT"}"#
        let signed = Base64URL.encode(Array(header.utf8)) + "." + Base64URL.encode(JSONValue.object(payload).encoded)
        let signature = try! (key ?? signingKey).signature(for: Data(signed.utf8), padding: .insecurePKCS1v1_5)
        return signed + "." + Base64URL.encode(Array(signature.rawRepresentation))
    }

    /// A Pub/Sub push body carrying `notification` (a `DeveloperNotification`'s JSON) as message `messageID`.
    public static func pushBody(messageID: String, notification: String) -> String {
        let data = Data(notification.utf8).base64EncodedString()
        return """
            {"message":{"attributes":{},"data":"\(data)","messageId":"\(messageID)","message_id":"\(messageID)",\
            "publishTime":"2026-11-26T10:00:00.123Z","publish_time":"2026-11-26T10:00:00.123Z"},\
            "subscription":"projects/receiptverify-test/subscriptions/play-rtdn"}
            """
    }

    /// The routes: `POST /token`, the purchase resources under `/androidpublisher/v3`, and the JWKS.
    public func router() -> Router<BasicRequestContext> {
        let router = Router()
        router.post("/token") { request, _ in await self.grant(request) }
        router.get("/oauth2/v3/certs") { _, _ in
            self.state.withLock { $0.keysFetched += 1 }
            let primitives = try self.signingKey.publicKey.getKeyPrimitives()
            let n = Base64URL.encode(primitives.modulus.drop { $0 == 0 })
            let e = Base64URL.encode(primitives.publicExponent)
            return self.json(
                #"{"keys":[{"kty":"RSA","alg":"RS256","use":"sig","kid":"\#(self.signingKeyID)","n":"\#(n)","e":"\#(e)"}]}"#,
                status: .ok)
        }
        let applications = "/androidpublisher/v3/applications/:package/purchases"
        router.get("\(applications)/products/:product/tokens/:token") { request, context in
            let package = context.parameters.get("package") ?? ""
            return self.resource(
                request, package: package,
                key:
                    "\(package)/products/\(context.parameters.get("product") ?? "")/\(context.parameters.get("token") ?? "")"
            )
        }
        for kind in ["products", "subscriptions"] {
            router.post("\(applications)/\(kind)/:product/tokens/:token") { request, context in
                let action = context.parameters.get("token") ?? ""
                let consumes = kind == "products" && action.hasSuffix(":consume")
                guard action.hasSuffix(":acknowledge") || consumes else {
                    return Self.googleError(404, "No such method.")
                }
                return self.acknowledge(
                    request, package: context.parameters.get("package") ?? "", kind: kind,
                    product: context.parameters.get("product") ?? "",
                    token: String(action.dropLast(consumes ? 8 : 12)), consumes: consumes)
            }
        }
        router.get("\(applications)/voidedpurchases") { request, context in
            self.voided(request, package: context.parameters.get("package") ?? "")
        }
        router.get("\(applications)/subscriptionsv2/tokens/:token") { request, context in
            let package = context.parameters.get("package") ?? ""
            return self.resource(
                request, package: package, key: "\(package)/subscriptionsv2/\(context.parameters.get("token") ?? "")")
        }
        return router
    }

    /// A resource, as Google answers: 401 without a token it granted, 403 for an account without access to the
    /// package, 404 for a purchase it does not know.
    private func resource(_ request: Request, package: String, key: String) -> Response {
        let token = Self.bearer(request)
        return state.withLock { state in
            state.resourceRequests.append(key)
            guard let email = state.issued[token] else {
                return Self.googleError(401, "Request had invalid authentication credentials.")
            }
            if !state.failures.isEmpty {
                return Self.googleError(state.failures.removeFirst(), "scripted failure")
            }
            guard state.grantedPackages[email]?.contains(package) == true else {
                return Self.googleError(
                    403, "The current user has insufficient permissions to perform the requested operation.")
            }
            guard let json = state.resources[key] else {
                return Self.googleError(404, "The purchase token was not found.")
            }
            return Response(
                status: .ok, headers: [.contentType: "application/json"],
                body: .init(byteBuffer: ByteBuffer(string: json)))
        }
    }

    /// An acknowledgement or a consumption, as Google answers it: 204 for a purchase it knows (already acknowledged
    /// included), 404 else.
    private func acknowledge(
        _ request: Request, package: String, kind: String, product: String, token: String, consumes: Bool
    ) -> Response {
        let bearer = Self.bearer(request)
        return state.withLock { state in
            guard let email = state.issued[bearer] else {
                return Self.googleError(401, "Request had invalid authentication credentials.")
            }
            if !state.acknowledgementFailures.isEmpty {
                return Self.googleError(state.acknowledgementFailures.removeFirst(), "scripted failure")
            }
            guard state.grantedPackages[email]?.contains(package) == true else {
                return Self.googleError(403, "The current user has insufficient permissions.")
            }
            let resource =
                kind == "products" ? "\(package)/products/\(product)/\(token)" : "\(package)/subscriptionsv2/\(token)"
            guard state.resources[resource] != nil else {
                return Self.googleError(404, "The purchase token was not found.")
            }
            if consumes {
                state.consumed.append("\(package)/\(kind)/\(product)/\(token)")
            } else {
                state.acknowledged.append("\(package)/\(kind)/\(product)/\(token)")
            }
            return Response(status: .noContent)
        }
    }

    /// A page of voided purchases (`token` names the page: `page-N`), as `voidedpurchases.list` answers.
    private func voided(_ request: Request, package: String) -> Response {
        let bearer = Self.bearer(request)
        let query = request.uri.query ?? ""
        return state.withLock { state in
            state.voidedQueries.append(query)
            guard let email = state.issued[bearer] else { return Self.googleError(401, "Invalid credentials.") }
            guard state.grantedPackages[email]?.contains(package) == true else {
                return Self.googleError(403, "The current user has insufficient permissions.")
            }
            // As Google: a start more than 30 days back is refused (voidedpurchases.list, `startTime`).
            let start = query.split(separator: "&").first { $0.hasPrefix("startTime=") }
                .flatMap { Int64($0.dropFirst("startTime=".count)) }
            let oldest = Int64((Date().timeIntervalSince1970 - 30 * 86_400) * 1_000)
            if let start, start < oldest {
                return Self.googleError(400, "startTime must not be older than 30 days.")
            }
            let pages = state.voided[package] ?? [[]]
            let token = query.split(separator: "&").first { $0.hasPrefix("token=page-") }
            let index = token.flatMap { Int($0.dropFirst("token=page-".count)) } ?? 0
            guard index < pages.count else { return Self.googleError(400, "Invalid page token.") }
            let next = index + 1 < pages.count ? #","tokenPagination":{"nextPageToken":"page-\#(index + 1)"}"# : ""
            // As Google: quantity-based partial refunds only when asked for (`includeQuantityBasedPartialRefund`).
            let partial = query.split(separator: "&").contains("includeQuantityBasedPartialRefund=true")
            let listed = pages[index].filter { partial || !$0.contains(#""voidedQuantity""#) }
            let body = #"{"voidedPurchases":[\#(listed.joined(separator: ","))]\#(next)}"#
            return Response(
                status: .ok, headers: [.contentType: "application/json"],
                body: .init(byteBuffer: ByteBuffer(string: body)))
        }
    }

    /// The access token a request carries (`Authorization: Bearer …`), or "".
    private static func bearer(_ request: Request) -> String {
        let authorization = request.headers[.authorization] ?? ""
        return authorization.hasPrefix("Bearer ") ? String(authorization.dropFirst(7)) : ""
    }

    /// Google's error body (`{"error": {"code", "message", "status"}}`).
    private static func googleError(_ code: Int, _ message: String) -> Response {
        Response(
            status: .init(code: code), headers: [.contentType: "application/json"],
            body: .init(
                byteBuffer: ByteBuffer(
                    string: #"{"error":{"code":\#(code),"message":"\#(message)","errors":[{"message":"\#(message)"}]}}"#
                )))
    }

    private func grant(_ request: Request) async -> Response {
        state.withLock { $0.grants += 1 }
        let body = (try? await request.body.collect(upTo: 1 << 16)).map { String(buffer: $0) } ?? ""
        guard request.headers[.contentType] == "application/x-www-form-urlencoded" else {
            return refuse("content type is not a form", status: 400, error: "invalid_request")
        }
        let form = Dictionary(
            body.split(separator: "&").map { pair -> (String, String) in
                let parts = pair.split(separator: "=", maxSplits: 1).map(String.init)
                return (parts[0], (parts.count > 1 ? parts[1] : "").removingPercentEncoding ?? "")
            }, uniquingKeysWith: { first, _ in first })
        guard form["grant_type"] == "urn:ietf:params:oauth:grant-type:jwt-bearer", let assertion = form["assertion"]
        else { return refuse("not a JWT bearer grant", status: 400, error: "unsupported_grant_type") }
        if let reason = check(assertion) { return refuse(reason, status: 400, error: "invalid_grant") }
        let reply = state.withLock { $0.replies.isEmpty ? Reply.token(expiresIn: 3_599) : $0.replies.removeFirst() }
        switch reply {
        case .token(let seconds):
            let token = "ya29." + Hex.encode(SecureRandom.bytes(24))
            let email = grantee(assertion)
            state.withLock { $0.issued[token] = email }
            return json(#"{"access_token":"\#(token)","expires_in":\#(seconds),"token_type":"Bearer"}"#, status: .ok)
        case .error(let status, let error):
            return json(#"{"error":"\#(error)"}"#, status: .init(code: status))
        }
    }

    /// The service account an assertion (already checked) is from.
    private func grantee(_ assertion: String) -> String {
        let claims = assertion.split(separator: ".").dropFirst().first.flatMap { Base64URL.decode($0) }
            .flatMap { try? JSONParser.parse($0) }
        return claims?["iss"]?.stringValue ?? ""
    }

    /// Why Google would refuse `assertion`, or nil.
    private func check(_ assertion: String) -> String? {
        let parts = assertion.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 3, let headerBytes = Base64URL.decode(parts[0]),
            let claimBytes = Base64URL.decode(parts[1]), let signature = Base64URL.decode(parts[2]),
            let header = try? JSONParser.parse(headerBytes), let claims = try? JSONParser.parse(claimBytes)
        else { return "not a JWT" }
        guard header["alg"]?.stringValue == "RS256", header["typ"]?.stringValue == "JWT" else { return "not RS256" }
        guard let email = claims["iss"]?.stringValue, let account = state.withLock({ $0.accounts[email] }) else {
            return "unknown service account"
        }
        guard header["kid"]?.stringValue == account.keyID else { return "another key id" }
        guard
            account.key.publicKey.isValidSignature(
                _RSA.Signing.RSASignature(rawRepresentation: signature), for: Data((parts[0] + "." + parts[1]).utf8),
                padding: .insecurePKCS1v1_5)
        else { return "bad signature" }
        guard claims["scope"]?.stringValue == "https://www.googleapis.com/auth/androidpublisher" else {
            return "another scope"
        }
        guard claims["aud"]?.stringValue == "https://oauth2.googleapis.com/token" else { return "another audience" }
        guard case .integer(let issuedAt)? = claims["iat"], case .integer(let expires)? = claims["exp"] else {
            return "no iat or exp"
        }
        let now = Int64(Date().timeIntervalSince1970)
        guard abs(issuedAt - now) <= 60 else { return "iat is not now" }
        guard expires > issuedAt, expires - issuedAt <= 3_600 else { return "lifetime over an hour" }
        return nil
    }

    private func refuse(_ reason: String, status: Int, error: String) -> Response {
        state.withLock { $0.refusedAssertions.append(reason) }
        return json(#"{"error":"\#(error)","error_description":"\#(reason)"}"#, status: .init(code: status))
    }

    private func json(_ text: String, status: HTTPResponse.Status) -> Response {
        Response(
            status: status, headers: [.contentType: "application/json"],
            body: .init(byteBuffer: ByteBuffer(string: text)))
    }
}
