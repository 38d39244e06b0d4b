import Crypto
import FakeOpenIDProvider
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import ReceiptCore
import ReceiptService
import Synchronization
import TestSupport
import Testing
import _CryptoExtras

/// The account screen over HTTP: OpenID Connect sign-in against a fake provider (sign-up, a returning user, and
/// every way a sign-in must fail), sign-in links, cookie flags, CSRF, sessions' expiry, one account never reaching
/// another's objects, form errors that write nothing, rate limits and the audit log; on both stores.
@Suite struct AccountScreenTests {
    typealias Browser = AccountScreen.Browser

    static func body(_ response: TestResponse) -> String { String(buffer: response.body) }

    @Test(arguments: StoreKind.available)
    func aFirstSignInCreatesAFreeAccountAndAReturningUserFindsIt(kind: StoreKind) async throws {
        try await AccountScreen.run(kind) { screen in
            let browser = Browser(screen)
            let callback = try await browser.signIn(email: "New.User@Example.com")
            #expect(callback.status == .seeOther)
            #expect(Browser.location(callback) == "/account")
            #expect(browser.hasSession)
            let accounts = try await screen.tenancy.accounts()
            #expect(accounts.count == 1)
            #expect(accounts.first?.email == "new.user@example.com")
            #expect(accounts.first?.planName == "free")
            #expect(accounts.first?.signedUpWith == .oidc)
            let page = Self.body(try await browser.get("/account"))
            #expect(page.contains(#"id="plan-name">free<"#))

            // The same person again, in another browser: the same account, no second one.
            let again = Browser(screen)
            try await again.signIn(email: "new.user@example.com")
            #expect(again.hasSession)
            #expect(try await screen.tenancy.accounts().map(\.id) == accounts.map(\.id))
            let audit = try await screen.tenancy.store.auditEntries(accountID: accounts[0].id, limit: 10)
            #expect(audit.map(\.action).contains("account.sign_up"))
            #expect(audit.filter { $0.action == "session.start" }.count == 2)
        }
    }

    @Test func aCallbackWithAnotherStateIsRefused() async throws {
        try await AccountScreen.run(.sqlite) { screen in
            let browser = Browser(screen)
            let callback = try await browser.approvedCallback(email: "a@example.com")
            let forged = callback.replacingOccurrences(of: "state=", with: "state=x")
            let answer = try await browser.get(forged)
            #expect(answer.status == .forbidden)
            #expect(!browser.hasSession)
            #expect(screen.provider.tokenRequests == 0)
            // Another browser (without this one's sign-in cookie) cannot use the callback either.
            #expect(try await Browser(screen).get(callback).status == .forbidden)
            #expect(try await screen.tenancy.accounts().isEmpty)
        }
    }

    @Test func aReplayedCodeIsRefused() async throws {
        try await AccountScreen.run(.sqlite) { screen in
            let browser = Browser(screen)
            let callback = try await browser.approvedCallback(email: "a@example.com")
            let signInCookie = browser.cookies.withLock { $0[WebSiteNames.signIn] }
            #expect(try await browser.get(callback).status == .seeOther)
            // An attacker who saw the callback URL and the sign-in cookie replays both.
            let attacker = Browser(screen)
            attacker.cookies.withLock { $0[WebSiteNames.signIn] = signInCookie }
            let replay = try await attacker.get(callback)
            #expect(replay.status == .forbidden)
            #expect(!attacker.hasSession)
            #expect(screen.provider.tokenRequests == 2)  // the provider refused the used code
        }
    }

    @Test(arguments: [
        FakeOpenIDProvider.Fault.wrongAudience, .expired, .wrongIssuer, .badSignature, .wrongNonce,
    ])
    func anIDTokenThatDoesNotCheckOutSignsNoOneIn(fault: FakeOpenIDProvider.Fault) async throws {
        try await AccountScreen.run(.sqlite) { screen in
            screen.provider.setFault(fault)
            let browser = Browser(screen)
            let answer = try await browser.signIn(email: "a@example.com")
            #expect(answer.status == .forbidden)
            #expect(!browser.hasSession)
            #expect(try await screen.tenancy.accounts().isEmpty)
        }
    }

    @Test func anUnverifiedEmailSignsNoOneIn() async throws {
        try await AccountScreen.run(.sqlite) { screen in
            let browser = Browser(screen)
            let answer = try await browser.signIn(email: "a@example.com", verified: false)
            #expect(answer.status == .forbidden)
            #expect(!browser.hasSession)
            let accounts = try await screen.tenancy.accounts()
            #expect(accounts.isEmpty)
        }
    }

    @Test func withSelfSignUpOffOnlyAnOperatorsAccountSignsIn() async throws {
        try await AccountScreen.run(.sqlite, settings: CustomerSettings(allowsSelfSignUp: false)) { screen in
            #expect(try await Browser(screen).signIn(email: "stranger@example.com").status == .forbidden)
            #expect(try await screen.tenancy.accounts().isEmpty)
            let account = try await screen.tenancy.createAccount(
                name: "Known", email: "known@example.com", planName: "free")
            let browser = Browser(screen)
            #expect(try await browser.signIn(email: "known@example.com").status == .seeOther)
            #expect(Self.body(try await browser.get("/account")).contains("known@example.com"))
            #expect(try await screen.tenancy.accounts().map(\.id) == [account.id])
        }
    }

    @Test func aDisabledAccountDoesNotSignIn() async throws {
        try await AccountScreen.run(.sqlite) { screen in
            let account = try await screen.tenancy.createAccount(
                name: "Off", email: "off@example.com", planName: "free")
            _ = try await screen.tenancy.setEnabled(account: "off@example.com", false)
            let browser = Browser(screen)
            #expect(try await browser.signIn(email: "off@example.com").status == .forbidden)
            #expect(!browser.hasSession)
            let audit = try await screen.tenancy.store.auditEntries(accountID: account.id, limit: 10)
            #expect(!audit.contains { $0.action == "identity.link" })
            // A signed-in session stops working when its account is disabled.
            _ = try await screen.tenancy.setEnabled(account: "off@example.com", true)
            #expect(try await browser.signIn(email: "off@example.com").status == .seeOther)
            #expect(try await browser.get("/account").status == .ok)
            _ = try await screen.tenancy.setEnabled(account: "off@example.com", false)
            #expect(try await browser.get("/account").status == .seeOther)
        }
    }

    @Test func theSessionCookieIsHttpOnlyLaxAndSecureOverHTTPS() async throws {
        try await AccountScreen.run(.sqlite) { screen in
            let browser = Browser(screen)
            try await browser.signIn(email: "a@example.com")
            // Over https the session cookie is a `__Host-` cookie: Secure, Path=/, no Domain.
            let line = try #require(
                browser.lastSetCookies.withLock { $0 }.first { $0.hasPrefix("__Host-rv_session=") })
            for flag in ["HttpOnly", "SameSite=Lax", "Secure", "Path=/"] { #expect(line.contains(flag), "\(flag)") }
            #expect(!line.contains("Domain"))
        }
        try await AccountScreen.run(.sqlite, publicURL: "http://127.0.0.1:8080") { screen in
            let browser = Browser(screen)
            try await browser.signIn(email: "a@example.com")
            let line = try #require(browser.lastSetCookies.withLock { $0 }.first { $0.hasPrefix("rv_session=") })
            #expect(line.contains("HttpOnly") && line.contains("SameSite=Lax"))
            #expect(!line.contains("Secure"))
        }
    }

    @Test(arguments: StoreKind.available)
    func aFormWithoutItsCSRFTokenChangesNothing(kind: StoreKind) async throws {
        try await AccountScreen.run(kind) { screen in
            let browser = Browser(screen)
            try await browser.signIn(email: "a@example.com")
            #expect(try await browser.post("/account/keys", [("label", "no token")]).status == .forbidden)
            #expect(
                try await browser.post("/account/keys", [("csrf", "forged"), ("label", "bad")]).status == .forbidden)
            #expect(try await screen.tenancy.apiKeys(account: "a@example.com").isEmpty)
            let created = try await browser.submit("/account/keys", [("label", "good")])
            #expect(created.status == .ok)
            #expect(Self.body(created).contains(#"id="new-key">rvk_"#))
            #expect(try await screen.tenancy.apiKeys(account: "a@example.com").map(\.label) == ["good"])
            // Another session's token does not pass either.
            let other = Browser(screen)
            try await other.signIn(email: "b@example.com")
            let theirs = Browser.csrf(in: Self.body(try await other.get("/account/keys"))) ?? ""
            #expect(try await browser.post("/account/keys", [("csrf", theirs), ("label", "x")]).status == .forbidden)
        }
    }

    @Test(arguments: StoreKind.available)
    func anAccountGets404ForEveryIDOfAnotherAccount(kind: StoreKind) async throws {
        try await AccountScreen.run(kind) { screen in
            let victim = Browser(screen)
            try await victim.signIn(email: "victim@example.com")
            try await victim.submit("/account/keys", [("label", "theirs")])
            let created = try await victim.submit(
                "/account/apps",
                [
                    ("name", "Theirs"), ("bundle_ids", "com.victim.app"), ("environments", "production"),
                    ("mode", "local"), ("cipher", "aes-256-cbc"), ("claims", "off"), ("delivery", "once"),
                ])
            #expect(created.status == .seeOther)
            let app = try #require(try await screen.tenancy.apps(account: "victim@example.com").first)
            let key = try #require(try await screen.tenancy.apiKeys(account: "victim@example.com").first)
            let appID = app.id.uuidString.lowercased()

            let attacker = Browser(screen)
            try await attacker.signIn(email: "attacker@example.com")
            #expect(try await attacker.get("/account/apps/\(appID)").status == .notFound)
            #expect(try await attacker.get("/account/apps/\(appID)/edit").status == .notFound)
            #expect(try await attacker.get("/account/transactions?app=\(appID)").status == .notFound)
            for action in ["", "/rotate-token", "/reveal-result-key", "/rotate-result-key", "/enabled", "/remove"] {
                let answer = try await attacker.submit(
                    "/account/apps/\(appID)\(action)",
                    [
                        ("confirm", "1"), ("enabled", "0"), ("name", "Pwned"), ("bundle_ids", "com.evil.app"),
                        ("environments", "production"),
                    ])
                #expect(answer.status == .notFound, "POST /account/apps/ID\(action)")
                #expect(!Self.body(answer).contains(app.token))
            }
            let revoke = try await attacker.submit("/account/keys/\(key.id.uuidString.lowercased())/revoke", [])
            #expect(revoke.status == .notFound)
            // Nothing of the victim's changed.
            #expect(try await screen.tenancy.app(token: app.token) == app)
            #expect(try await screen.tenancy.apiKeys(account: "victim@example.com").first?.revokedAt == nil)
            // And the attacker's pages show none of it.
            #expect(!Self.body(try await attacker.get("/account/apps")).contains("Theirs"))
            #expect(!Self.body(try await attacker.get("/account/keys")).contains(key.prefix))
        }
    }

    @Test(arguments: StoreKind.available)
    func sessionsEndWhenIdleAtTheirLifetimeAtSignOutAndFromTheCLI(kind: StoreKind) async throws {
        let settings = CustomerSettings(sessionIdleTimeout: 600, sessionLifetime: 3_600)
        try await AccountScreen.run(kind, settings: settings) { screen in
            // ID tokens are judged at the test's clock: every sign-in happens before it moves.
            let idle = Browser(screen)
            let busy = Browser(screen)
            let leaving = Browser(screen)
            let first = Browser(screen)
            let second = Browser(screen)
            for browser in [idle, busy, leaving, first, second] { try await browser.signIn(email: "a@example.com") }

            // Sign-out ends the session: the old cookie no longer works.
            let token = try #require(leaving.cookies.withLock { $0[WebSiteNames.session] })
            #expect(try await leaving.submit("/signout", [], from: "/account").status == .seeOther)
            let stolen = Browser(screen)
            stolen.cookies.withLock { $0[WebSiteNames.session] = token }
            #expect(try await stolen.get("/account").status == .seeOther)

            // The operator ends every session of an account but the ones already ended.
            let customers = CustomerService(tenancy: screen.tenancy, settings: settings)
            try await first.get("/account")
            #expect(try await customers.endSessions(account: "a@example.com") == 4)
            #expect(try await first.get("/account").status == .seeOther)
            #expect(try await second.get("/account").status == .seeOther)
        }
        try await AccountScreen.run(kind, settings: settings) { screen in
            let idle = Browser(screen)
            let busy = Browser(screen)
            try await idle.signIn(email: "a@example.com")
            try await busy.signIn(email: "a@example.com")
            // Used every 9 minutes, a session lives; unused for 10, it ends; at its lifetime (an hour) it ends.
            for step in 1...6 {
                screen.clock.advance(540)
                #expect(try await busy.get("/account").status == .ok, "step \(step)")
                if step == 2 {
                    let expired = try await idle.get("/account")
                    #expect(expired.status == .seeOther)
                    #expect(Browser.location(expired) == "/signin")
                }
            }
            screen.clock.advance(540)
            #expect(try await busy.get("/account").status == .seeOther)
        }
    }

    @Test(arguments: StoreKind.available)
    func aBadFieldAnswersTheFormAgainWithItsErrorAndWritesNothing(kind: StoreKind) async throws {
        try await AccountScreen.run(kind) { screen in
            let browser = Browser(screen)
            try await browser.signIn(email: "a@example.com")
            let answer = try await browser.submit(
                "/account/apps",
                [
                    ("name", "Mine"), ("bundle_ids", "not a bundle id!"), ("environments", "production"),
                    ("mode", "local"), ("cipher", "rot13"), ("claims", "off"), ("delivery", "once"),
                    ("products", "ok.product"),
                ])
            #expect(answer.status == .unprocessableContent)
            let page = Self.body(answer)
            #expect(page.contains(#"id="error-bundle_ids""#))
            #expect(page.contains(#"id="error-cipher""#))
            #expect(!page.contains(#"id="error-products""#))
            #expect(page.contains("Mine"))  // what was typed is kept
            #expect(try await screen.tenancy.apps(account: "a@example.com").isEmpty)

            // An edit with a bad field leaves the app as it was.
            #expect(
                try await browser.submit(
                    "/account/apps",
                    [
                        ("name", "Mine"), ("bundle_ids", "com.example.mine"), ("environments", "sandbox"),
                        ("mode", "local"), ("cipher", "aes-256-gcm"), ("claims", "flag"), ("delivery", "confirm"),
                    ]
                ).status == .seeOther)
            let app = try #require(try await screen.tenancy.apps(account: "a@example.com").first)
            #expect(app.claimsPolicy == .flag && app.deliveryMode == .confirm && app.resultCipher == .aes256GCM)
            let edit = try await browser.submit(
                "/account/apps/\(app.id.uuidString.lowercased())",
                [
                    ("name", "Renamed"), ("bundle_ids", "com.example.mine"), ("environments", "sandbox"),
                    ("mode", "local"), ("cipher", "aes-256-gcm"), ("claims", "off"), ("delivery", "once"),
                    ("shared_secret", "short"),
                ])
            #expect(edit.status == .unprocessableContent)
            #expect(Self.body(edit).contains(#"id="error-shared_secret""#))
            #expect(try await screen.tenancy.app(token: app.token) == app)
        }
    }

    @Test(arguments: StoreKind.available)
    func aRefundPolicyIsSetOnTheAppFormWithTheCustomersConsent(kind: StoreKind) async throws {
        try await AccountScreen.run(kind) { screen in
            let browser = Browser(screen)
            try await browser.signIn(email: "a@example.com")
            let fields: [(String, String)] = [
                ("name", "Mine"), ("bundle_ids", "com.example.mine"), ("environments", "production"),
                ("mode", "local"), ("cipher", "aes-256-gcm"), ("claims", "flag"), ("delivery", "once"),
                ("apple_issuer_id", "5a6f1c3e-8d2b-4c7a-9e0f-1b2c3d4e5f60"), ("apple_key_id", "ABC123DEFG"),
                ("apple_private_key", P256.Signing.PrivateKey().pemRepresentation),
            ]
            // Consent is never assumed: a policy without it is refused, and nothing is written.
            let refused = try await browser.submit("/account/apps", fields + [("refund_policy", "rules")])
            #expect(refused.status == .unprocessableContent)
            #expect(Self.body(refused).contains("consent"))
            #expect(try await screen.tenancy.apps(account: "a@example.com").isEmpty)
            let added = try await browser.submit(
                "/account/apps",
                fields + [("refund_policy", "rules"), ("consumption_consent", "1"), ("sample_content_provided", "1")])
            #expect(added.status == .seeOther)
            let app = try #require(try await screen.tenancy.apps(account: "a@example.com").first)
            #expect(
                app.refundAnswers
                    == RefundAnswers(policy: .rules, customerConsented: true, sampleContentProvided: true))
            let page = Self.body(try await browser.get("/account/apps/\(app.id.uuidString.lowercased())"))
            #expect(page.contains("rules: answered with the customers&#39; consent, a sample provided"))
            let form = Self.body(try await browser.get("/account/apps/\(app.id.uuidString.lowercased())/edit"))
            #expect(form.contains(#"<option value="rules" selected>"#))
        }
    }

    /// The app form sets the Android package names and the Google service account key: the key is sealed and never
    /// shown again (the page names the service account), a bad key is refused beside its field with nothing written,
    /// an edit without a key keeps it, and the box removes it.
    @Test(arguments: StoreKind.available)
    func googlePlayIdentityAndKeyAreSetOnTheAppForm(kind: StoreKind) async throws {
        let rsa = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        @Sendable func keyFile(_ email: String, tokenURI: String = "https://oauth2.googleapis.com/token") throws
            -> String
        {
            let fields: [String: String] = [
                "type": "service_account", "private_key_id": "abc123", "private_key": rsa.pkcs8PEMRepresentation,
                "client_email": email, "token_uri": tokenURI,
            ]
            return String(decoding: try JSONSerialization.data(withJSONObject: fields), as: UTF8.self)
        }
        try await AccountScreen.run(kind) { screen in
            let browser = Browser(screen)
            try await browser.signIn(email: "a@example.com")
            let fields: [(String, String)] = [
                ("name", "Mine"), ("bundle_ids", "com.example.mine"), ("environments", "production"),
                ("mode", "local"), ("cipher", "aes-256-gcm"), ("claims", "flag"), ("delivery", "once"),
            ]
            let refused = try await browser.submit(
                "/account/apps",
                fields + [
                    ("package_names", "com.example.mine"),
                    (
                        "google_service_account_key",
                        try keyFile("a@b.iam.gserviceaccount.com", tokenURI: "http://10.0.0.1/")
                    ),
                ])
            #expect(refused.status == .unprocessableContent)
            #expect(Self.body(refused).contains(#"id="error-google_credentials""#))
            #expect(Self.body(refused).contains("not Google&#39;s"))
            #expect(!Self.body(refused).contains("PRIVATE KEY"))
            #expect(try await screen.tenancy.apps(account: "a@example.com").isEmpty)
            let badName = try await browser.submit("/account/apps", fields + [("package_names", "mine")])
            #expect(Self.body(badName).contains(#"id="error-package_names""#))

            #expect(
                try await browser.submit(
                    "/account/apps",
                    fields + [
                        ("package_names", "com.example.mine\ncom.example.mine_free"),
                        ("google_service_account_key", try keyFile("play@mine.iam.gserviceaccount.com")),
                    ]
                ).status == .seeOther)
            let app = try #require(try await screen.tenancy.apps(account: "a@example.com").first)
            #expect(app.packageNames == ["com.example.mine", "com.example.mine_free"])
            let opened = try #require(try screen.tenancy.googleCredentials(of: app))
            #expect(opened.clientEmail == "play@mine.iam.gserviceaccount.com")
            #expect(opened.privateKeyPEM == rsa.pkcs8PEMRepresentation)
            let path = "/account/apps/\(app.id.uuidString.lowercased())"
            let page = Self.body(try await browser.get(path))
            #expect(page.contains("service account play@mine.iam.gserviceaccount.com"))
            #expect(page.contains("com.example.mine, com.example.mine_free"))
            let form = Self.body(try await browser.get(path + "/edit"))
            #expect(form.contains("com.example.mine_free") && !form.contains("PRIVATE KEY"))

            // An edit without a key keeps it; the box removes it.
            let names = ("package_names", "com.example.mine")
            #expect(try await browser.submit(path, fields + [names], from: path + "/edit").status == .seeOther)
            #expect(try await screen.tenancy.app(token: app.token).googlePlayCredentials == app.googlePlayCredentials)
            #expect(
                try await browser.submit(
                    path, fields + [names, ("remove_google_credentials", "1")], from: path + "/edit"
                ).status == .seeOther)
            let removed = try await screen.tenancy.app(token: app.token)
            #expect(removed.googlePlayCredentials == nil && removed.packageNames == ["com.example.mine"])

            // Real-time Developer Notifications: one field alone is refused beside them; both set them; the page
            // names the push URL; both blank remove them.
            let audience = ("google_pubsub_audience", "https://rv.example.com/rtdn")
            let lone = try await browser.submit(path, fields + [names, audience], from: path + "/edit")
            #expect(lone.status == .unprocessableContent && Self.body(lone).contains(#"id="error-google_pubsub""#))
            #expect(try await screen.tenancy.app(token: app.token).googlePubSub == nil)
            let push = ("google_pubsub_service_account", "rtdn@mine.iam.gserviceaccount.com")
            #expect(
                try await browser.submit(path, fields + [names, audience, push], from: path + "/edit").status
                    == .seeOther)
            #expect(
                try await screen.tenancy.app(token: app.token).googlePubSub
                    == GooglePubSubPush(
                        audience: "https://rv.example.com/rtdn", serviceAccount: "rtdn@mine.iam.gserviceaccount.com"))
            #expect(Self.body(try await browser.get(path)).contains("/notifications/google/\(app.token)"))
            #expect(Self.body(try await browser.get(path + "/edit")).contains("https://rv.example.com/rtdn"))
            #expect(try await browser.submit(path, fields + [names], from: path + "/edit").status == .seeOther)
            #expect(try await screen.tenancy.app(token: app.token).googlePubSub == nil)
        }
    }

    @Test(arguments: StoreKind.available)
    func theTestDataSwitchIsTheOperatorsUntilATestRootIsBound(kind: StoreKind) async throws {
        try await AccountScreen.run(kind) { screen in
            let browser = Browser(screen)
            try await browser.signIn(email: "a@example.com")
            let fields: [(String, String)] = [
                ("name", "Mine"), ("bundle_ids", "com.example.mine"), ("environments", "production"),
                ("mode", "local"), ("cipher", "aes-256-gcm"), ("claims", "flag"), ("delivery", "once"),
            ]
            // A new app has no bound root: asking for test data is refused, and nothing is written.
            let refusedAdd = try await browser.submit("/account/apps", fields + [("allows_test_data", "1")])
            #expect(refusedAdd.status == .unprocessableContent)
            #expect(Self.body(refusedAdd).contains("binds a test root"))
            #expect(try await screen.tenancy.apps(account: "a@example.com").isEmpty)
            #expect(try await browser.submit("/account/apps", fields).status == .seeOther)
            let app = try #require(try await screen.tenancy.apps(account: "a@example.com").first)
            let path = "/account/apps/\(app.id.uuidString.lowercased())"
            #expect(Self.body(try await browser.get(path + "/edit")).contains("disabled>"))

            // An edit asking for it is refused too; an edit without the box keeps what the operator set.
            let refused = try await browser.submit(path, fields + [("allows_test_data", "1")], from: path + "/edit")
            #expect(refused.status == .unprocessableContent)
            #expect(try await screen.tenancy.app(token: app.token) == app)
            var operatorSettings = AppSettings(allowsTestData: true)
            _ = try await screen.tenancy.updateApp(token: app.token, settings: operatorSettings)
            #expect(try await browser.submit(path, fields, from: path + "/edit").status == .seeOther)
            #expect(try await screen.tenancy.app(token: app.token).allowsTestData)

            // Once the operator binds a root, the switch is the customer's, and the root is not.
            operatorSettings = AppSettings(allowsTestData: false)
            operatorSettings.testAnchors = [String(repeating: "AB", count: 32)]
            _ = try await screen.tenancy.updateApp(token: app.token, settings: operatorSettings)
            #expect(!Self.body(try await browser.get(path + "/edit")).contains("disabled>"))
            #expect(
                try await browser.submit(path, fields + [("allows_test_data", "1")], from: path + "/edit").status
                    == .seeOther)
            let bound = try await screen.tenancy.app(token: app.token)
            #expect(bound.allowsTestData && bound.testAnchors == [String(repeating: "AB", count: 32)])
            #expect(Self.body(try await browser.get(path)).contains("accepted under the test root the operator bound"))
        }
    }

    @Test(arguments: StoreKind.available)
    func aCustomerRunsTheirWebhooksOnTheAccountScreen(kind: StoreKind) async throws {
        try await AccountScreen.run(kind) { screen in
            let browser = Browser(screen)
            try await browser.signIn(email: "a@example.com")
            #expect(
                try await browser.submit(
                    "/account/apps",
                    [
                        ("name", "Mine"), ("bundle_ids", "com.example.mine"), ("environments", "production"),
                        ("mode", "local"), ("cipher", "aes-256-gcm"), ("claims", "flag"), ("delivery", "once"),
                    ]
                ).status == .seeOther)
            let app = try #require(try await screen.tenancy.apps(account: "a@example.com").first)
            let page = "/account/apps/\(app.id.uuidString.lowercased())/webhooks"
            #expect(Self.body(try await browser.get("/account/apps/\(app.id.uuidString.lowercased())")).contains(page))

            // A URL that reaches inside is refused on the page, and nothing is added.
            let inside = try await browser.submit(
                page, [("url", "https://169.254.169.254/latest"), ("events", "*")], from: page)
            #expect(inside.status == .unprocessableContent)
            #expect(Self.body(inside).contains("private, loopback or other special address"))
            #expect(try await screen.tenancy.webhookEndpoints(token: app.token).isEmpty)

            // Added: the secret is shown this once.
            let added = try await browser.submit(
                page, [("url", "https://hooks.example.com/rv"), ("events", "transaction.*, webhook.test")], from: page)
            #expect(added.status == .ok)
            let addedPage = Self.body(added)
            let secret = try #require(
                addedPage.range(of: #"id="webhook-secret">"#).map { String(addedPage[$0.upperBound...].prefix(38)) })
            #expect(secret.hasPrefix("whsec_"))
            #expect(!Self.body(try await browser.get(page)).contains(secret))
            let endpoint = try #require(try await screen.tenancy.webhookEndpoints(token: app.token).first)
            #expect(endpoint.eventTypes == ["transaction.*", "webhook.test"])
            let base = "\(page)/\(endpoint.id.uuidString.lowercased())"

            // Paused and resumed; a test event queued for it shows as a pending delivery; redelivered on demand.
            #expect(try await browser.submit(base + "/pause", [], from: page).status == .ok)
            #expect(try await screen.tenancy.webhookEndpoints(token: app.token).first?.isEnabled == false)
            #expect(Self.body(try await browser.get(page)).contains(">paused<"))
            #expect(try await browser.submit(base + "/resume", [], from: page).status == .ok)
            #expect(try await screen.tenancy.webhookEndpoints(token: app.token).first?.isEnabled == true)
            let tested = Self.body(try await browser.submit(base + "/test", [], from: page))
            #expect(tested.contains("queued") && tested.contains(#"data-state="pending""#))
            let events = try await screen.tenancy.webhookEvents(
                token: app.token, state: nil, since: nil, eventIDs: nil, limit: 10)
            let event = try #require(events.first)
            #expect(event.event.type == "webhook.test" && event.deliveries.count == 1)
            let redelivered = Self.body(
                try await browser.submit(page + "/redeliver", [("event_id", event.event.idText)], from: page))
            // Queued again, unless the deliverer holds it in flight at that moment (never sent twice at once).
            #expect(redelivered.contains("queued again."))

            // Rotated: a new secret shown once, the previous one signing for the hours chosen.
            let rotated = Self.body(try await browser.submit(base + "/rotate", [("grace_hours", "2")], from: page))
            #expect(rotated.contains(#"id="webhook-secret">whsec_"#) && !rotated.contains(secret))
            #expect(rotated.contains("the previous secret signs too until"))
            #expect(
                try await browser.submit(base + "/rotate", [("grace_hours", "500")], from: page).status
                    == .unprocessableContent)

            // Another account sees none of it and can touch none of it.
            let stranger = Browser(screen)
            try await stranger.signIn(email: "b@example.com")
            #expect(try await stranger.get(page).status == .notFound)
            #expect(try await stranger.submit(base + "/pause", [], from: "/account/keys").status == .notFound)

            // Removed only when confirmed.
            #expect(try await browser.submit(base + "/remove", [], from: page).status == .unprocessableContent)
            #expect(try await browser.submit(base + "/remove", [("confirm", "1")], from: page).status == .ok)
            #expect(try await screen.tenancy.webhookEndpoints(token: app.token).isEmpty)
            let audit = try await CustomerService(tenancy: screen.tenancy, settings: .init()).auditEntries(
                account: "a@example.com", limit: 50
            ).map(\.action)
            for action in [
                "webhook.create", "webhook.pause", "webhook.resume", "webhook.test", "webhook.redeliver",
                "webhook.rotate_secret", "webhook.remove",
            ] {
                #expect(audit.contains(action), "\(action) is audited")
            }
        }
    }

    @Test func anAccountsTestEventsAreBoundedPerHour() async throws {
        try await AccountScreen.run(.sqlite) { screen in
            let browser = Browser(screen)
            try await browser.signIn(email: "a@example.com")
            #expect(
                try await browser.submit(
                    "/account/apps",
                    [
                        ("name", "Mine"), ("bundle_ids", "com.example.mine"), ("environments", "production"),
                        ("mode", "local"), ("cipher", "aes-256-gcm"), ("claims", "flag"), ("delivery", "once"),
                    ]
                ).status == .seeOther)
            let app = try #require(try await screen.tenancy.apps(account: "a@example.com").first)
            let page = "/account/apps/\(app.id.uuidString.lowercased())/webhooks"
            _ = try await browser.submit(page, [("url", "https://hooks.example.com/rv")], from: page)
            let endpoint = try #require(try await screen.tenancy.webhookEndpoints(token: app.token).first)
            let test = "\(page)/\(endpoint.id.uuidString.lowercased())/test"
            let html = Self.body(try await browser.get(page))
            let csrf = try #require(Browser.csrf(in: html))
            for index in 0..<CustomerService.integrationActionsPerHour {
                let answer = try await browser.post(test, [("csrf", csrf)])
                #expect(
                    answer.status == .ok,
                    "test event \(index): \(answer.status) \(String(buffer: answer.body).prefix(300))")
            }
            // The next one in the hour is refused, and makes no event.
            #expect(try await browser.post(test, [("csrf", csrf)]).status == .tooManyRequests)
            let events = try await screen.tenancy.webhookEvents(
                token: app.token, state: nil, since: nil, eventIDs: nil, limit: 1_000)
            #expect(events.count == CustomerService.integrationActionsPerHour)
            screen.clock.advance(3_601)
            #expect(try await browser.post(test, [("csrf", csrf)]).status == .ok)
        }
    }

    @Test(arguments: StoreKind.available)
    func theNotificationsPageGivesTheURLsAndTheLatestNotifications(kind: StoreKind) async throws {
        try await AccountScreen.run(kind) { screen in
            let browser = Browser(screen)
            try await browser.signIn(email: "a@example.com")
            #expect(
                try await browser.submit(
                    "/account/apps",
                    [
                        ("name", "Mine"), ("bundle_ids", "com.example.mine"), ("environments", "production"),
                        ("mode", "local"), ("cipher", "aes-256-gcm"), ("claims", "flag"), ("delivery", "once"),
                    ]
                ).status == .seeOther)
            let app = try #require(try await screen.tenancy.apps(account: "a@example.com").first)
            let page = "/account/apps/\(app.id.uuidString.lowercased())/notifications"
            #expect(Self.body(try await browser.get("/account/apps/\(app.id.uuidString.lowercased())")).contains(page))
            let html = Self.body(try await browser.get(page))
            let url = "https://rv.example/notifications/\(app.token)"
            #expect(html.contains(#"<code id="production-url">\#(url)</code>"#))
            #expect(html.contains(#"<code id="sandbox-url">\#(url)</code>"#))
            #expect(html.contains(#"data-copy="production-url""#) && html.contains(#"data-copy="sandbox-url""#))
            // Without credentials the page says what to add, and asking Apple is refused with the reason.
            #expect(html.contains(#"id="no-credentials""#) && !html.contains(#"id="request-test""#))
            let refused = try await browser.submit(page + "/test", [("environment", "sandbox")], from: page)
            #expect(refused.status == .unprocessableContent)
            #expect(Self.body(refused).contains("does not reach the App Store Server API"))
            // Another account's app is not there.
            let stranger = Browser(screen)
            try await stranger.signIn(email: "b@example.com")
            #expect(try await stranger.get(page).status == .notFound)
        }
    }

    @Test func aSignInLinkWorksOnceAndIsRateLimited() async throws {
        let settings = CustomerSettings(signInAttemptsPerMinute: 4)
        try await AccountScreen.run(.sqlite, settings: settings) { screen in
            _ = try await screen.tenancy.createAccount(name: "Self host", email: "me@example.com", planName: "free")
            let customers = CustomerService(tenancy: screen.tenancy, settings: settings)
            let link = try await customers.makeSignInLink(account: "me@example.com")
            let browser = Browser(screen)
            // Opening the link changes nothing (mail scanners open links); its form signs in.
            let page = try await browser.get("/auth/link?token=\(link.token)")
            #expect(page.status == .ok && !browser.hasSession)
            // The page names the account the link signs in to.
            #expect(Self.body(page).contains(#"<strong id="link-account">me@example.com</strong>"#))
            #expect(try await browser.post("/auth/link", [("token", link.token)]).status == .seeOther)
            #expect(browser.hasSession)
            // Signed in, a link to another account (someone else's, sent to this person) is refused, page and form,
            // and the session stays; the link stays usable.
            _ = try await screen.tenancy.createAccount(name: "Other", email: "other@example.com", planName: "free")
            let foreign = try await customers.makeSignInLink(account: "other@example.com")
            #expect(try await browser.get("/auth/link?token=\(foreign.token)").status == .conflict)
            let swapped = try await browser.post("/auth/link", [("token", foreign.token)])
            #expect(swapped.status == .conflict && swapped.headers[values: .setCookie].isEmpty)
            #expect(try await browser.get("/account").status == .ok)
            #expect(try await customers.account(ofSignInLink: foreign.token)?.email == "other@example.com")
            let audit = try await screen.tenancy.store.auditEntries(accountID: nil, limit: 5)
            let session = try #require(audit.first { $0.action == "session.start" })
            #expect(session.action == "session.start" && session.detail == "by link")
            // Used once: a second use fails, and so does a made-up token.
            let late = Browser(screen)
            #expect(try await late.post("/auth/link", [("token", link.token)]).status == .forbidden)
            #expect(
                try await late.post("/auth/link", [("token", String(repeating: "A", count: 43))]).status == .forbidden)
            // Four attempts a minute from one address: the next is refused before anything is looked up.
            #expect(try await late.post("/auth/link", [("token", link.token)]).status == .tooManyRequests)
            #expect(try await late.get("/auth/oidc").status == .tooManyRequests)
            screen.clock.advance(61)
            #expect(try await late.get("/auth/oidc").status == .seeOther)
        }
    }

    @Test func revealingAResultKeyNeedsConfirmationIsRateLimitedAndAudited() async throws {
        try await AccountScreen.run(.sqlite, settings: CustomerSettings(keyRevealsPerHour: 1)) { screen in
            let browser = Browser(screen)
            try await browser.signIn(email: "a@example.com")
            try await browser.submit(
                "/account/apps",
                [
                    ("name", "Mine"), ("bundle_ids", "com.example.mine"), ("environments", "production"),
                    ("mode", "local"), ("cipher", "aes-256-cbc"), ("claims", "off"), ("delivery", "once"),
                ])
            let app = try #require(try await screen.tenancy.apps(account: "a@example.com").first)
            let path = "/account/apps/\(app.id.uuidString.lowercased())"
            let unconfirmed = try await browser.submit(path + "/reveal-result-key", [], from: path)
            #expect(unconfirmed.status == .unprocessableContent)
            #expect(!Self.body(unconfirmed).contains(#"id="result-key""#))
            let revealed = try await browser.submit(path + "/reveal-result-key", [("confirm", "1")], from: path)
            let key = Data(try screen.tenancy.resultKey(of: app)).base64EncodedString()
            #expect(Self.body(revealed).contains(#"id="result-key">\#(key)<"#))
            #expect(
                try await browser.submit(path + "/reveal-result-key", [("confirm", "1")], from: path).status
                    == .tooManyRequests)
            let audit = try await screen.tenancy.store.auditEntries(accountID: app.accountID, limit: 20)
            let reveal = try #require(audit.first { $0.action == "app.reveal_result_key" })
            #expect(reveal.actor == "a@example.com")
            #expect(!reveal.detail.contains(key))
            // The page's changes are recorded as the customer's, through the CLI's own functions.
            #expect(audit.first { $0.action == "app.create" }?.actor == "a@example.com")
        }
    }

    @Test func publicPagesNeedNoSessionAndAccountPagesDo() async throws {
        try await AccountScreen.run(.sqlite) { screen in
            let browser = Browser(screen)
            let plans = try await browser.get("/plans")
            #expect(plans.status == .ok)
            #expect(Self.body(plans).contains(#"data-plan="free""#))
            #expect(plans.headers[.contentType] == "text/html; charset=utf-8")
            #expect(
                plans.headers[HTTPField.Name("Content-Security-Policy")!]?.contains("frame-ancestors 'none'") == true)
            #expect(Self.body(try await browser.get("/docs")).contains("POST /api"))
            for path in ["/account", "/account/keys", "/account/apps", "/account/apps/new", "/account/transactions"] {
                let answer = try await browser.get(path)
                #expect(answer.status == .seeOther, "\(path)")
                #expect(Browser.location(answer) == "/signin")
            }
            #expect(try await browser.get("/static/style.css").status == .ok)
        }
    }

    @Test func aFormFromAnotherSiteIsRefused() async throws {
        try await AccountScreen.run(.sqlite) { screen in
            let browser = Browser(screen)
            try await browser.signIn(email: "a@example.com")
            let html = Self.body(try await browser.get("/account/keys"))
            let csrf = try #require(Browser.csrf(in: html))
            let body = ByteBuffer(string: "csrf=\(csrf)&label=x")
            for origin in ["https://evil.example", "null"] {
                let answer = try await screen.client.executeRequest(
                    uri: "/account/keys", method: .post,
                    headers: [
                        .contentType: "application/x-www-form-urlencoded", .cookie: Self.cookies(browser),
                        HTTPField.Name("Origin")!: origin,
                    ], body: body)
                #expect(answer.status == .forbidden, "Origin: \(origin)")
            }
            #expect(try await screen.tenancy.apiKeys(account: "a@example.com").isEmpty)
            let ours = try await screen.client.executeRequest(
                uri: "/account/keys", method: .post,
                headers: [
                    .contentType: "application/x-www-form-urlencoded", .cookie: Self.cookies(browser),
                    HTTPField.Name("Origin")!: "https://rv.example",
                ], body: body)
            #expect(ours.status == .ok)
            // The same origin written with its default port is the same origin.
            let withPort = try await screen.client.executeRequest(
                uri: "/account/keys", method: .post,
                headers: [
                    .contentType: "application/x-www-form-urlencoded", .cookie: Self.cookies(browser),
                    HTTPField.Name("Origin")!: "https://RV.example:443",
                ], body: body)
            #expect(withPort.status == .ok)
            // A garbled field refuses the whole form: it is never taken as empty.
            #expect(try await browser.submit("/account/keys", [("label", "ok")]).status == .ok)
            let garbled = try await screen.client.executeRequest(
                uri: "/account/keys", method: .post,
                headers: [.contentType: "application/x-www-form-urlencoded", .cookie: Self.cookies(browser)],
                body: ByteBuffer(string: "csrf=\(csrf)&label=%ZZ"))
            #expect(garbled.status == .badRequest)
            #expect(try await screen.tenancy.apiKeys(account: "a@example.com").count == 3)

            // Login CSRF: another site's form cannot sign this browser in with a link of its choosing.
            _ = try await screen.tenancy.createAccount(name: "Evil", email: "evil@example.com", planName: "free")
            let link = try await CustomerService(tenancy: screen.tenancy, settings: .init()).makeSignInLink(
                account: "evil@example.com")
            let forged = try await screen.client.executeRequest(
                uri: "/auth/link", method: .post,
                headers: [
                    .contentType: "application/x-www-form-urlencoded",
                    HTTPField.Name("Origin")!: "https://evil.example",
                ], body: ByteBuffer(string: "token=\(link.token)"))
            #expect(forged.status == .forbidden)
            #expect(forged.headers[values: .setCookie].isEmpty)
        }
    }

    static func cookies(_ browser: Browser) -> String {
        browser.cookies.withLock { $0.map { "\($0.key)=\($0.value)" }.joined(separator: "; ") }
    }

    @Test func whatACustomerTypesIsEscapedInThePages() async throws {
        try await AccountScreen.run(.sqlite) { screen in
            let browser = Browser(screen)
            try await browser.signIn(email: "a@example.com")
            let label = #"x"><script>alert(1)</script>"#
            let page = Self.body(try await browser.submit("/account/keys", [("label", label)]))
            #expect(!page.contains("<script>alert(1)</script>"))
            #expect(page.contains("&lt;script&gt;"))
            let form = Self.body(
                try await browser.submit(
                    "/account/apps", [("name", label), ("bundle_ids", "bad id"), ("environments", "production")]))
            #expect(!form.contains("<script>alert(1)</script>"))
            #expect(form.contains(#"value="x&quot;&gt;&lt;script&gt;"#))
        }
    }

    @Test(arguments: StoreKind.available)
    func concurrentFirstSignInsOfOnePersonMakeOneAccount(kind: StoreKind) async throws {
        try await AccountScreen.run(kind) { screen in
            let browsers = (0..<4).map { _ in Browser(screen) }
            var callbacks: [String] = []
            for browser in browsers { callbacks.append(try await browser.approvedCallback(email: "twin@example.com")) }
            try await withThrowingTaskGroup(of: HTTPResponse.Status.self) { group in
                for (browser, callback) in zip(browsers, callbacks) {
                    group.addTask { try await browser.get(callback).status }
                }
                for try await status in group { #expect(status == .seeOther) }
            }
            #expect(try await screen.tenancy.accounts().count == 1)
            #expect(browsers.allSatisfy { $0.hasSession })
        }
    }

    /// The customer page: the catalog set on the app form, a user's entitlements and their timeline drawn; another
    /// account's app is unknown (404).
    @Test(arguments: StoreKind.available)
    func theCustomerPageShowsEntitlementsAndATimeline(kind: StoreKind) async throws {
        try await AccountScreen.run(kind) { screen in
            let browser = Browser(screen)
            try await browser.signIn(email: "owner@example.com")
            let created = try await browser.submit(
                "/account/apps",
                [
                    ("name", "Catalogued"), ("bundle_ids", "com.example.cat"), ("environments", "production"),
                    ("mode", "local"), ("cipher", "aes-256-cbc"), ("claims", "flag"), ("delivery", "once"),
                    (
                        "products",
                        "com.example.cat.monthly=auto_renewable:pro\ncom.example.cat.life=non_consumable:pro,no_ads"
                    ),
                ])
            #expect(created.status == .seeOther)
            let app = try #require(try await screen.tenancy.apps(account: "owner@example.com").first)
            #expect(
                app.catalog?.map(\.description) == [
                    "com.example.cat.monthly=auto_renewable:pro", "com.example.cat.life=non_consumable:pro,no_ads",
                ])
            let now = Date().millisecondsSince1970
            let day: Int64 = 86_400_000
            let purchases = [
                PurchaseTransaction(
                    transactionID: "t1", originalTransactionID: "o1", productID: "com.example.cat.monthly",
                    purchaseDate: now - 40 * day, expiresDate: now - 10 * day),
                PurchaseTransaction(
                    transactionID: "t2", originalTransactionID: "o1", productID: "com.example.cat.monthly",
                    purchaseDate: now - 10 * day, expiresDate: now + 20 * day),
                PurchaseTransaction(
                    transactionID: "t3", originalTransactionID: "o3", productID: "com.example.cat.life",
                    purchaseDate: now - 5 * day, revocationDate: now - day),
            ]
            var recording = LedgerRecording(
                appID: app.id, environment: .production, transactions: purchases, user: "alice", movesClaims: false,
                deliversNew: true, requestID: "r1", now: Date())
            recording.catalog = app.catalog
            _ = try await screen.tenancy.store.record(recording)
            let appID = app.id.uuidString.lowercased()
            let page = try await browser.get("/account/customers?app=\(appID)&user=alice")
            #expect(page.status == .ok)
            let html = Self.body(page)
            #expect(html.contains(#"<h2 id="customer">alice (Production)</h2>"#))
            #expect(html.contains("<td>pro</td><td>active</td>"))
            #expect(html.contains("<td>no_ads</td><td>refunded</td>"))
            // Drawn: two periods and the refunded purchase, its refund marked, and now.
            #expect(html.components(separatedBy: #"class="bar-period""#).count - 1 == 2)
            #expect(html.contains(#"class="bar-refunded""#) && html.contains(#"class="mark-refund""#))
            #expect(html.contains(#"<line class="now""#))

            let stranger = Browser(screen)
            try await stranger.signIn(email: "stranger@example.com")
            #expect(try await stranger.get("/account/customers?app=\(appID)&user=alice").status == .notFound)
        }
    }

    /// The transactions page offers a download of the app's data: the same lines as `GET /api/export`, as a file;
    /// another account's app is unknown (404), a malformed request a 400 page, and a browser without a session goes
    /// to the sign-in page.
    @Test(arguments: StoreKind.available)
    func theTransactionsPageOffersExportsAsDownloads(kind: StoreKind) async throws {
        try await AccountScreen.run(kind) { screen in
            let browser = Browser(screen)
            try await browser.signIn(email: "owner@example.com")
            let created = try await browser.submit(
                "/account/apps",
                [
                    ("name", "Exported, Inc."), ("bundle_ids", "com.example.exp"), ("environments", "production"),
                    ("mode", "local"), ("cipher", "aes-256-cbc"), ("claims", "flag"), ("delivery", "once"),
                ])
            #expect(created.status == .seeOther)
            let app = try #require(try await screen.tenancy.apps(account: "owner@example.com").first)
            let now = Date().millisecondsSince1970
            let purchases = (1...3).map { index in
                PurchaseTransaction(
                    transactionID: "e\(index)", originalTransactionID: "e\(index)", productID: "com.example.exp.coins",
                    purchaseDate: now - Int64(index) * 1_000)
            }
            _ = try await screen.tenancy.store.record(
                LedgerRecording(
                    appID: app.id, environment: .production, transactions: purchases, user: "alice",
                    movesClaims: false, deliversNew: true, requestID: "r1", now: Date()))
            let appID = app.id.uuidString.lowercased()
            let page = Self.body(try await browser.get("/account/transactions?app=\(appID)"))
            #expect(page.contains(#"<form id="export-form" method="get" action="/account/export">"#))

            let download = try await browser.get("/account/export?app=\(appID)&kind=transactions&format=csv")
            #expect(download.status == .ok)
            #expect(download.headers[.contentType] == "text/csv; charset=utf-8")
            #expect(
                download.headers[.contentDisposition]?.hasPrefix(#"attachment; filename="Exported--Inc-transactions-"#)
                    == true)
            let lines = Self.body(download).components(separatedBy: "\r\n")
            #expect(lines.first?.hasPrefix("cursor,transaction_id,") == true)
            #expect(lines.count == 5)
            #expect(Set(lines.dropFirst().dropLast().map { $0.components(separatedBy: ",")[1] }) == ["e1", "e2", "e3"])
            let customers = Self.body(try await browser.get("/account/export?app=\(appID)&kind=customers"))
            #expect(customers.split(separator: "\n").count == 1 && customers.contains(#""app_user_id":"alice""#))

            #expect(try await browser.get("/account/export?app=\(appID)&kind=receipts").status == .badRequest)
            #expect(try await browser.get("/account/export?kind=transactions").status == .badRequest)
            // A kind given twice is a guess either way: refused, as the API refuses it.
            let twice = try await browser.get("/account/export?app=\(appID)&kind=transactions&kind=events")
            #expect(twice.status == .badRequest)
            #expect(Self.body(twice).contains("kind is given more than once"))
            let stranger = Browser(screen)
            try await stranger.signIn(email: "stranger@example.com")
            #expect(try await stranger.get("/account/export?app=\(appID)&kind=transactions").status == .notFound)
            let anonymous = Browser(screen)
            #expect(try await anonymous.get("/account/export?app=\(appID)&kind=transactions").status == .seeOther)
        }
    }
}
