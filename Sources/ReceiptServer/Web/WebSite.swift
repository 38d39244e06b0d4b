import Clients
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import ReceiptCore
import ReceiptService
import Synchronization

/// What the account screen's pages share: the customers' use cases, the OpenID client, the templates, and the
/// machinery of every page (rendering, the session cookie, CSRF, forms, redirects, error pages).
///
/// A page is a file in `Pages/` with a `register(on:site:)` and a template in `Templates/`; `PlansPage` is the
/// simplest example to copy.
struct WebSite: Sendable {
    /// Sign-up, sessions, the audit log, and each account's own objects.
    let customers: CustomerService
    /// The identity provider; nil when none is configured (sign-in links only).
    let openID: OpenIDClient?
    /// The templates.
    let templates: PageTemplates
    /// The deadline of every database wait: in an outage a page answers 503 at once rather than hang.
    let deadline: StoreDeadline
    /// The plans, read at most every few seconds (the public plans page must not cost a stranger's request a read).
    let plans: PlanList
    /// The address customers reach us at (`https://…` makes cookies `Secure`), without a trailing slash.
    let publicURL: String
    /// Whether the operator set the public URL (`--public-url`): then a form's `Origin` must be its origin, whatever
    /// host the request names.
    var publicURLIsSet = false
    let logger: Logger
    /// Writes the downloads of `/account/export` (none without it: 404).
    var exporter: Exporter?
    /// Exports each account may have streaming at once (shared with `GET /api/export`).
    var exportSlots = ExportSlots()

    /// The session cookie: `__Host-` over https, so that no subdomain and no plain-http page can set or shadow it.
    var sessionCookie: String { securesCookies ? "__Host-rv_session" : "rv_session" }
    /// The cookie that carries a sign-in under way (sealed) from the redirect to the issuer back to the callback.
    var signInCookie: String { securesCookies ? "__Host-rv_signin" : "rv_signin" }
    /// The largest form body read.
    static let maximumFormSize = 64 * 1_024

    /// Whether cookies are marked `Secure`: the public URL is https.
    var securesCookies: Bool { publicURL.hasPrefix("https://") }

    /// Whether a form post comes from our own pages: a browser names the page's origin in `Origin`; one that names
    /// another (or `null`) is another site's form (login CSRF, and a second line behind the CSRF token). Clients that
    /// send no `Origin` are judged by the CSRF token alone.
    func isSameOrigin(_ request: Request) -> Bool {
        Self.isSameOrigin(
            request.headers[HTTPField.Name("Origin")!], publicURL: publicURL, publicURLIsSet: publicURLIsSet,
            authority: request.head.authority)
    }

    /// ``isSameOrigin(_:)``'s rule: no `Origin` passes; else it must be the public URL's origin or, only while no public
    /// URL is set, the host the request was sent to (a server reached by another name, as on a developer's machine).
    /// With one set, a request's own host is not believed: a proxy or a forged `Host` names any host it likes.
    static func isSameOrigin(_ origin: String?, publicURL: String, publicURLIsSet: Bool, authority: String?) -> Bool {
        guard let origin else { return true }
        guard let named = Self.origin(of: origin) else { return false }
        if named == Self.origin(of: publicURL) { return true }
        return !publicURLIsSet && authority.map { named.hasSuffix("://" + $0.lowercased()) } == true
    }

    /// `scheme://host[:port]` of a URL, lowercased, without the scheme's default port; nil for anything else
    /// (`null` included).
    static func origin(of text: String) -> String? {
        guard let url = URLComponents(string: text), let scheme = url.scheme?.lowercased(),
            let host = url.host?.lowercased(), !host.isEmpty
        else { return nil }
        let port = url.port.flatMap { (scheme, $0) == ("https", 443) || (scheme, $0) == ("http", 80) ? nil : $0 }
        return "\(scheme)://\(host)" + (port.map { ":\($0)" } ?? "")
    }

    /// Where the issuer sends the browser back.
    var redirectURI: String { publicURL + "/auth/callback" }

    // MARK: Rendering

    /// A page: the template rendered with `view`, with the headers every page has.
    func page(_ template: String, _ view: some PageView, status: HTTPResponse.Status = .ok) -> Response {
        let html = templates.render(view, template: template)
        var headers = Self.pageHeaders
        headers[.contentType] = "text/html; charset=utf-8"
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(string: html)))
    }

    /// Headers of every page: no caching (account data), no framing, no sniffing, no referrer beyond our own pages
    /// (a sign-in link's token is in its URL), and only our own scripts and styles.
    static let pageHeaders: HTTPFields = [
        .cacheControl: "no-store",
        HTTPField.Name("Content-Security-Policy")!:
            "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; frame-ancestors 'none'; "
            + "base-uri 'none'; form-action 'self'",
        HTTPField.Name("X-Frame-Options")!: "DENY",
        HTTPField.Name("X-Content-Type-Options")!: "nosniff",
        HTTPField.Name("Referrer-Policy")!: "same-origin",
    ]

    /// A 303 to `location` (after a form, and for sign-in), with extra `Set-Cookie` lines.
    func redirect(to location: String, cookies: [String] = []) -> Response {
        var headers = Self.pageHeaders
        headers[.location] = location
        for cookie in cookies { headers.append(HTTPField(name: .setCookie, value: cookie)) }
        return Response(status: .seeOther, headers: headers)
    }

    /// A `Set-Cookie` value: `HttpOnly`, `SameSite=Lax`, `Secure` over https; `maxAge` 0 deletes it.
    func cookie(_ name: String, _ value: String, path: String = "/", maxAge: Int) -> String {
        "\(name)=\(value); Path=\(path); Max-Age=\(maxAge); HttpOnly; SameSite=Lax" + (securesCookies ? "; Secure" : "")
    }

    // MARK: Sessions

    /// The signed-in account of the request's session cookie, if it is a live session.
    func signedIn(_ request: Request, context: ServerContext) async throws -> SignedIn? {
        guard let token = request.cookies[sessionCookie]?.value else { return nil }
        return try await customers.signedIn(token: token, address: context.clientAddress)
    }

    /// The layout of a public page: with the navigation of the signed-in when the browser has a live session; a
    /// session that cannot be read (the database failing) leaves the public page as it is for everyone.
    func publicLayout(_ title: String, _ request: Request, context: ServerContext) async -> LayoutView {
        LayoutView(title: title, signedIn: try? await signedIn(request, context: context))
    }

    /// Runs a page of the signed-in: without a live session, the browser goes to the sign-in page; errors become
    /// error pages.
    func signedInPage(
        _ request: Request, context: ServerContext, withinDeadline: Bool = true,
        _ body: @escaping @Sendable (SignedIn, CustomerScope) async throws -> Response
    ) async -> Response {
        await answering(request, context: context, withinDeadline: withinDeadline) {
            guard let signedIn = try await signedIn(request, context: context) else {
                return redirect(to: "/signin", cookies: [cookie(sessionCookie, "", maxAge: 0)])
            }
            return try await body(signedIn, customers.scope(of: signedIn, address: context.clientAddress))
        }
    }

    /// Runs a form post of the signed-in: the session must be live and the form must carry its CSRF token (else
    /// 403, nothing changed); `body` gets the parsed form.
    func signedInForm(
        _ request: Request, context: ServerContext, withinDeadline: Bool = true,
        _ body: @escaping @Sendable (SignedIn, CustomerScope, WebForm) async throws -> Response
    ) async -> Response {
        await signedInPage(request, context: context, withinDeadline: withinDeadline) { signedIn, scope in
            guard isSameOrigin(request) else {
                return errorPage(.forbidden, "This form was sent from another site.", signedIn: signedIn)
            }
            let form = try await WebForm(request, maximumSize: Self.maximumFormSize)
            guard let presented = form["csrf"],
                ConstantTime.equals(Array(presented.utf8), Array(signedIn.csrfToken.utf8))
            else {
                return errorPage(
                    .forbidden, "This form has expired. Go back, reload the page and try again.", signedIn: signedIn)
            }
            return try await body(signedIn, scope, form)
        }
    }

    /// Runs a handler within the database deadline (unless `withinDeadline` is false: the sign-in routes wait for the
    /// identity provider, and put only their database calls under the deadline), turning what it throws into an error
    /// page (never the JSON API's error shape).
    func answering(
        _ request: Request, context: ServerContext, withinDeadline: Bool = true,
        _ body: @escaping @Sendable () async throws -> Response
    ) async -> Response {
        do {
            return try await withinDeadline ? deadline.run("page", body) : body()
        } catch let error as ServiceError {
            switch error.code {
            case .unknownApp, .unknownKey, .unknownAccount:
                return errorPage(.notFound, "There is nothing here.")
            case .tooManyAttempts:
                var response = errorPage(.tooManyRequests, "Too many attempts. Wait a while and try again.")
                response.headers[.retryAfter] = "60"
                return response
            case .signInFailed:
                logger.info(
                    "sign-in refused", metadata: ["reason": "\(error.reason)", "request.id": "\(context.requestID)"])
                return errorPage(.forbidden, "Sign-in failed. Try again from the sign-in page.")
            case .unavailable, .storage:
                logger.error(
                    "page failed", metadata: ["error": "\(error.reason)", "request.id": "\(context.requestID)"])
                return errorPage(.serviceUnavailable, "The service is busy. Try again in a moment.")
            case .invalidArgument:
                return errorPage(.badRequest, error.reason)
            default:
                logger.error(
                    "page failed", metadata: ["error": "\(error.reason)", "request.id": "\(context.requestID)"])
                return errorPage(.internalServerError, "Something went wrong on our side.")
            }
        } catch let error as WebForm.Invalid {
            return errorPage(error.status, error.message)
        } catch {
            logger.error("page failed", metadata: ["error": "\(error)", "request.id": "\(context.requestID)"])
            return errorPage(.internalServerError, "Something went wrong on our side.")
        }
    }

    /// An error page.
    func errorPage(_ status: HTTPResponse.Status, _ message: String, signedIn: SignedIn? = nil) -> Response {
        page(
            "error",
            ErrorView(
                layout: LayoutView(title: "\(status.code) \(status.reasonPhrase)", signedIn: signedIn),
                status: Int(status.code), message: message),
            status: status)
    }

    // MARK: Sealed values

    /// The key the account screen's cookies are sealed with: derived from the master key, never the master key itself.
    var cookieKey: MasterKey { customers.tenancy.masterKey.derived(for: "web cookies") }

    /// A value sealed for a cookie (base64url) under ``cookieKey``, readable only by us.
    func seal(_ value: some Encodable, purpose: String) throws -> String {
        let sealed = try SealedSecret.seal(
            Array(try JSONEncoder().encode(value)), context: "web:" + purpose, with: cookieKey)
        return Base64URL.encode(sealed.bytes)
    }

    /// A sealed cookie value opened; nil when it is not one of ours.
    func unseal<T: Decodable>(_ text: String, as type: T.Type, purpose: String) -> T? {
        guard text.utf8.count <= 4_096, let bytes = Base64URL.decode(text),
            let opened = try? SealedSecret(bytes: bytes).open(
                context: "web:" + purpose, with: cookieKey)
        else { return nil }
        return try? JSONDecoder().decode(T.self, from: Data(opened))
    }
}

/// A parsed `application/x-www-form-urlencoded` body (or query): names may repeat (checkboxes).
struct WebForm: Sendable {
    /// A body that is not a form we read: too large or of another type.
    struct Invalid: Error {
        var status: HTTPResponse.Status
        var message: String
    }

    /// The fields in order.
    let fields: [(name: String, value: String)]

    /// Reads a request's form body, at most `maximumSize` bytes.
    init(_ request: Request, maximumSize: Int) async throws {
        let type = request.headers[.contentType]?.lowercased() ?? ""
        guard type.hasPrefix("application/x-www-form-urlencoded") else {
            throw Invalid(status: .unsupportedMediaType, message: "A form must be sent as a form.")
        }
        let buffer: ByteBuffer
        do {
            buffer = try await request.body.collect(upTo: maximumSize)
        } catch {
            throw Invalid(status: .contentTooLarge, message: "The form is too large.")
        }
        try self.init(encoded: String(buffer: buffer))
    }

    /// Parses `a=1&b=2`; a field that is not well percent-encoded UTF-8 refuses the whole form (400), so a garbled
    /// field is never taken as an empty one.
    init(encoded: String) throws {
        fields = try encoded.split(separator: "&").map { pair in
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            func decode(_ text: Substring) throws -> String {
                guard let decoded = text.replacingOccurrences(of: "+", with: " ").removingPercentEncoding else {
                    throw Invalid(status: .badRequest, message: "The form is malformed.")
                }
                return decoded
            }
            return (try decode(parts[0]), parts.count > 1 ? try decode(parts[1]) : "")
        }
    }

    /// The first value of `name`.
    subscript(_ name: String) -> String? { fields.first { $0.name == name }?.value }

    /// Every value of `name`.
    func values(_ name: String) -> [String] { fields.filter { $0.name == name }.map(\.value) }

    /// The trimmed value of `name`, nil when absent or blank.
    func text(_ name: String) -> String? {
        guard let value = self[name]?.trimmingCharacters(in: .whitespacesAndNewlines), !value.isEmpty else {
            return nil
        }
        return value
    }

    /// Whether a checkbox named `name` was checked.
    func isChecked(_ name: String) -> Bool { self[name] != nil }
}

/// The plans as the public pages show them: read from the store at most every ``PlanList/lifetime``.
final class PlanList: Sendable {
    static let lifetime: Duration = .seconds(5)
    private let cached = Mutex<(plans: [Plan], readAt: ContinuousClock.Instant)?>(nil)

    /// The plans, from the cache when it is fresh.
    func plans(from tenancy: TenancyService) async throws -> [Plan] {
        let now = ContinuousClock.now
        if let cached = cached.withLock({ $0 }), cached.readAt.duration(to: now) < Self.lifetime { return cached.plans }
        let plans = try await tenancy.plans()
        cached.withLock { $0 = (plans, now) }
        return plans
    }
}
