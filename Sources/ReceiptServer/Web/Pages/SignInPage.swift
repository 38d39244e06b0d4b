import Clients
import Foundation
import Hummingbird
import ReceiptService

/// Signing in and out: `GET /signin`, the OpenID Connect redirect (`GET /auth/oidc`) and callback
/// (`GET /auth/callback`), one-time sign-in links (`GET`/`POST /auth/link`), and `POST /signout`.
enum SignInPage {
    struct View: PageView {
        var layout: LayoutView
        var providerName: String?
    }

    struct LinkView: PageView {
        var layout: LayoutView
        var token: String
        /// The account the link signs in to.
        var email: String
    }

    /// How long a sign-in may take between the redirect and the callback.
    static let signInWindow: TimeInterval = 600

    static func register(on router: Router<ServerContext>, site: WebSite) {
        router.get("/signin") { request, context in
            await site.answering(request, context: context) {
                if try await site.signedIn(request, context: context) != nil { return site.redirect(to: "/account") }
                return site.page(
                    "signin",
                    View(
                        layout: LayoutView(title: "Sign in", signedIn: nil),
                        providerName: site.openID?.configuration.displayName))
            }
        }

        router.get("/auth/oidc") { request, context in
            await site.answering(request, context: context, withinDeadline: false) {
                guard let openID = site.openID else { return site.errorPage(.notFound, "There is nothing here.") }
                try site.customers.spendSignInAttempt(address: context.clientAddress)
                let pending = OpenIDClient.PendingSignIn.start(at: site.customers.tenancy.now())
                let location = try await openID.authorizationURL(for: pending, redirectURI: site.redirectURI)
                return site.redirect(
                    to: location,
                    cookies: [
                        site.cookie(
                            site.signInCookie, try site.seal(pending, purpose: "signin"), path: "/auth",
                            maxAge: Int(signInWindow))
                    ])
            }
        }

        router.get("/auth/callback") { request, context in
            await site.answering(request, context: context, withinDeadline: false) {
                guard let openID = site.openID else { return site.errorPage(.notFound, "There is nothing here.") }
                try site.customers.spendSignInAttempt(address: context.clientAddress)
                let query = request.uri.queryParameters
                let now = site.customers.tenancy.now()
                // The sign-in this browser started: its state must come back, within the window. A callback without
                // it (another browser's, a replay after success) is refused.
                guard let sealed = request.cookies[site.signInCookie]?.value,
                    let pending = site.unseal(sealed, as: OpenIDClient.PendingSignIn.self, purpose: "signin"),
                    now.timeIntervalSince(pending.startedAt) < signInWindow,
                    let state = query["state"].map(String.init),
                    ConstantTime.equals(Array(state.utf8), Array(pending.state.utf8))
                else { throw ServiceError(.signInFailed, "the callback's state is not this browser's sign-in") }
                if let error = query["error"] {
                    throw ServiceError(.signInFailed, "the issuer answered \(error.prefix(64))")
                }
                guard let code = query["code"].map(String.init), !code.isEmpty, code.utf8.count <= 2_048 else {
                    throw ServiceError(.signInFailed, "the callback has no code")
                }
                let identity = try await openID.identity(
                    code: code, pending: pending, redirectURI: site.redirectURI, now: now)
                let token = try await site.deadline.run("sign-in") {
                    let account = try await site.customers.account(
                        signingIn: identity, address: context.clientAddress)
                    return try await site.customers.startSession(
                        of: account, method: "oidc", address: context.clientAddress)
                }
                return site.redirect(
                    to: "/account",
                    cookies: [
                        site.cookie(site.sessionCookie, token, maxAge: Int(site.customers.settings.sessionLifetime)),
                        site.cookie(site.signInCookie, "", path: "/auth", maxAge: 0),
                    ])
            }
        }

        // A link is used by a form, not by opening it: mail scanners and link previews open links.
        router.get("/auth/link") { request, context in
            await site.answering(request, context: context) {
                // (A made-up token costs no database read: its HMAC fails.)
                let token = request.uri.queryParameters["token"].map(String.init) ?? ""
                guard let account = try await site.customers.account(ofSignInLink: token) else {
                    return site.errorPage(.forbidden, "This sign-in link is unknown, used or expired.")
                }
                if let refusal = try await anotherSession(than: account, request, context, site) { return refusal }
                return site.page(
                    "link",
                    LinkView(
                        layout: LayoutView(title: "Sign in", signedIn: nil), token: token, email: account.email))
            }
        }

        router.post("/auth/link") { request, context in
            await site.answering(request, context: context) {
                try site.customers.spendSignInAttempt(address: context.clientAddress)
                // Another site's form must not sign this browser in to an account of its choosing (login CSRF).
                guard site.isSameOrigin(request) else {
                    return site.errorPage(.forbidden, "This form was sent from another site.")
                }
                let form = try await WebForm(request, maximumSize: WebSite.maximumFormSize)
                let token = form["token"] ?? ""
                if let peeked = try await site.customers.account(ofSignInLink: token),
                    let refusal = try await anotherSession(than: peeked, request, context, site)
                {
                    return refusal
                }
                let account = try await site.customers.account(usingSignInLink: token)
                let session = try await site.customers.startSession(
                    of: account, method: "link", address: context.clientAddress)
                return site.redirect(
                    to: "/account",
                    cookies: [
                        site.cookie(site.sessionCookie, session, maxAge: Int(site.customers.settings.sessionLifetime))
                    ])
            }
        }

        router.post("/signout") { request, context in
            await site.signedInForm(request, context: context) { signedIn, _, _ in
                try await site.customers.endSession(signedIn, address: context.clientAddress)
                return site.redirect(to: "/signin", cookies: [site.cookie(site.sessionCookie, "", maxAge: 0)])
            }
        }
    }

    /// A refusal while the browser is signed in to another account than the link's: a link someone else sent must not
    /// quietly swap the session the person is working in.
    static func anotherSession(
        than account: Account, _ request: Request, _ context: ServerContext, _ site: WebSite
    ) async throws -> Response? {
        guard let current = try await site.signedIn(request, context: context), current.account.id != account.id
        else { return nil }
        return site.errorPage(
            .conflict,
            "This browser is signed in as \(current.account.email); sign out before you use a link for \(account.email)."
        )
    }
}
