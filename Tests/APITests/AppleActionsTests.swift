import Foundation
import NIOHTTP1
import ReceiptCore
import ReceiptTestKit
import TestSupport
import Testing

/// Apple's actions on a customer (docs/app-store-server-api.md, "Actions on a customer"), end to end: a live `serve`
/// whose App Store Server API is a fake Apple on loopback that checks every JWT and records each request; the API
/// (`POST /api/apple`), the CLI (`apple …`) and the audit log.
@Suite struct AppleActionsTests {
    static let monthly = "com.example.app.monthly"

    /// A signed subscription period of the test PKI: bought a day ago, expiring at `expires`.
    static func period(
        _ service: LiveService, _ id: String, expires: Date, signedAt: Date = Date(), ownership: String = "PURCHASED"
    ) throws -> String {
        var builder = JWSBuilder()
        builder.transactionID = id
        builder.originalTransactionID = id
        builder.productID = monthly
        builder.purchaseDate = Date().addingTimeInterval(-86_400)
        builder.expiresDate = expires
        builder.signedDate = signedAt
        builder.ownershipType = ownership
        return try builder.build(signedBy: service.jwsPKI)
    }

    /// Apple's Get All Subscription Statuses of the subscription `original`, its latest period renewing at `expires`.
    static func statuses(_ service: LiveService, _ original: String, expires: Date) throws -> FakeAppStoreServer.Reply {
        var renewal = JWSBuilder()
        renewal.payload = .renewalInfo
        renewal.originalTransactionID = original
        renewal.productID = monthly
        renewal.signedDate = Date().addingTimeInterval(1)
        let answer: JSONObject = [
            "environment": .string("Sandbox"), "bundleId": .string(ServerAPIAnswersTests.bundleID),
            "data": .array([
                .object([
                    "subscriptionGroupIdentifier": .string("21000000"),
                    "lastTransactions": .array([
                        .object([
                            "originalTransactionId": .string(original), "status": .integer(1),
                            "signedTransactionInfo": .string(
                                try period(service, original, expires: expires, signedAt: Date().addingTimeInterval(1))),
                            "signedRenewalInfo": .string(try renewal.build(signedBy: service.jwsPKI)),
                        ])
                    ]),
                ])
            ]),
        ]
        return .json(JSONValue.object(answer).encodedString)
    }

    static func apple(_ service: LiveService, _ tenant: LiveService.Tenant, _ fields: [(String, String)])
        async throws -> (status: Int, body: JSONObject)
    {
        let answer = try await service.post(
            "/api/apple", form: [("apikey", tenant.apiKey), ("token", tenant.token)] + fields)
        return (answer.httpStatus, try answer.json())
    }

    @Test(
        "a token set and claimed, an extension sent once and reflected, a mass extension polled to the end",
        arguments: StoreKind.available)
    func actionsOnACustomer(kind: StoreKind) async throws {
        try await ServerAPIAnswersTests.withServerAPI(
            kind, serveArguments: ["--storekit-extension-poll-seconds", "1"]
        ) { service, fake in
            // The app puts its backend's user ids in appAccountToken, and says so: a token set claims for it.
            let tenant = try ServerAPIAnswersTests.tenant(
                service, ["--product", "\(Self.monthly)=auto_renewable:pro", "--store-user-ids"])
            let shown = try service.cli.expectSuccess(["app", "show", tenant.token, "--json"]).jsonObject()
            #expect(shown["store_user_ids"] == .bool(true))
            // A subscription presented without a user: unclaimed.
            let bought = try Self.period(service, "7100", expires: Date().addingTimeInterval(29 * 86_400))
            let first = try await service.post(
                form: [("apikey", tenant.apiKey), ("token", tenant.token), ("receipt", bought)])
            #expect(first.httpStatus == 200)
            #expect(try first.json()["status"] == .integer(0))
            func requests(_ method: String) -> [FakeAppStoreServer.Received] {
                fake.received.filter { $0.method == method }
            }

            // Set App Account Token: Apple's body, then the ledger's claim by the token.
            let token = "5b9b0f0c-8c5e-4bd1-9d3a-2c1f00000001"
            fake.script("sandbox", .json(""))
            let set = try await Self.apple(
                service, tenant,
                [
                    ("action", "set_app_account_token"), ("original_transaction_id", "7100"),
                    ("app_account_token", token.uppercased()),
                ])
            #expect(set.status == 200, "\(set.body)")
            #expect(set.body["claimed"] == .bool(true) && set.body["environment"] == .string("Xcode"))
            let put = try #require(requests("PUT").last)
            #expect(put.environment == "sandbox" && put.path == "/inApps/v1/transactions/7100/appAccountToken")
            #expect(try JSONParser.parse(Array(put.body.utf8)) == .object(["appAccountToken": .string(token)]))
            let claimed = try await EntitlementAPITests.customer(service, tenant, [("app_user_id", token)]).json()
            #expect(EntitlementAPITests.entitlement(claimed["customer"], "pro")?["active"] == .bool(true))

            // Extend. Apple's signed statuses of 7100, its renewal date `expires`.
            func statuses(expires: Date) throws -> FakeAppStoreServer.Reply {
                try Self.statuses(service, "7100", expires: expires)
            }
            func extended(_ date: Date) -> FakeAppStoreServer.Reply {
                .json(
                    #"{"originalTransactionId":"7100","webOrderLineItemId":"7100","success":true,"effectiveDate":\#(Int64((date.timeIntervalSince1970 * 1_000).rounded(.down)))}"#
                )
            }
            func extensions() -> [FakeAppStoreServer.Received] {
                requests("PUT").filter { $0.path == "/inApps/v1/subscriptions/extend/7100" }
            }
            let renewsAt = Date().addingTimeInterval(29 * 86_400)
            let extendedDate = Date().addingTimeInterval(36 * 86_400)
            let extendedMilliseconds = Int64((extendedDate.timeIntervalSince1970 * 1_000).rounded(.down))
            // Apple's answer is lost (503) and the client does not send it again by itself. The caller repeats it
            // under the same identifier: Apple's renewal date had not moved, so it is sent again; a third ask answers
            // what Apple did without asking.
            fake.script(
                "sandbox", try statuses(expires: renewsAt), .error(503), try statuses(expires: renewsAt),
                try statuses(expires: renewsAt), extended(extendedDate), try statuses(expires: extendedDate))
            let extend: [(String, String)] = [
                ("action", "extend_renewal_date"), ("original_transaction_id", "7100"), ("extend_by_days", "7"),
                ("extend_reason_code", "customer_satisfaction"), ("request_identifier", "outage-2026-11"),
            ]
            let lost = try await Self.apple(service, tenant, extend)
            #expect(lost.status == 500 && lost.body["extension"]?["state"] == .string("unknown"), "\(lost.body)")
            #expect(lost.body["retryable"] == nil, "a lost answer is the caller's to repeat (M6)")
            #expect(extensions().count == 1, "a 503 to an extension is not sent again by the client")
            let done = try await Self.apple(service, tenant, extend)
            #expect(done.status == 200, "\(done.body)")
            #expect(done.body["extension"]?["state"] == .string("extended"))
            #expect(
                done.body["extension"]?["effective_date"]
                    == .string(AppleDate.rfc3339(milliseconds: extendedMilliseconds)))
            #expect(extensions().count == 2)
            #expect(
                try JSONParser.parse(Array((extensions().last?.body ?? "").utf8))
                    == .object([
                        "extendByDays": .integer(7), "extendReasonCode": .integer(1),
                        "requestIdentifier": .string("outage-2026-11"),
                    ]))
            let again = try await Self.apple(service, tenant, extend)
            #expect(again.status == 200 && again.body["extension"] == done.body["extension"])
            #expect(extensions().count == 2, "a repeated identifier is answered without asking Apple")
            // Reflected from Apple's signed status: the entitlement now lasts to the new date.
            let after = try await EntitlementAPITests.customer(service, tenant, [("app_user_id", token)]).json()
            let pro = EntitlementAPITests.entitlement(after["customer"], "pro")
            #expect(pro?["expires_at"] == .string(AppleDate.rfc3339(milliseconds: extendedMilliseconds)), "\(after)")

            // Money review M6: Apple applies an extension and its answer is lost. The repeat finds the renewal date
            // moved by the extension's days and answers `extended`, never sending it a second time.
            let twiceExtended = extendedDate.addingTimeInterval(3 * 86_400)
            fake.script(
                "sandbox", try statuses(expires: extendedDate), .error(503), try statuses(expires: twiceExtended),
                try statuses(expires: twiceExtended))
            let second: [(String, String)] = [
                ("action", "extend_renewal_date"), ("original_transaction_id", "7100"), ("extend_by_days", "3"),
                ("extend_reason_code", "customer_satisfaction"), ("request_identifier", "outage-2026-11-b"),
            ]
            let secondLost = try await Self.apple(service, tenant, second)
            #expect(secondLost.body["extension"]?["state"] == .string("unknown"), "\(secondLost.body)")
            #expect(extensions().count == 3)
            let looked = try await Self.apple(service, tenant, second)
            #expect(looked.status == 200 && looked.body["extension"]?["state"] == .string("extended"), "\(looked.body)")
            #expect(extensions().count == 3, "an extension Apple applied is never sent twice")

            // Refused before Apple is asked: a family-shared subscription; bad fields.
            let shared = try Self.period(
                service, "7200", expires: Date().addingTimeInterval(20 * 86_400), ownership: "FAMILY_SHARED")
            _ = try await service.post(form: [("apikey", tenant.apiKey), ("token", tenant.token), ("receipt", shared)])
            let before = fake.received.count
            let family = try await Self.apple(
                service, tenant,
                [
                    ("action", "extend_renewal_date"), ("original_transaction_id", "7200"), ("extend_by_days", "3"),
                    ("extend_reason_code", "0"),
                ])
            #expect(family.status == 400 && family.body["description"]?.stringValue?.contains("family") == true)
            for (fields, words) in [
                (
                    [
                        ("action", "extend_renewal_date"), ("original_transaction_id", "7100"),
                        ("extend_by_days", "91"),
                        ("extend_reason_code", "0"),
                    ], "1 to 90"
                ),
                (
                    [
                        ("action", "extend_renewal_date"), ("original_transaction_id", "7100"), ("extend_by_days", "5"),
                        ("extend_reason_code", "because"),
                    ], "extend_reason_code"
                ),
                (
                    [
                        ("action", "set_app_account_token"), ("original_transaction_id", "7100"),
                        ("app_account_token", "alice"),
                    ], "UUID"
                ),
                (
                    [
                        ("action", "mass_extend_renewal_date"), ("product_id", Self.monthly), ("extend_by_days", "5"),
                        ("extend_reason_code", "0"), ("storefront_country_codes", "US"),
                    ], "alpha-3"
                ),
                ([("action", "fly")], "Action must be one of"),
                ([("action", "app_transaction_info"), ("transaction_id", "../7100")], "1 to 64 digits"),
            ] as [([(String, String)], String)] {
                let refused = try await Self.apple(service, tenant, fields)
                #expect(refused.status == 400, "\(fields)")
                #expect(refused.body["description"]?.stringValue?.contains(words) == true, "\(refused.body)")
            }
            #expect(fake.received.count == before, "nothing refused here reaches Apple")

            // Get App Transaction Info: verified, of the app's bundle ID.
            var appTransaction = JWSBuilder()
            appTransaction.payload = .appTransaction
            fake.script(
                "sandbox",
                .json(#"{"signedAppTransactionInfo":"\#(try appTransaction.build(signedBy: service.jwsPKI))"}"#))
            let info = try await Self.apple(
                service, tenant,
                [("action", "app_transaction_info"), ("transaction_id", "7100"), ("environment", "Sandbox")])
            #expect(info.status == 200, "\(info.body)")
            #expect(info.body["app_transaction"]?["appTransactionId"] == .string("704528340000000001"))
            #expect(requests("GET").last?.path == "/inApps/v1/transactions/appTransactions/7100")

            // Mass extension: taken by Apple, polled by the server until Apple says it is complete.
            fake.script(
                "sandbox", .json(#"{"requestIdentifier":"mass-1"}"#),
                .json(#"{"requestIdentifier":"mass-1","complete":false}"#),
                .json(
                    #"{"requestIdentifier":"mass-1","complete":true,"completeDate":1790000000000,"succeededCount":30,"failedCount":2}"#
                ))
            let mass = try await Self.apple(
                service, tenant,
                [
                    ("action", "mass_extend_renewal_date"), ("product_id", Self.monthly), ("extend_by_days", "3"),
                    ("extend_reason_code", "service_issue_or_outage"), ("request_identifier", "mass-1"),
                    ("storefront_country_codes", "usa,FRA"), ("environment", "Sandbox"),
                ])
            #expect(mass.status == 200 && mass.body["extension"]?["state"] == .string("requested"), "\(mass.body)")
            let post = try #require(requests("POST").last)
            #expect(post.path == "/inApps/v1/subscriptions/extend/mass")
            #expect(
                try JSONParser.parse(Array(post.body.utf8))
                    == .object([
                        "extendByDays": .integer(3), "extendReasonCode": .integer(3),
                        "requestIdentifier": .string("mass-1"),
                        "storefrontCountryCodes": .array([.string("USA"), .string("FRA")]),
                        "productId": .string(Self.monthly),
                    ]))
            var listed: JSONObject = [:]
            let deadline = Date().addingTimeInterval(30)
            while Date() < deadline {
                let list = try await Self.apple(
                    service, tenant, [("action", "renewal_extensions"), ("request_identifier", "mass-1")])
                listed = list.body["extensions"]?.arrayValue?.first?.objectValue ?? [:]
                if listed["state"] == .string("complete") { break }
                try await Task.sleep(for: .milliseconds(300))
            }
            #expect(listed["state"] == .string("complete"), "\(listed)")
            #expect(listed["succeeded_count"] == .integer(30) && listed["failed_count"] == .integer(2))
            #expect(
                requests("GET").filter { $0.path == "/inApps/v1/subscriptions/extend/mass/\(Self.monthly)/mass-1" }
                    .count == 2)
            #expect(fake.badTokens == 0)

            // The operator extends from the CLI, with the app's stored credentials.
            fake.script(
                "sandbox", try statuses(expires: twiceExtended),
                .json(
                    #"{"originalTransactionId":"7100","success":true,"effectiveDate":\#(extendedMilliseconds)}"#),
                try statuses(expires: twiceExtended))
            let storeKit = [
                "--production-url", fake.baseURL + "/production", "--sandbox-url", fake.baseURL + "/sandbox",
                "--trust-anchors", service.anchors.path, "--allow-test-data",
            ]
            let byCLI = try service.cli.expectSuccess(
                [
                    "apple", "extend", "--app", tenant.token, "7100", "--days", "2", "--reason", "other",
                    "--request-identifier", "cli-1", "--json",
                ] + storeKit
            ).jsonObject()
            #expect(byCLI["state"] == .string("extended") && byCLI["requested_by"] == .string("cli"))
            let badDays = try service.cli.run(
                ["apple", "extend", "--app", tenant.token, "7100", "--days", "0", "--reason", "other"] + storeKit)
            #expect(badDays.status != 0 && badDays.stderr.contains("--days"))

            // The operator sees them; the audit log has each action and no key.
            let cli = try service.cli.expectSuccess(["apple", "extensions", "--app", tenant.token, "--json"]).stdout
            let rows = try #require(try JSONParser.parse(Array(cli.utf8)).arrayValue)
            #expect(
                rows.compactMap { $0["request_identifier"]?.stringValue }.sorted() == [
                    "cli-1", "mass-1", "outage-2026-11", "outage-2026-11-b",
                ])
            let audit = try service.cli.expectSuccess(["audit", "--account", tenant.email]).stdout
            for action in [
                "apple.set_app_account_token", "apple.extend_renewal_date", "apple.mass_extend_renewal_date",
            ] {
                #expect(audit.contains(action), "\(action) is audited")
            }
            #expect(!audit.contains("PRIVATE KEY"))
        }
    }

    @Test("the customer page extends a renewal date and looks up the app transaction", arguments: StoreKind.available)
    func theCustomerPageAsksApple(kind: StoreKind) async throws {
        try await ServerAPIAnswersTests.withServerAPI(kind) { service, fake in
            let tenant = try ServerAPIAnswersTests.tenant(service, ["--product", "\(Self.monthly)=auto_renewable:pro"])
            let bought = try Self.period(service, "7300", expires: Date().addingTimeInterval(10 * 86_400))
            _ = try await EntitlementAPITests.verify(service, tenant, bought, user: "alice")
            let cookie = try await NotificationSetupPageTests.signIn(service, tenant)
            let app = try service.cli.expectSuccess(["app", "show", tenant.token, "--json"]).jsonObject()
            let appID = try #require(app["id"]?.stringValue)
            let html = try await service.post(
                "/account/customers?app=\(appID)&user=alice", body: "", headers: cookie, method: .GET
            ).text
            #expect(html.contains(#"id="extend-form""#) && html.contains(#"<option value="7300">"#))
            let csrf = try NotificationSetupPageTests.csrf(html)
            let hidden = "csrf=\(csrf)&app=\(appID)&user=alice&original_transaction_id=&environment="

            let effective = Int64((Date().addingTimeInterval(17 * 86_400).timeIntervalSince1970 * 1_000).rounded(.down))
            let renewsAt = Date().addingTimeInterval(10 * 86_400)
            fake.script(
                "sandbox", try Self.statuses(service, "7300", expires: renewsAt),
                .json(#"{"originalTransactionId":"7300","success":true,"effectiveDate":\#(effective)}"#),
                .error(503), .error(503), .error(503), .error(503))
            #expect(html.contains(#"name="request_identifier" value=""#))
            let form = hidden + "&subscription=7300&days=7&reason=other&request_identifier=page-1"
            let extended = try await service.post("/account/customers/extend", body: form, headers: cookie)
            #expect(extended.httpStatus == 200)
            #expect(extended.text.contains("Apple extended 7300 by 7 days"), "\(extended.text)")
            // The same form sent again (a double click, a reload) is answered from the record: one PUT.
            let again = try await service.post("/account/customers/extend", body: form, headers: cookie)
            #expect(again.text.contains("Apple extended 7300 by 7 days"))
            #expect(fake.received.filter { $0.method == "PUT" }.count == 1)
            #expect(extended.text.contains("<td>extended</td>") && extended.text.contains("account \(tenant.email)"))
            let put = try #require(fake.received.first { $0.method == "PUT" })
            #expect(put.path == "/inApps/v1/subscriptions/extend/7300")
            #expect(try JSONParser.parse(Array(put.body.utf8))["extendReasonCode"] == .integer(2))

            // Apple refuses a second extension beyond its limit: said on the page, nothing else changes.
            fake.script(
                "sandbox", try Self.statuses(service, "7300", expires: renewsAt), .error(400, appleCode: 4_030_005))
            let refused = try await service.post(
                "/account/customers/extend",
                body: hidden + "&subscription=7300&days=7&reason=other&request_identifier=page-2", headers: cookie)
            #expect(refused.httpStatus == 422)
            #expect(refused.text.contains("most extensions Apple allows"), "\(refused.text)")

            var appTransaction = JWSBuilder()
            appTransaction.payload = .appTransaction
            fake.script(
                "sandbox",
                .json(#"{"signedAppTransactionInfo":"\#(try appTransaction.build(signedBy: service.jwsPKI))"}"#))
            let info = try await service.post(
                "/account/customers/app-transaction", body: hidden + "&transaction_id=7300", headers: cookie)
            #expect(info.httpStatus == 200)
            #expect(info.text.contains(#"id="app-transaction""#) && info.text.contains("704528340000000001"))
            // Another account's app is not reachable through the form.
            let stranger = try await service.post(
                "/account/customers/extend",
                body: "csrf=\(csrf)&app=\(UUID().uuidString)&user=alice&subscription=7300&days=7&reason=other",
                headers: cookie)
            #expect(stranger.httpStatus == 404)
            let audit = try service.cli.expectSuccess(["audit", "--account", tenant.email]).stdout
            #expect(audit.contains("apple.extend_renewal_date") && audit.contains(tenant.email))
        }
    }
}
