import Fakes
import Foundation
import ReceiptCore
import Testing
import TestSupport

/// Google Play's Real-time Developer Notifications through the real server, on both stores: a fake Google publishes
/// its OIDC keys and answers the purchases, and each push carries a token signed as Pub/Sub signs them. Every
/// notification's effect comes from the purchase's state read anew from the API (never a kept answer); messages are
/// recorded once; the ledger, statuses, entitlements and webhooks follow; pushes that are not the app's are refused
/// and leave nothing (docs/google-play.md, "Real-time Developer Notifications").
@Suite struct GoogleNotificationAPITests {
    static let package = GooglePlayAPITests.package
    static let audience = "https://rv.example.com/notifications/google"
    static let pushAccount = "rtdn-push@receiptverify-test.iam.gserviceaccount.com"

    /// A live server pointed at a fake Google for the API, the grants and its keys.
    static func run(
        _ kind: StoreKind, _ body: @Sendable (LiveService, FakeGoogle, FakeGoogle.Account) async throws -> Void
    ) async throws {
        let fake = FakeGoogle()
        let account = try FakeGoogle.Account.make()
        fake.add(account)
        fake.grant(account, package: package)
        try await withLoopbackServer(fake.router(), label: "fake-google") { google in
            try await withLiveService(
                kind,
                serveArguments: [
                    "--google-play-api-url", google, "--google-oauth-token-url", google + "/token",
                    "--google-pubsub-jwks-url", google + "/oauth2/v3/certs", "--auth-failures-per-second", "1000",
                    "--auth-cache-ttl", "1",
                ]
            ) { service in
                try await body(service, fake, account)
            }
        }
    }

    /// A tenant selling on Google Play whose notifications come from the test's push subscription.
    static func tenant(_ service: LiveService, _ account: FakeGoogle.Account, _ arguments: [String] = []) throws
        -> LiveService.Tenant
    {
        try GooglePlayAPITests.tenant(
            service, account,
            ["--google-pubsub-audience", audience, "--google-pubsub-service-account", pushAccount] + arguments)
    }

    /// A developer notification's JSON.
    static func subscriptionNotification(_ type: Int, token: String = "sub-1", at time: Date = Date()) -> String {
        """
        {"version":"1.0","packageName":"\(package)","eventTimeMillis":"\(Int64(time.timeIntervalSince1970 * 1000))",\
        "subscriptionNotification":{"version":"1.0","notificationType":\(type),"purchaseToken":"\(token)",\
        "subscriptionId":"premium_monthly"}}
        """
    }

    /// Pushes `notification` as Pub/Sub would, with `authorization` (nil: a valid token of the app's subscription).
    static func push(
        _ service: LiveService, _ fake: FakeGoogle, _ tenant: LiveService.Tenant, messageID: String,
        _ notification: String, authorization: String?? = nil
    ) async throws -> (LiveService.Answer, JSONObject) {
        let header = authorization ?? ("Bearer " + fake.pushToken(audience: audience, email: pushAccount))
        let answer = try await service.post(
            "/notifications/google/\(tenant.token)",
            body: FakeGoogle.pushBody(messageID: messageID, notification: notification),
            contentType: "application/json", headers: header.map { [("Authorization", $0)] } ?? [])
        return (answer, (try? answer.json()) ?? JSONObject())
    }

    static func rows(_ service: LiveService, _ tenant: LiveService.Tenant, original: String) async throws
        -> JSONObject
    {
        try await service.post(
            "/api/transactions",
            form: [("apikey", tenant.apiKey), ("token", tenant.token), ("original_transaction_id", original)]
        ).json()
    }

    @Test(
        "subscription notifications read the state anew: purchase, renewal, grace, hold, pause, cancel, revoke",
        arguments: StoreKind.available)
    func subscriptionNotifications(kind: StoreKind) async throws {
        try await FakeWebhookReceiver.run { receiver, receiverURL in
            try await Self.run(kind) { service, fake, account in
                let tenant = try Self.tenant(service, account, ["--product", "premium_monthly=auto_renewable:pro"])
                let hook = try NotificationAPITests.addEndpoint(service, tenant.token, url: receiverURL + "/hook")
                receiver.expect(secret: hook.secret, on: "/hook")
                let original = "GPA.3391-4040-4040-40404"
                fake.setSubscription(Self.package, token: "sub-1", GooglePlayAPITests.subscription(orderID: original))

                let (bought, boughtAnswer) = try await Self.push(
                    service, fake, tenant, messageID: "m-1", Self.subscriptionNotification(4))
                #expect(bought.httpStatus == 200, "\(bought.text)")
                #expect(boughtAnswer["duplicate"] == .bool(false) && boughtAnswer["effect"] == .string("recorded"))
                var looked = try await Self.rows(service, tenant, original: original)
                let row = try #require(looked["transactions"]?.arrayValue?.first)
                // Recorded, never claimed: a notification names only Google's obfuscated account id (M1).
                #expect(row["store"] == .string("google_play") && row["app_user_id"] == nil, "\(row)")
                #expect(row["delivered_at"] == nil || row["delivered_at"] == .null)
                #expect(looked["subscriptions"]?.arrayValue?.first?["status"] == .string("active"))

                // Pub/Sub's redelivery of the message: a duplicate, and Google is not asked again.
                let asked = fake.resourceRequests.count
                let (_, again) = try await Self.push(
                    service, fake, tenant, messageID: "m-1", Self.subscriptionNotification(4))
                #expect(again["duplicate"] == .bool(true))
                #expect(fake.resourceRequests.count == asked)

                // A renewal: a new order of the same original, read from Google although an answer is kept (30 s).
                fake.setSubscription(
                    Self.package, token: "sub-1", GooglePlayAPITests.subscription(orderID: original + "..0"))
                _ = try await Self.push(service, fake, tenant, messageID: "m-2", Self.subscriptionNotification(2))
                looked = try await Self.rows(service, tenant, original: original)
                #expect(looked["transactions"]?.arrayValue?.count == 2, "\(looked)")

                func state(_ googleState: String, type: Int, message: String, expires: String? = nil) async throws
                    -> JSONObject
                {
                    fake.setSubscription(
                        Self.package, token: "sub-1",
                        GooglePlayAPITests.subscription(
                            state: googleState, orderID: original + "..0",
                            expires: expires ?? "2099-01-01T00:00:00.123456Z",
                            renews: googleState != "SUBSCRIPTION_STATE_CANCELED"))
                    let (answer, json) = try await Self.push(
                        service, fake, tenant, messageID: message, Self.subscriptionNotification(type))
                    #expect(answer.httpStatus == 200 && json["effect"] == .string("recorded"), "\(answer.text)")
                    let rows = try await Self.rows(service, tenant, original: original)
                    return try #require(rows["subscriptions"]?.arrayValue?.first?.objectValue)
                }
                #expect(
                    try await state("SUBSCRIPTION_STATE_IN_GRACE_PERIOD", type: 6, message: "m-3")["status"]
                        == .string("grace_period"))
                #expect(
                    try await state("SUBSCRIPTION_STATE_ON_HOLD", type: 5, message: "m-4")["status"]
                        == .string("billing_retry"))
                let paused = try await state("SUBSCRIPTION_STATE_PAUSED", type: 10, message: "m-5")
                #expect(paused["status"] == .string("expired") && paused["entitled"] == .bool(false))
                let recovered = try await state("SUBSCRIPTION_STATE_ACTIVE", type: 1, message: "m-6")
                #expect(recovered["status"] == .string("active") && recovered["entitled"] == .bool(true))
                let cancelled = try await state("SUBSCRIPTION_STATE_CANCELED", type: 3, message: "m-7")
                #expect(cancelled["status"] == .string("active") && cancelled["auto_renews"] == .bool(false))

                // A push claiming a revocation Google's own state does not show revokes nothing (S8): the push's body
                // is not bound to its token.
                let (_, forged) = try await Self.push(
                    service, fake, tenant, messageID: "m-7b", Self.subscriptionNotification(12))
                #expect(forged["effect"] == .string("revocation_unconfirmed"), "\(forged)")
                looked = try await Self.rows(service, tenant, original: original)
                #expect(
                    looked["transactions"]?.arrayValue?.allSatisfy {
                        $0["refunded_at"] == nil || $0["refunded_at"] == .null
                    }
                        == true, "\(looked)")
                #expect(looked["subscriptions"]?.arrayValue?.first?["status"] == .string("active"))

                // Revoked: the latest order is revoked as a refund is, and the subscription is over; an event time ten
                // years ahead is taken as now, so it cannot outrank every later statement.
                let revokedState = try await {
                    fake.setSubscription(
                        Self.package, token: "sub-1",
                        GooglePlayAPITests.subscription(
                            state: "SUBSCRIPTION_STATE_EXPIRED", orderID: original + "..0", renews: false))
                    let (_, json) = try await Self.push(
                        service, fake, tenant, messageID: "m-8",
                        Self.subscriptionNotification(12, at: Date().addingTimeInterval(10 * 365 * 86_400)))
                    return json
                }()
                #expect(revokedState["effect"] == .string("revoked"), "\(revokedState)")
                looked = try await Self.rows(service, tenant, original: original)
                let renewal = try #require(
                    looked["transactions"]?.arrayValue?.first { $0["transaction_id"] == .string(original + "..0") })
                #expect(renewal["refunded_at"] != nil && renewal["refunded_at"] != .null, "\(renewal)")
                // (RFC 3339 in UTC orders as text.)
                let refundedAt = try #require(renewal["refunded_at"]?.stringValue)
                #expect(refundedAt < ISO8601DateFormatter().string(from: Date().addingTimeInterval(60)), "\(renewal)")
                #expect(looked["subscriptions"]?.arrayValue?.first?["status"] == .string("expired"))

                // The backend heard every message once, with what it did, and the ledger's own events.
                #expect(
                    try await receiver.wait {
                        $0.filter { $0.path == "/hook" && $0.type == "notification" }.count >= 9
                    })
                let hooked = receiver.accepted(on: "/hook")
                let notifications = hooked.filter { $0.type == "notification" }
                #expect(notifications.count == 9)
                #expect(notifications.allSatisfy { $0.isSigned })
                let types = notifications.compactMap { $0.body["data"]?["notification_type"]?.stringValue }
                #expect(types.contains("SUBSCRIPTION_PURCHASED") && types.contains("SUBSCRIPTION_REVOKED"))
                #expect(notifications.allSatisfy { $0.body["data"]?["store"] == .string("google_play") })
                #expect(
                    notifications.first { $0.body["data"]?["message_id"] == .string("m-1") }?.body["data"]?[
                        "purchase_token"] == .string("sub-1"))
                #expect(hooked.contains { $0.type == "transaction.created" })
                #expect(hooked.contains { $0.type == "transaction.revoked" })
                #expect(hooked.contains { $0.type == "subscription.status_changed" })
            }
        }
    }

    @Test(
        "a notification never claims: the backend's user gets the purchase whatever obfuscatedExternalAccountId holds (M1)",
        arguments: StoreKind.available)
    func aNotificationNeverClaimsForGooglesAccountID(kind: StoreKind) async throws {
        try await Self.run(kind) { service, fake, account in
            let tenant = try Self.tenant(service, account, ["--product", "coins_100=non_consumable:coins"])
            let order = "GPA.3391-7070-7070-70707"
            // The app follows Google's advice: a one-way hash of its user id, not the id.
            fake.setProduct(
                Self.package, "coins_100", token: "tok-m1", GooglePlayAPITests.product(orderID: order, user: "h-alice"))
            let purchased = """
                {"version":"1.0","packageName":"\(Self.package)","eventTimeMillis":"1790000000123",\
                "oneTimeProductNotification":{"version":"1.0","notificationType":1,"purchaseToken":"tok-m1",\
                "sku":"coins_100"}}
                """
            let (answer, json) = try await Self.push(service, fake, tenant, messageID: "m1-1", purchased)
            #expect(answer.httpStatus == 200 && json["effect"] == .string("recorded"), "\(answer.text)")
            let recorded = try #require(
                try await Self.rows(service, tenant, original: order)["transactions"]?.arrayValue?.first)
            #expect(recorded["app_user_id"] == nil, "\(recorded)")

            // The backend's request for its own user: delivered, claimed for that user, and acknowledged to Google.
            let fields = [
                ("package_name", Self.package), ("product_id", "coins_100"), ("purchase_token", "tok-m1"),
                ("app_user_id", "alice"),
            ]
            let (_, verified) = try await GooglePlayAPITests.verify(service, tenant, fields)
            let entry = try #require(verified["transactions"]?.arrayValue?.first)
            #expect(entry["deliver"] == .bool(true), "\(verified)")
            #expect(verified["customer"]?["app_user_id"] == .string("alice"))
            let row = try #require(
                try await Self.rows(service, tenant, original: order)["transactions"]?.arrayValue?.first)
            #expect(row["app_user_id"] == .string("alice"), "\(row)")
            #expect(row["google_acknowledgement"] != nil, "\(row)")
        }
    }

    @Test(
        "one-time, voided and test notifications; a purchase recorded by one is still delivered once by /api",
        arguments: StoreKind.available)
    func productVoidedAndTestNotifications(kind: StoreKind) async throws {
        try await Self.run(kind) { service, fake, account in
            let tenant = try Self.tenant(service, account, ["--product", "coins_100=non_consumable:coins"])
            let order = "GPA.3391-5050-5050-50505"
            fake.setProduct(Self.package, "coins_100", token: "tok-5", GooglePlayAPITests.product(orderID: order))
            let purchased = """
                {"version":"1.0","packageName":"\(Self.package)","eventTimeMillis":"1790000000123",\
                "oneTimeProductNotification":{"version":"1.0","notificationType":1,"purchaseToken":"tok-5",\
                "sku":"coins_100"}}
                """
            let (answer, json) = try await Self.push(service, fake, tenant, messageID: "p-1", purchased)
            #expect(answer.httpStatus == 200 && json["effect"] == .string("recorded"), "\(answer.text)")
            #expect(try await Self.rows(service, tenant, original: order)["transactions"]?.arrayValue?.count == 1)
            // The backend's own verification delivers it, once: the notification recorded it without delivering.
            let fields = [("package_name", Self.package), ("product_id", "coins_100"), ("purchase_token", "tok-5")]
            let (_, first) = try await GooglePlayAPITests.verify(service, tenant, fields)
            #expect(first["transactions"]?.arrayValue?.first?["deliver"] == .bool(true), "\(first)")
            let (_, second) = try await GooglePlayAPITests.verify(service, tenant, fields)
            #expect(second["transactions"]?.arrayValue?.first?["deliver"] == .bool(false))

            // A pending purchase: nothing recorded yet.
            fake.setProduct(
                Self.package, "coins_100", token: "tok-6",
                GooglePlayAPITests.product(orderID: "GPA.3391-6060-6060-60606", state: 2))
            let (_, pending) = try await Self.push(
                service, fake, tenant, messageID: "p-2",
                purchased.replacingOccurrences(of: "tok-5", with: "tok-6"))
            #expect(pending["effect"] == .string("pending"))
            #expect(
                try await Self.rows(service, tenant, original: "GPA.3391-6060-6060-60606")["transactions"]?.arrayValue?
                    .isEmpty == true)

            // Voided (an hour ago: Google lists 30 days): the order is found in Google's voided list and revoked.
            let voidedAt = Int64(Date().timeIntervalSince1970 * 1_000) - 3_600_000
            fake.setVoided(
                Self.package,
                pages: [
                    [
                        #"{"kind":"androidpublisher#voidedPurchase","purchaseToken":"tok-5","orderId":"\#(order)","purchaseTimeMillis":"1790000000123","voidedTimeMillis":"\#(voidedAt)","voidedSource":1,"voidedReason":7}"#
                    ]
                ])
            let voided = """
                {"version":"1.0","packageName":"\(Self.package)","eventTimeMillis":"\(voidedAt + 500)",\
                "voidedPurchaseNotification":{"purchaseToken":"tok-5","orderId":"\(order)","productType":2,\
                "refundType":1}}
                """
            let (_, voidedAnswer) = try await Self.push(service, fake, tenant, messageID: "p-3", voided)
            #expect(voidedAnswer["effect"] == .string("revoked"), "\(voidedAnswer)")
            let refunded = try #require(
                try await Self.rows(service, tenant, original: order)["transactions"]?.arrayValue?.first)
            #expect(refunded["reason"] == .integer(7))
            #expect(fake.voidedQueries.last?.contains("startTime=\(voidedAt + 500 - 3 * 86_400_000)") == true)

            // Play Console's test notification: recorded, no effect.
            let test =
                #"{"version":"1.0","packageName":"\#(Self.package)","eventTimeMillis":"1790000000000","testNotification":{"version":"1.0"}}"#
            let (_, tested) = try await Self.push(service, fake, tenant, messageID: "p-4", test)
            #expect(tested["effect"] == .string("none") && tested["duplicate"] == .bool(false))

            // `notifications list` shows them beside Apple's, Google's event time as their signed date.
            let listed = try service.cli.expectSuccess(["notifications", "list", "--app", tenant.token, "--json"])
            let items = try #require(try JSONParser.parse(Array(listed.stdout.utf8)).arrayValue)
            #expect(Set(items.compactMap { $0["notification_uuid"]?.stringValue }) == ["p-1", "p-2", "p-3", "p-4"])
            #expect(items.allSatisfy { $0["source"] == .string("google") })
            let voidedItem = try #require(items.first { $0["notification_uuid"] == .string("p-3") })
            #expect(voidedItem["notification_type"] == .string("VOIDED_PURCHASE"))
            #expect(
                voidedItem["signed_date"]?.stringValue?.hasPrefix(
                    String(AppleDate.rfc3339(milliseconds: voidedAt + 500).prefix(19))) == true, "\(voidedItem)")
        }
    }

    @Test(
        "pushes that are not the app's subscription's are refused and leave nothing; Google's failure is retried",
        arguments: StoreKind.available)
    func pushesNotTheAppsAreRefused(kind: StoreKind) async throws {
        try await Self.run(kind) { service, fake, account in
            let tenant = try Self.tenant(service, account, ["--product", "premium_monthly=auto_renewable:pro"])
            fake.setSubscription(Self.package, token: "sub-1", GooglePlayAPITests.subscription())
            let notification = Self.subscriptionNotification(4)
            func refused(_ authorization: String??, _ expected: Int = 403) async throws {
                let (answer, json) = try await Self.push(
                    service, fake, tenant, messageID: "x-1", notification, authorization: authorization)
                #expect(answer.httpStatus == expected, "\(answer.text)")
                #expect(json["status"] == .integer(Int64(expected)))
            }
            let stamp = Int64(Date().timeIntervalSince1970)
            try await refused(.some(nil))
            try await refused("Basic dXNlcjpwYXNz")
            try await refused("Bearer " + fake.pushToken(audience: "https://other.example", email: Self.pushAccount))
            try await refused(
                "Bearer " + fake.pushToken(audience: Self.audience, email: "someone@evil.iam.gserviceaccount.com"))
            try await refused(
                "Bearer " + fake.pushToken(audience: Self.audience, email: Self.pushAccount, key: fake.strangerKey))
            try await refused(
                "Bearer "
                    + fake.pushToken(
                        audience: Self.audience, email: Self.pushAccount,
                        claims: ["exp": .integer(stamp - 600), "iat": .integer(stamp - 4_200)]))
            try await refused(
                "Bearer "
                    + fake.pushToken(
                        audience: Self.audience, email: Self.pushAccount,
                        claims: ["iss": .string("https://evil.example")]))
            try await refused(
                "Bearer "
                    + fake.pushToken(
                        audience: Self.audience, email: Self.pushAccount, claims: ["email_verified": .bool(false)]))
            // None of them cost Google a request or left a row.
            #expect(fake.resourceRequests.isEmpty)
            // Google's keys were fetched once, and once more for the key it does not publish, not per push.
            #expect(fake.keysFetched <= 2, "\(fake.keysFetched)")

            // Another package, and a body that is not a notification.
            let (foreign, _) = try await Self.push(
                service, fake, tenant, messageID: "x-2",
                notification.replacingOccurrences(of: Self.package, with: "com.other.app"))
            #expect(foreign.httpStatus == 403)
            let malformed = try await service.post(
                "/notifications/google/\(tenant.token)", body: #"{"message":{"data":"not base64!"}}"#,
                contentType: "application/json",
                headers: [
                    ("Authorization", "Bearer " + fake.pushToken(audience: Self.audience, email: Self.pushAccount))
                ])
            #expect(malformed.httpStatus == 400)
            let unknown = try await service.post(
                "/notifications/google/no-such-token",
                body: FakeGoogle.pushBody(messageID: "x-3", notification: notification),
                contentType: "application/json")
            #expect(unknown.httpStatus == 401)

            // Google fails: 503, nothing recorded, and Pub/Sub's retry of the same message is taken.
            fake.fail(503)
            let (failed, _) = try await Self.push(service, fake, tenant, messageID: "x-4", notification)
            #expect(failed.httpStatus == 503)
            let (retried, json) = try await Self.push(service, fake, tenant, messageID: "x-4", notification)
            #expect(retried.httpStatus == 200 && json["duplicate"] == .bool(false), "\(retried.text)")
            #expect(json["effect"] == .string("recorded"))

            // An app without the setting takes none.
            let bare = try GooglePlayAPITests.tenant(service, account)
            let (unset, unsetJSON) = try await Self.push(service, fake, bare, messageID: "x-5", notification)
            #expect(unset.httpStatus == 403)
            #expect(unsetJSON["description"]?.stringValue?.contains("Pub/Sub") == true)

            // An app with the setting but no service account key cannot read the purchase: 500, nothing recorded, and
            // the push is taken once the key is set.
            let keyless = try service.tenant(
                appArguments: [
                    "--package-name", Self.package, "--google-pubsub-audience", Self.audience,
                    "--google-pubsub-service-account", Self.pushAccount,
                ])
            let (noKey, noKeyJSON) = try await Self.push(service, fake, keyless, messageID: "x-6", notification)
            #expect(noKey.httpStatus == 500, "\(noKey.text)")
            #expect(noKeyJSON["description"]?.stringValue?.contains("service account key") == true)
            let keyFile = service.cli.directory.appendingPathComponent("play-late.json")
            try account.keyFile.write(to: keyFile, atomically: true, encoding: .utf8)
            _ = try service.cli.expectSuccess(
                ["app", "update", keyless.token, "--google-service-account-file", keyFile.path])
            try await Task.sleep(for: .seconds(2))
            let (taken, takenJSON) = try await Self.push(service, fake, keyless, messageID: "x-6", notification)
            #expect(taken.httpStatus == 200 && takenJSON["duplicate"] == .bool(false), "\(taken.text)")
        }
    }

    /// Two servers on one database: one keeps Google's answer for 30 s, the other hears a notification and reads the
    /// subscription anew. The kept answer, used again after, states the purchase as of its fetch: it never overwrites
    /// the fresher state (a stale statement does not revive a subscription on hold).
    @Test func aKeptAnswerNeverOverwritesAFresherStateReadByANotification() async throws {
        let fake = FakeGoogle()
        let account = try FakeGoogle.Account.make()
        fake.add(account)
        fake.grant(account, package: Self.package)
        try await withLoopbackServer(fake.router(), label: "fake-google") { google in
            let arguments = [
                "--google-play-api-url", google, "--google-oauth-token-url", google + "/token",
                "--google-pubsub-jwks-url", google + "/oauth2/v3/certs", "--google-play-cache-seconds", "30",
            ]
            try await withLiveService(.postgres, serveArguments: arguments) { service in
                let tenant = try Self.tenant(service, account, ["--product", "premium_monthly=auto_renewable:pro"])
                let other = try await service.startServer(arguments: arguments, logName: "other.log")
                let original = "GPA.3391-7070-7070-70707"
                fake.setSubscription(Self.package, token: "sub-1", GooglePlayAPITests.subscription(orderID: original))
                let fields = [
                    ("package_name", Self.package), ("product_id", "premium_monthly"), ("purchase_token", "sub-1"),
                ]
                let (_, first) = try await GooglePlayAPITests.verify(service, tenant, fields)
                #expect(first["subscriptions"]?.arrayValue?.first?["status"] == .string("active"), "\(first)")

                fake.setSubscription(
                    Self.package, token: "sub-1",
                    GooglePlayAPITests.subscription(state: "SUBSCRIPTION_STATE_ON_HOLD", orderID: original))
                try await Task.sleep(for: .milliseconds(20))
                let pushed = try await service.post(
                    "/notifications/google/\(tenant.token)",
                    body: FakeGoogle.pushBody(messageID: "k-1", notification: Self.subscriptionNotification(5)),
                    contentType: "application/json",
                    headers: [
                        ("Authorization", "Bearer " + fake.pushToken(audience: Self.audience, email: Self.pushAccount))
                    ], baseURL: other.baseURL)
                #expect(pushed.httpStatus == 200, "\(pushed.text)")

                // The first server answers again from its kept answer (Google is not asked): the status stays on hold.
                let (_, again) = try await GooglePlayAPITests.verify(service, tenant, fields)
                #expect(fake.resourceRequests.count == 2, "\(fake.resourceRequests)")
                #expect(again["status"] == .integer(0))
                let rows = try await Self.rows(service, tenant, original: original)
                #expect(rows["subscriptions"]?.arrayValue?.first?["status"] == .string("billing_retry"), "\(rows)")
                #expect(other.stop() == 0, "\(other.logText)")
            }
        }
    }
}
