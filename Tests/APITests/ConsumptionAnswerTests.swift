import Foundation
import ReceiptCore
import ReceiptTestKit
import TestSupport
import Testing

/// Refund requests answered by the app's policy (docs/notifications.md, "Refund requests"), end to end: a live
/// `serve` whose App Store Server API is a fake Apple on loopback that checks every JWT and records each request
/// body; the backend's consumption report; Apple's `CONSUMPTION_REQUEST` sent twice; one answer, retried past a 503,
/// with its `consumption.answered` event at a webhook receiver.
@Suite struct ConsumptionAnswerTests {
    static let coins = "com.example.app.coins"

    @Test(
        "a refund request is answered once by the app's rules, retried past Apple's 503s",
        arguments: StoreKind.available)
    func aRefundRequestIsAnsweredOnce(kind: StoreKind) async throws {
        try await FakeWebhookReceiver.run { receiver, receiverURL in
            try await ServerAPIAnswersTests.withServerAPI(
                kind, serveArguments: ["--storekit-finish-retry-seconds", "1"]
            ) { service, fake in
                // The consent is the app's to state: a policy without it is refused.
                let refused = try service.cli.run([
                    "app", "add", "--account", "nobody@example.com", "--bundle-id",
                    "com.example.app", "--refund-policy", "rules",
                ])
                #expect(refused.status != 0)
                let tenant = try ServerAPIAnswersTests.tenant(
                    service,
                    [
                        "--refund-policy", "rules", "--consumption-consent", "true", "--sample-content-provided",
                        "true",
                    ])
                let noConsent = try service.cli.run(["app", "update", tenant.token, "--consumption-consent", "false"])
                #expect(noConsent.status != 0 && noConsent.stderr.contains("consent"))
                let shown = try service.cli.expectSuccess(["app", "show", tenant.token, "--json"]).jsonObject()
                #expect(shown["refund_policy"] == .string("rules") && shown["consumption_consent"] == .bool(true))
                let hook = try NotificationAPITests.addEndpoint(
                    service, tenant.token, url: receiverURL + "/refunds", ["--event", "consumption.*"])
                receiver.expect(secret: hook.secret, on: "/refunds")

                // The purchase, delivered at once; the backend says a quarter of it was used.
                var coins = JWSBuilder()
                coins.transactionID = "8100"
                coins.originalTransactionID = "8100"
                coins.productID = Self.coins
                coins.type = "Consumable"
                coins.signedDate = Date()
                let signed = try coins.build(signedBy: service.jwsPKI)
                let answer = try await EntitlementAPITests.verify(service, tenant, signed, user: "u1")
                #expect(ServerAPIAnswersTests.transactions(answer)["8100"]?["deliver"] == .bool(true))
                let reported = try await service.post(
                    "/api/transactions/consumption",
                    form: [
                        ("apikey", tenant.apiKey), ("token", tenant.token), ("transaction_ids", "8100,9999"),
                        ("consumption_percentage", "25000"),
                    ])
                #expect(reported.httpStatus == 200)
                let report = try reported.json()
                #expect(report["transaction_ids"] == .array([.string("8100")]))
                #expect(report["unknown_transaction_ids"] == .array([.string("9999")]))
                let badReport = try await service.post(
                    "/api/transactions/consumption",
                    form: [
                        ("apikey", tenant.apiKey), ("token", tenant.token), ("transaction_id", "8100"),
                        ("consumption_percentage", "250000"),
                    ])
                #expect(badReport.httpStatus == 400)
                #expect(try badReport.json()["description"]?.stringValue?.contains("100000") == true)

                // Apple asks, fails once, and asks again with a new UUID before it hears back.
                // Four 503s outlast the client's own attempts (4): the answer is retried by the service.
                fake.script("sandbox", .error(503), .error(503), .error(503), .error(503), .error(202))
                for _ in 0..<2 {
                    let request = try EntitlementAPITests.notification(
                        service, "CONSUMPTION_REQUEST", transaction: signed)
                    #expect(try await NotificationAPITests.send(service, tenant.token, request).httpStatus == 200)
                }
                func puts() -> [FakeAppStoreServer.Received] {
                    fake.received.filter { $0.method == "PUT" }
                }
                let deadline = Date().addingTimeInterval(30)
                while Date() < deadline, puts().count < 5 {
                    try await Task.sleep(for: .milliseconds(200))
                }
                let sent = puts()
                #expect(sent.count == 5, "\(sent.map(\.path))")
                #expect(sent.allSatisfy { $0.path == "/inApps/v2/transactions/consumption/8100" })
                #expect(fake.badTokens == 0)
                // Apple's body, field by field: consented, a quarter consumed, delivered, prorated (the rules), a
                // sample provided.
                let body = try JSONParser.parse(Array((sent.last?.body ?? "").utf8))
                #expect(
                    body
                        == .object([
                            "customerConsented": .bool(true), "consumptionPercentage": .integer(25_000),
                            "deliveryStatus": .string("DELIVERED"), "refundPreference": .string("GRANT_PRORATED"),
                            "sampleContentProvided": .bool(true),
                        ]))
                // Told to the backend once, with what was sent; never sent again.
                func told() -> [FakeWebhookReceiver.Delivery] {
                    receiver.accepted(on: "/refunds").filter { $0.type == "consumption.answered" }
                }
                #expect(try await receiver.wait { _ in !told().isEmpty })
                #expect(receiver.accepted(on: "/refunds").filter { $0.type == "consumption.requested" }.count == 1)
                let told = told()
                #expect(told.count == 1)
                #expect(told.first?.body["data"]?["state"] == .string("sent"))
                #expect(told.first?.body["data"]?["sent"] == body)
                try await Task.sleep(for: .seconds(3))
                #expect(puts().count == 5)
                let again = try EntitlementAPITests.notification(service, "CONSUMPTION_REQUEST", transaction: signed)
                #expect(try await NotificationAPITests.send(service, tenant.token, again).httpStatus == 200)
                try await Task.sleep(for: .seconds(2))
                #expect(puts().count == 5, "a re-sent request is not answered twice")
                // The operator sees the request and Apple's answer.
                let listed = try service.cli.expectSuccess(["customers", "refunds", tenant.token, "--json"]).stdout
                let rows = try #require(try JSONParser.parse(Array(listed.utf8)).arrayValue)
                #expect(rows.count == 1)
                #expect(rows.first?["state"] == .string("sent") && rows.first?["apple_status"] == .integer(202))
                #expect(rows.first?["requests"] == .integer(3) && rows.first?["attempts"] == .integer(2))
                #expect(rows.first?["sent"] == body)
            }
        }
    }

    /// Money review M2: a renewal recorded by `DID_RENEW` and used through the customer's entitlements, never presented
    /// to `/api`, was delivered; Apple is told so, never `UNDELIVERED_OTHER` with a `GRANT_FULL`.
    @Test("a renewal the customer used is answered delivered, never granted in full", arguments: StoreKind.available)
    func aUsedRenewalIsDelivered(kind: StoreKind) async throws {
        try await ServerAPIAnswersTests.withServerAPI(
            kind, serveArguments: ["--storekit-finish-retry-seconds", "1"]
        ) { service, fake in
            let tenant = try ServerAPIAnswersTests.tenant(
                service,
                [
                    "--refund-policy", "rules", "--consumption-consent", "true", "--product",
                    "\(EntitlementAPITests.monthly)=auto_renewable:pro",
                ])
            let renewal = try EntitlementAPITests.transaction(
                service, id: "8300", original: "8200", purchased: Date().addingTimeInterval(-86_400),
                expires: Date().addingTimeInterval(29 * 86_400))
            let renewed = try EntitlementAPITests.notification(service, "DID_RENEW", transaction: renewal)
            #expect(try await NotificationAPITests.send(service, tenant.token, renewed).httpStatus == 200)
            let request = try EntitlementAPITests.notification(
                service, "CONSUMPTION_REQUEST", transaction: renewal, signedAt: Date().addingTimeInterval(1))
            #expect(try await NotificationAPITests.send(service, tenant.token, request).httpStatus == 200)
            let deadline = Date().addingTimeInterval(30)
            var sent: [FakeAppStoreServer.Received] = []
            while Date() < deadline, sent.isEmpty {
                try await Task.sleep(for: .milliseconds(200))
                sent = fake.received.filter { $0.method == "PUT" }
            }
            let body = try JSONParser.parse(Array(try #require(sent.first?.body).utf8))
            #expect(body["deliveryStatus"] == .string("DELIVERED"), "\(body)")
            #expect(body["refundPreference"] == .string("DECLINE"), "\(body)")
            #expect(body["consumptionPercentage"] == nil)
        }
    }
}
