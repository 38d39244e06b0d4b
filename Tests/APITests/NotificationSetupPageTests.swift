import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import ReceiptCore
import TestSupport
import Testing

/// The account screen's notifications page against the fake App Store Server API, as a signed-in customer uses it:
/// a test notification asked of Apple and its result, and recovery of what Apple could not deliver.
@Suite(.serialized) struct NotificationSetupPageTests {
    /// The tenant's account signed in with a sign-in link, as an operator hands one out: its session cookie header.
    static func signIn(_ service: LiveService, _ tenant: LiveService.Tenant) async throws -> [(String, String)] {
        let link = try service.cli.expectSuccess(
            ["account", "login-link", tenant.email, "--public-url", service.baseURL]
        ).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let token = try #require(link.split(separator: "=").last.map(String.init))
        // Its answer is a redirect carrying the session cookie: read without following it.
        var configuration = HTTPClient.Configuration()
        configuration.redirectConfiguration = .disallow
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        var request = HTTPClientRequest(url: service.baseURL + "/auth/link")
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
        request.body = .bytes(ByteBuffer(string: "token=\(token)"))
        let answer = try await client.execute(request, timeout: .seconds(10))
        try await client.shutdown()
        #expect(answer.status == .seeOther)
        let cookie = answer.headers["Set-Cookie"].first { $0.hasPrefix("rv_session=") }?.split(separator: ";").first
            .map(String.init)
        return [("Cookie", try #require(cookie))]
    }

    /// The page's CSRF token.
    static func csrf(_ html: String) throws -> String {
        try #require(
            html.range(of: #"name="csrf" value=""#).map { String(html[$0.upperBound...].prefix { $0 != "\"" }) })
    }

    @Test("a customer asks Apple for a test notification and recovers missed ones", arguments: StoreKind.available)
    func aCustomerProvesTheirNotifications(kind: StoreKind) async throws {
        try await ServerAPIAnswersTests.withServerAPI(kind, bundleID: "com.example.app") { service, fake in
            let tenant = try ServerAPIAnswersTests.tenant(service)
            let cookieHeader = try await Self.signIn(service, tenant)
            let apps = try service.cli.expectSuccess(["app", "show", tenant.token, "--json"]).jsonObject()
            let appID = try #require(apps["id"]?.stringValue)
            let page = "/account/apps/\(appID)/notifications"
            let html = try await service.post(page, body: "", headers: cookieHeader, method: .GET).text
            #expect(html.contains("/notifications/\(tenant.token)</code>"))
            let csrf = try Self.csrf(html)

            // The test: Apple's token, then its result when asked again.
            fake.script("sandbox", .json(#"{"testNotificationToken":"tok_page"}"#), .json(#"{"sendAttempts":[]}"#))
            let asked = try await service.post(
                page + "/test", body: "csrf=\(csrf)&environment=sandbox", headers: cookieHeader)
            #expect(asked.httpStatus == 200)
            #expect(asked.text.contains("has not tried to send it yet") && asked.text.contains("tok_page"))
            fake.script(
                "sandbox", .json(#"{"sendAttempts":[{"attemptDate":1,"sendAttemptResult":"SUCCESS"}]}"#))
            let checked = try await service.post(
                page + "/test-status", body: "csrf=\(csrf)&environment=sandbox&token=tok_page", headers: cookieHeader)
            #expect(checked.text.contains("attempts to send test notification tok_page: SUCCESS."))
            #expect(fake.received.contains { $0.path == "/inApps/v1/notifications/test/tok_page" })

            // Recovery: what Apple lists as undelivered is taken in, and listed on the page.
            let missed = try NotificationAPITests.notification(
                service, "DID_RENEW", uuid: "missed-on-page", transactionID: "2000000000000009")
            fake.script(
                "production",
                .json(#"{"notificationHistory":[{"signedPayload":"\#(missed)","sendAttempts":[]}],"hasMore":false}"#))
            fake.script("sandbox", .json(#"{"notificationHistory":[],"hasMore":false}"#))
            let recovered = try await service.post(
                page + "/recover", body: "csrf=\(csrf)&days=7", headers: cookieHeader)
            #expect(recovered.httpStatus == 200)
            #expect(recovered.text.contains("1 taken in now"))
            #expect(recovered.text.contains("DID_RENEW") && recovered.text.contains("recovered from Apple"))
            let audit = try service.cli.expectSuccess(["audit", "--account", tenant.email]).stdout
            #expect(audit.contains("notifications.test") && audit.contains("notifications.recover"))
        }
    }
}
