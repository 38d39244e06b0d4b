import Foundation
import NIOHTTP1
import ReceiptCore
import ReceiptTestKit
import TestSupport
import Testing

/// App Store Server Notifications through the real server, to a customer's receiver on loopback: intake, the ledger,
/// subscription statuses, signed webhooks, retries, redelivery, the expiry scheduler, and bad input
/// (docs/notifications.md, docs/webhooks.md).
@Suite struct NotificationAPITests {
    static let day: TimeInterval = 86_400

    /// A notification of `type` about one subscription's transaction, signed by the service's JWS test PKI.
    static func notification(
        _ service: LiveService, _ type: String, subtype: String? = nil, uuid: String = UUID().uuidString,
        transactionID: String = "2000000000000001", original: String = "2000000000000001", signedAt: Date = Date(),
        expires: Date = Date().addingTimeInterval(30 * day), revokedAt: Date? = nil,
        bundleID: String = "com.example.app", productType: String = "Auto-Renewable Subscription"
    ) throws -> String {
        var item = JWSBuilder()
        item.transactionID = transactionID
        item.originalTransactionID = original
        item.bundleID = bundleID
        item.signedDate = signedAt
        item.purchaseDate = signedAt.addingTimeInterval(-60)
        item.expiresDate = productType == "Auto-Renewable Subscription" ? expires : nil
        item.type = productType
        if let revokedAt { item.revocation = (revokedAt, 1, "REFUND_FULL", nil) }
        var builder = JWSBuilder()
        builder.payload = .notification
        builder.bundleID = bundleID
        builder.notificationType = type
        builder.notificationSubtype = subtype
        builder.notificationUUID = uuid
        builder.signedDate = signedAt
        builder.signedTransactionInfo = try item.build(signedBy: service.jwsPKI)
        return try builder.build(signedBy: service.jwsPKI)
    }

    static func send(_ service: LiveService, _ token: String, _ signedPayload: String) async throws
        -> LiveService.Answer
    {
        var body = JSONObject(capacity: 1)
        body.append("signedPayload", .string(signedPayload))
        return try await service.post("/notifications/\(token)", json: body)
    }

    /// Adds a webhook endpoint through the CLI; returns its id and secret.
    static func addEndpoint(_ service: LiveService, _ token: String, url: String, _ extra: [String] = []) throws
        -> (id: String, secret: String)
    {
        let added = try service.cli.expectSuccess(
            ["webhooks", "add", "--app", token, "--url", url, "--json"] + extra
        ).jsonObject()
        return (try #require(added["id"]?.stringValue), try #require(added["secret"]?.stringValue))
    }

    static func lookUp(_ service: LiveService, _ tenant: LiveService.Tenant, original: String) async throws
        -> JSONObject
    {
        try await service.post(
            "/api/transactions",
            form: [("apikey", tenant.apiKey), ("token", tenant.token), ("original_transaction_id", original)]
        ).json()
    }

    @Test(
        "a notification signed before the retention is a duplicate that changes nothing: a replay after the purge is not taken twice (S14)",
        arguments: StoreKind.available)
    func replayAfterThePurgeChangesNothing(kind: StoreKind) async throws {
        try await withLiveService(kind, serveArguments: ["--retention-notifications-days", "10"]) { service in
            let tenant = try service.tenant(appArguments: ["--allow-test-data"])
            // Signed 12 days ago: recorded then, purged since; Apple no longer retries it.
            let old = try Self.notification(
                service, "ONE_TIME_CHARGE", transactionID: "2000000000000101", original: "2000000000000101",
                signedAt: Date().addingTimeInterval(-12 * Self.day), productType: "Consumable")
            let replayed = try await Self.send(service, tenant.token, old)
            #expect(replayed.httpStatus == 200)
            let json = try replayed.json()
            #expect(json["duplicate"] == .bool(true) && json["events"] == nil)
            let looked = try await Self.lookUp(service, tenant, original: "2000000000000101")
            #expect(looked["transactions"]?.arrayValue?.isEmpty == true)
            // Signed 8 days ago, within the retention (and a day's margin for the clocks): recorded as ever.
            let recent = try Self.notification(
                service, "ONE_TIME_CHARGE", transactionID: "2000000000000102", original: "2000000000000102",
                signedAt: Date().addingTimeInterval(-8 * Self.day), productType: "Consumable")
            let taken = try await Self.send(service, tenant.token, recent).json()
            #expect(taken["duplicate"] == .bool(false))
            let known = try await Self.lookUp(service, tenant, original: "2000000000000102")
            #expect(known["transactions"]?.arrayValue?.count == 1)
        }
    }

    @Test("a notification reaches the ledger, the status and a signed webhook", arguments: StoreKind.available)
    func notificationToLedgerToWebhook(kind: StoreKind) async throws {
        try await FakeWebhookReceiver.run { receiver, receiverURL in
            try await withLiveService(kind) { service in
                let tenant = try service.tenant(appArguments: ["--allow-test-data"])
                let hook = try Self.addEndpoint(service, tenant.token, url: receiverURL + "/hook")
                receiver.expect(secret: hook.secret, on: "/hook")
                let statuses = try Self.addEndpoint(
                    service, tenant.token, url: receiverURL + "/statuses", ["--event", "subscription.*"])
                receiver.expect(secret: statuses.secret, on: "/statuses")

                let subscribed = try Self.notification(service, "SUBSCRIBED", subtype: "INITIAL_BUY", uuid: "n-1")
                let answer = try await Self.send(service, tenant.token, subscribed)
                #expect(answer.httpStatus == 200)
                let json = try answer.json()
                #expect(json["status"] == .integer(0) && json["duplicate"] == .bool(false))
                #expect(json["events"] == .integer(3))
                // Apple's retry of the same notification changes nothing.
                let retry = try await Self.send(service, tenant.token, subscribed).json()
                #expect(retry["duplicate"] == .bool(true))

                #expect(try await receiver.wait { $0.filter { $0.path == "/hook" }.count >= 3 })
                let hooked = receiver.accepted(on: "/hook")
                #expect(
                    Set(hooked.map(\.type)) == ["notification", "transaction.created", "subscription.status_changed"])
                #expect(hooked.allSatisfy { $0.isSigned })
                for delivery in hooked {
                    #expect(delivery.body["id"] == .string(delivery.eventID))
                    #expect(delivery.body["type"] == .string(delivery.type))
                    #expect(delivery.body["environment"] == .string("Xcode"))
                }
                let forwarded = try #require(hooked.first { $0.type == "notification" })
                #expect(forwarded.body["data"]?["notification_type"] == .string("SUBSCRIBED"))
                #expect(forwarded.body["data"]?["subtype"] == .string("INITIAL_BUY"))
                #expect(forwarded.body["data"]?["transaction"]?["transactionId"] == .string("2000000000000001"))
                #expect(forwarded.body["signed_payload"] == nil)
                #expect(try await receiver.wait { $0.contains { $0.path == "/statuses" } })
                #expect(receiver.accepted(on: "/statuses").map(\.type) == ["subscription.status_changed"])
                #expect(
                    receiver.accepted(on: "/statuses").first?.body["data"]?["status"] == .string("active"))

                // The ledger look-up shows the transaction and its subscription's status.
                let looked = try await Self.lookUp(service, tenant, original: "2000000000000001")
                #expect(looked["transactions"]?.arrayValue?.count == 1)
                let status = try #require(looked["subscriptions"]?.arrayValue?.first)
                #expect(status["status"] == .string("active") && status["entitled"] == .bool(true))

                // /api on the signed transaction shows the status too.
                var item = JWSBuilder()
                item.transactionID = "2000000000000001"
                item.originalTransactionID = "2000000000000001"
                let verified = try await service.post(
                    form: [
                        ("apikey", tenant.apiKey), ("token", tenant.token),
                        ("receipt", try item.build(signedBy: service.jwsPKI)),
                    ]
                ).json()
                #expect(verified["status"] == .integer(0))
                #expect(verified["subscriptions"]?.arrayValue?.first?["status"] == .string("active"))

                // Apple refunds it: the ledger says so, the backend hears it, the status is revoked.
                let refund = try Self.notification(
                    service, "REFUND", uuid: "n-2", signedAt: Date().addingTimeInterval(1),
                    revokedAt: Date())
                #expect(try await Self.send(service, tenant.token, refund).httpStatus == 200)
                #expect(try await receiver.wait { $0.contains { $0.type == "transaction.revoked" } })
                let revoked = try await Self.lookUp(service, tenant, original: "2000000000000001")
                #expect(revoked["transactions"]?.arrayValue?.first?["refund_type"] == .string("REFUND_FULL"))
                #expect(revoked["subscriptions"]?.arrayValue?.first?["status"] == .string("revoked"))

                // The CLI lists the events and their deliveries.
                let events = try service.cli.expectSuccess(
                    ["events", "list", "--app", tenant.token, "--json"])
                let listed = try #require(try JSONParser.parse(Array(events.stdout.utf8)).arrayValue)
                #expect(listed.count == 6)
                #expect(
                    try await receiver.wait {
                        $0.filter { $0.path == "/hook" && (200...299).contains($0.answered) }.count == 6
                    })

                let metrics = String(
                    decoding: try await service.post("/metrics", body: "", method: .GET).body, as: UTF8.self)
                #expect(
                    metrics.contains(#"receiptverify_notifications_total{outcome="recorded",type="SUBSCRIBED"} 1"#)
                        || metrics.contains(
                            #"receiptverify_notifications_total{type="SUBSCRIBED",outcome="recorded"} 1"#)
                )
                #expect(metrics.contains("receiptverify_webhook_deliveries_total"))
            }
        }
    }

    @Test("a receiver that was down gets exactly the missed events later", arguments: StoreKind.available)
    func missedEventsAreRedelivered(kind: StoreKind) async throws {
        try await FakeWebhookReceiver.run { receiver, receiverURL in
            try await withLiveService(kind, serveArguments: ["--webhook-retry-seconds", "1"]) { service in
                let tenant = try service.tenant(appArguments: ["--allow-test-data"])
                let hook = try Self.addEndpoint(service, tenant.token, url: receiverURL + "/down")
                receiver.expect(secret: hook.secret, on: "/down")
                receiver.set("/down", .fail(503))
                for index in 0..<2 {
                    let payload = try Self.notification(
                        service, "DID_RENEW", uuid: "renew-\(index)", transactionID: "200000000000001\(index)")
                    #expect(try await Self.send(service, tenant.token, payload).httpStatus == 200)
                }
                // Every event was tried and refused at least once.
                #expect(try await receiver.wait { deliveries in Set(deliveries.map(\.eventID)).count >= 5 })
                let failing = try service.cli.expectSuccess(
                    ["events", "list", "--app", tenant.token, "--state", "pending", "--json"])
                #expect(failing.stdout.contains("\"last_status\":503"))

                receiver.set("/down", .accept)
                let events = Set(receiver.deliveries.map(\.eventID))
                #expect(
                    try await receiver.wait(for: .seconds(30)) { _ in
                        Set(receiver.accepted(on: "/down").map(\.eventID)) == events
                    })
                // Exactly once each after the receiver came back: no event accepted twice.
                try await Task.sleep(for: .seconds(3))
                let accepted = receiver.accepted(on: "/down").map(\.eventID)
                #expect(accepted.count == Set(accepted).count)
                #expect(receiver.accepted(on: "/down").allSatisfy { $0.isSigned })

                // A dead letter comes back on redelivery: here the operator asks for a delivered one by id.
                let again = try #require(accepted.first)
                try service.cli.expectSuccess(
                    ["events", "redeliver", "--app", tenant.token, "--state", "delivered", "--id", again])
                #expect(
                    try await receiver.wait { _ in
                        receiver.accepted(on: "/down").filter { $0.eventID == again }.count == 2
                    })
            }
        }
    }

    @Test(
        "a disabled account's notifications get 401 and its events wait; re-enabled, they are delivered",
        arguments: StoreKind.available)
    func aDisabledAccountStopsEverywhere(kind: StoreKind) async throws {
        try await FakeWebhookReceiver.run { receiver, receiverURL in
            try await withLiveService(kind, serveArguments: ["--webhook-retry-seconds", "1"]) { service in
                let tenant = try service.tenant(appArguments: ["--allow-test-data"])
                let hook = try Self.addEndpoint(service, tenant.token, url: receiverURL + "/held")
                receiver.expect(secret: hook.secret, on: "/held")
                receiver.set("/held", .fail(503))
                let first = try Self.notification(service, "DID_RENEW", uuid: "held-1")
                #expect(try await Self.send(service, tenant.token, first).httpStatus == 200)
                #expect(try await receiver.wait { $0.contains { $0.path == "/held" } })

                try service.cli.expectSuccess(["account", "disable", tenant.email])
                // The attempts in flight end; after that nothing of the account is sent.
                try await Task.sleep(for: .seconds(2))
                receiver.set("/held", .accept)
                let second = try Self.notification(service, "DID_RENEW", uuid: "held-2")
                #expect(try await Self.send(service, tenant.token, second).httpStatus == 401)
                try await Task.sleep(for: .seconds(4))
                #expect(receiver.accepted(on: "/held").isEmpty)

                try service.cli.expectSuccess(["account", "enable", tenant.email])
                #expect(try await Self.send(service, tenant.token, second).httpStatus == 200)
                // The events made before the account was disabled, and the new notification's.
                let listed = try service.cli.expectSuccess(["events", "list", "--app", tenant.token, "--json"])
                let events = Set(
                    try #require(try JSONParser.parse(Array(listed.stdout.utf8)).arrayValue).compactMap {
                        $0["id"]?.stringValue
                    })
                #expect(events.count > 2)
                #expect(try await receiver.wait { _ in Set(receiver.accepted(on: "/held").map(\.eventID)) == events })

                // A locked app: 401 too, and its account cannot enable it; unlocked, it is enabled again by the CLI.
                try service.cli.expectSuccess(["app", "lock", tenant.token])
                let third = try Self.notification(service, "DID_RENEW", uuid: "held-3")
                #expect(try await Self.send(service, tenant.token, third).httpStatus == 401)
                let refused = try service.cli.run(["app", "update", tenant.token, "--enable"])
                #expect(refused.status != 0 && refused.stderr.contains("locked"))
                try service.cli.expectSuccess(["app", "unlock", tenant.token])
                try service.cli.expectSuccess(["app", "update", tenant.token, "--enable"])
                #expect(try await Self.send(service, tenant.token, third).httpStatus == 200)
            }
        }
    }

    @Test("a receiver that hangs with 2,000 deliveries due delays another app's fresh event by seconds at most")
    func aHangingBacklogDoesNotDelayOtherTenants() async throws {
        try await FakeWebhookReceiver.run { receiver, receiverURL in
            try await withLiveService(.sqlite, serveArguments: ["--webhook-timeout", "5"]) { service in
                let stuck = try service.tenant(appArguments: ["--allow-test-data"])
                _ = try Self.addEndpoint(service, stuck.token, url: receiverURL + "/hang", ["--event", "notification"])
                receiver.set("/hang", .hang(.seconds(30)))
                // 2,000 events due for the hanging receiver.
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for worker in 0..<8 {
                        group.addTask {
                            for index in stride(from: worker, to: 2_000, by: 8) {
                                let payload = try Self.notification(service, "TEST", uuid: "backlog-\(index)")
                                let answer = try await Self.send(service, stuck.token, payload)
                                guard answer.httpStatus == 200 else {
                                    throw SetupError("notification \(index) refused")
                                }
                            }
                        }
                    }
                    try await group.waitForAll()
                }
                // The deliverer is at the backlog (the receiver answers nothing for 30 s).
                try await Task.sleep(for: .seconds(2))

                // Another app's fresh event goes out beside the backlog.
                let other = try service.tenant(appArguments: ["--allow-test-data"])
                let good = try Self.addEndpoint(
                    service, other.token, url: receiverURL + "/good", ["--event", "notification"])
                receiver.expect(secret: good.secret, on: "/good")
                let clock = ContinuousClock()
                let sent = clock.now
                let payload = try Self.notification(service, "TEST", uuid: "fresh-1")
                #expect(try await Self.send(service, other.token, payload).httpStatus == 200)
                #expect(try await receiver.wait(for: .seconds(30)) { _ in !receiver.accepted(on: "/good").isEmpty })
                let delay = sent.duration(to: clock.now)
                #expect(delay < .seconds(5), "the fresh event waited \(delay)")
            }
        }
    }

    @Test("hanging, failing and redirecting receivers do not hold the others", arguments: StoreKind.available)
    func badReceiversDoNotBlockOthers(kind: StoreKind) async throws {
        try await FakeWebhookReceiver.run { receiver, receiverURL in
            try await withLiveService(
                kind, serveArguments: ["--webhook-timeout", "2", "--webhook-retry-seconds", "60"]
            ) { service in
                let tenant = try service.tenant(appArguments: ["--allow-test-data"])
                for (path, mode) in [
                    ("/hang", FakeWebhookReceiver.Mode.hang(.seconds(8))), ("/redirect", .redirect),
                    ("/fail", .fail(500)),
                ] {
                    _ = try Self.addEndpoint(
                        service, tenant.token, url: receiverURL + path, ["--event", "notification"])
                    receiver.set(path, mode)
                }
                let good = try Self.addEndpoint(
                    service, tenant.token, url: receiverURL + "/good", ["--event", "notification"])
                receiver.expect(secret: good.secret, on: "/good")
                let started = ContinuousClock.now
                for index in 0..<5 {
                    let payload = try Self.notification(service, "TEST", uuid: "test-\(index)")
                    #expect(try await Self.send(service, tenant.token, payload).httpStatus == 200)
                }
                #expect(try await receiver.wait { _ in receiver.accepted(on: "/good").count == 5 })
                // Well before the hanging receiver's 8 s for each of the five events, were deliveries made in turn.
                #expect(ContinuousClock.now - started < .seconds(20))
                // The redirect was not followed, and each failure waits for its retry.
                // (Each event's redirect is tried once, when its batch gets to it.)
                #expect(try await receiver.wait { $0.filter { $0.path == "/redirect" }.count == 5 })
                var pending = ""
                for _ in 0..<50 where !pending.contains("timed out") {
                    try await Task.sleep(for: .milliseconds(200))
                    pending = try service.cli.expectSuccess(
                        ["events", "list", "--app", tenant.token, "--state", "pending", "--json"]
                    ).stdout
                }
                #expect(pending.contains("redirects are not followed"))
                #expect(pending.contains("timed out"))
            }
        }
    }

    @Test("refused notifications are budgeted per address and per app")
    func refusedNotificationsAreBudgeted() async throws {
        try await withLiveService(
            .sqlite, serveArguments: ["--auth-failures-per-second", "2", "--trusted-proxies", "127.0.0.1/32"]
        ) { service in
            let tenant = try service.tenant(appArguments: ["--allow-test-data"])
            let path = "/notifications/\(tenant.token)"
            func post(_ body: String, from address: String) async throws -> Int {
                try await service.post(
                    path, body: body, contentType: "application/json", headers: [("X-Forwarded-For", address)]
                ).httpStatus
            }
            // A stranger's forged notifications: refused, then past its address's budget 429 without a check.
            let forged =
                #"{"signedPayload":"\#(try JWSBuilder().build(signedBy: try TestPKI(TestPKI.Options(keyType: .p256))))"}"#
            var statuses: [Int] = []
            for _ in 0..<6 { statuses.append(try await post(forged, from: "203.0.113.1")) }
            #expect(statuses.prefix(2).allSatisfy { $0 == 400 || $0 == 403 }, "\(statuses)")
            #expect(statuses.last == 429, "\(statuses)")
            // Apple, from another address, is not held back by it.
            var body = JSONObject(capacity: 1)
            body.append("signedPayload", .string(try Self.notification(service, "TEST", uuid: "budget-1")))
            let genuine = JSONValue.object(body).encodedString
            #expect(try await post(genuine, from: "17.0.0.5") == 200)
            // Strangers at many addresses together spend the app's budget (ten addresses' worth): sent together, so
            // that a slow machine's pace cannot stay under the refill. Each address posts once, within its own
            // budget: a 429 among them is the app's. Apple's next post, from an address of its own, finds the app's
            // budget spent; the budget refills a unit every 50 ms, so on a loaded machine the burst is sent again
            // (at most three times) until Apple's post follows it within that time.
            var bursts: [[Int]] = []
            var apple: [Int] = []
            for round in 0..<3 where !apple.contains(429) {
                bursts.append(
                    try await withThrowingTaskGroup(of: Int.self) { group in
                        for index in 0..<60 {
                            group.addTask { try await post(forged, from: "198.51.\(100 + round).\(index)") }
                        }
                        return try await group.reduce(into: [Int]()) { $0.append($1) }
                    })
                apple.append(try await post(genuine, from: "17.0.0.6"))
            }
            #expect(bursts.allSatisfy { $0.filter { $0 == 429 }.count >= 20 }, "\(bursts)")
            #expect(apple.contains(429), "\(apple)")
            // The budget refills: Apple's retry is taken.
            try await Task.sleep(for: .seconds(2))
            #expect(try await post(genuine, from: "17.0.0.6") == 200)
        }
    }

    @Test("bad notifications are refused and store nothing", arguments: StoreKind.available)
    func badNotificationsAreRefused(kind: StoreKind) async throws {
        try await withLiveService(kind) { service in
            let tenant = try service.tenant(appArguments: ["--allow-test-data"])
            let path = "/notifications/\(tenant.token)"
            #expect(try await service.post(path, body: "not json", contentType: "application/json").httpStatus == 400)
            #expect(try await service.post(path, body: #"{"x":1}"#, contentType: "application/json").httpStatus == 400)
            let transaction = try JWSBuilder().build(signedBy: service.jwsPKI)
            #expect(try await Self.send(service, tenant.token, transaction).httpStatus == 400)
            var tampered = try Self.notification(service, "DID_RENEW")
            tampered.removeLast(3)
            tampered += "AAA"
            let inauthentic = try await Self.send(service, tenant.token, tampered)
            #expect(inauthentic.httpStatus == 403)
            #expect(try inauthentic.json()["description"] == .string("The notification is not authentic"))
            let otherApp = try await Self.send(
                service, tenant.token, try Self.notification(service, "DID_RENEW", bundleID: "com.example.other"))
            #expect(otherApp.httpStatus == 403)
            // Test-signed data is refused by an app that does not allow it.
            let strict = try service.tenant()
            #expect(
                try await Self.send(service, strict.token, try Self.notification(service, "TEST")).httpStatus == 403)
            #expect(
                try await Self.send(service, "app_unknown", try Self.notification(service, "TEST")).httpStatus == 401)
            let huge = #"{"signedPayload":""# + String(repeating: "a", count: 70_000) + #""}"#
            #expect(try await service.post(path, body: huge, contentType: "application/json").httpStatus == 413)
            for token in [tenant.token, strict.token] {
                let events = try service.cli.expectSuccess(["events", "list", "--app", token, "--json"])
                #expect(events.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "[]")
            }
            // An unknown future type, and RESCIND_CONSENT without data, are recorded, not refused.
            #expect(
                try await Self.send(service, tenant.token, try Self.notification(service, "SOMETHING_NEW")).httpStatus
                    == 200)
            var appTransaction = JWSBuilder()
            appTransaction.payload = .appTransaction
            var rescind = JWSBuilder()
            rescind.payload = .notification
            rescind.notificationType = "RESCIND_CONSENT"
            rescind.signedDate = Date()
            rescind.signedAppTransactionInfo = try appTransaction.build(signedBy: service.jwsPKI)
            let rescinded = try await Self.send(service, tenant.token, try rescind.build(signedBy: service.jwsPKI))
            #expect(rescinded.httpStatus == 200)
        }
    }

    @Test("a subscription whose expiry passes without renewal is expired, and told", arguments: StoreKind.available)
    func expiryScheduler(kind: StoreKind) async throws {
        try await FakeWebhookReceiver.run { receiver, receiverURL in
            try await withLiveService(kind) { service in
                let tenant = try service.tenant(appArguments: ["--allow-test-data"])
                let hook = try Self.addEndpoint(
                    service, tenant.token, url: receiverURL + "/status", ["--event", "subscription.status_changed"])
                receiver.expect(secret: hook.secret, on: "/status")
                let payload = try Self.notification(
                    service, "SUBSCRIBED", signedAt: Date(), expires: Date().addingTimeInterval(2))
                #expect(try await Self.send(service, tenant.token, payload).httpStatus == 200)
                #expect(
                    try await receiver.wait {
                        $0.contains { $0.body["data"]?["status"] == .string("expired") }
                    })
                let states = receiver.accepted(on: "/status").map { $0.body["data"]?["status"]?.stringValue ?? "" }
                #expect(states == ["active", "expired"])
                let looked = try await Self.lookUp(service, tenant, original: "2000000000000001")
                #expect(looked["subscriptions"]?.arrayValue?.first?["status"] == .string("expired"))

                // A renewal signed before the expiry, arriving late, renews all the same.
                let renewal = try Self.notification(
                    service, "DID_RENEW", transactionID: "2000000000000002", signedAt: Date().addingTimeInterval(-1),
                    expires: Date().addingTimeInterval(30 * Self.day))
                #expect(try await Self.send(service, tenant.token, renewal).httpStatus == 200)
                let renewed = try await Self.lookUp(service, tenant, original: "2000000000000001")
                #expect(renewed["subscriptions"]?.arrayValue?.first?["status"] == .string("active"))
            }
        }
    }

    @Test("two servers on one PostgreSQL deliver each event once")
    func twoServersDeliverEachEventOnce() async throws {
        guard StoreKind.available.contains(.postgres) else { return }
        try await FakeWebhookReceiver.run { receiver, receiverURL in
            try await withLiveService(.postgres) { service in
                let second = try await service.startServer(logName: "second.log")
                defer { _ = second.stop() }
                let tenant = try service.tenant(appArguments: ["--allow-test-data"])
                let hook = try Self.addEndpoint(service, tenant.token, url: receiverURL + "/once")
                receiver.expect(secret: hook.secret, on: "/once")
                var expected = 0
                for index in 0..<20 {
                    var body = JSONObject(capacity: 1)
                    body.append(
                        "signedPayload",
                        .string(try Self.notification(service, "TEST", uuid: "two-\(index)")))
                    let base = index.isMultiple(of: 2) ? service.baseURL : second.baseURL
                    let answer = try await service.post(
                        "/notifications/\(tenant.token)", body: JSONValue.object(body).encodedString,
                        contentType: "application/json", baseURL: base)
                    #expect(answer.httpStatus == 200)
                }
                // Each notification's event, and the first one's transaction and status events.
                let listed = try service.cli.expectSuccess(["events", "list", "--app", tenant.token, "--json"])
                expected = try #require(try JSONParser.parse(Array(listed.stdout.utf8)).arrayValue).count
                #expect(expected == 22)
                #expect(try await receiver.wait { _ in receiver.accepted(on: "/once").count >= expected })
                try await Task.sleep(for: .seconds(3))
                let ids = receiver.accepted(on: "/once").map(\.eventID)
                #expect(ids.count == expected)
                #expect(Set(ids).count == expected)
            }
        }
    }

    @Test("reconciliation records what Apple could not deliver, once", arguments: StoreKind.available)
    func reconciliationRecordsMissedNotifications(kind: StoreKind) async throws {
        try await ServerAPIAnswersTests.withServerAPI(kind, bundleID: "com.example.app") { service, fake in
            let tenant = try ServerAPIAnswersTests.tenant(service)
            let delivered = try Self.notification(service, "DID_RENEW", uuid: "delivered")
            #expect(try await Self.send(service, tenant.token, delivered).httpStatus == 200)
            let missed = try Self.notification(
                service, "DID_RENEW", uuid: "missed", transactionID: "2000000000000002")
            let refund = try Self.notification(
                service, "REFUND", uuid: "missed-refund", transactionID: "2000000000000002",
                signedAt: Date().addingTimeInterval(1), revokedAt: Date())
            let item = { (payload: String) in #"{"signedPayload":"\#(payload)","sendAttempts":[]}"# }
            fake.script(
                "production",
                .json(
                    #"{"notificationHistory":[\#(item(delivered)),\#(item(missed))],"hasMore":true,"paginationToken":"p2"}"#
                ),
                .json(#"{"notificationHistory":[\#(item(refund))],"hasMore":false}"#))
            fake.script("sandbox", .json(#"{"notificationHistory":[],"hasMore":false}"#))
            let storeKit = [
                "--production-url", fake.baseURL + "/production", "--sandbox-url", fake.baseURL + "/sandbox",
                "--trust-anchors", service.anchors.path, "--allow-test-data",
            ]
            let day = String(RFC3339.string(Date().addingTimeInterval(-86_400)).prefix(10))
            let report = try service.cli.expectSuccess(
                ["notifications", "reconcile", "--app", tenant.token, "--since", day, "--json"] + storeKit
            ).jsonObject()
            #expect(report["found"] == .integer(3))
            #expect(report["recorded"] == .integer(2))
            #expect(report["duplicates"] == .integer(1))
            let asked = fake.received.filter { $0.path == "/inApps/v1/notifications/history" }
            #expect(asked.map(\.environment) == ["production", "production", "sandbox"])
            #expect(asked.allSatisfy { $0.body.contains(#""onlyFailures":true"#) })

            // What was missed is in the ledger now, refund included, marked as found in the history.
            let looked = try await Self.lookUp(service, tenant, original: "2000000000000001")
            let rows = looked["transactions"]?.arrayValue ?? []
            #expect(rows.count == 2)
            #expect(rows.contains { $0["transaction_id"] == .string("2000000000000002") && $0["refunded_at"] != nil })
            let events = try service.cli.expectSuccess(["events", "list", "--app", tenant.token, "--json"])
            #expect(events.stdout.contains(#""source":"history""#))
            // A second run finds nothing new.
            fake.script(
                "production", .json(#"{"notificationHistory":[\#(item(missed))],"hasMore":false}"#))
            fake.script("sandbox", .json(#"{"notificationHistory":[],"hasMore":false}"#))
            let again = try service.cli.expectSuccess(
                ["notifications", "reconcile", "--app", tenant.token, "--since", day, "--json"] + storeKit
            ).jsonObject()
            #expect(again["recorded"] == .integer(0) && again["duplicates"] == .integer(1))

            // A TEST notification is asked of Apple.
            fake.script("sandbox", .json(#"{"testNotificationToken":"ce3af791-365e-4c60-841b-1674b43c1609"}"#))
            let test = try service.cli.expectSuccess(
                ["notifications", "request-test", "--app", tenant.token] + storeKit)
            #expect(
                test.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "ce3af791-365e-4c60-841b-1674b43c1609")
            #expect(fake.received.last?.path == "/inApps/v1/notifications/test" && fake.received.last?.method == "POST")

            // `notifications test` asks, then waits for Apple's result of the token it got.
            fake.script(
                "sandbox", .json(#"{"testNotificationToken":"tok_1"}"#),
                .json(#"{"signedPayload":"x","sendAttempts":[]}"#),
                .json(#"{"signedPayload":"x","sendAttempts":[{"attemptDate":1,"sendAttemptResult":"SUCCESS"}]}"#))
            let tested = try service.cli.expectSuccess(
                ["notifications", "test", "--app", tenant.token, "--wait", "20", "--json"] + storeKit
            ).jsonObject()
            #expect(tested["send_attempts"] == .array([.string("SUCCESS")]))
            #expect(fake.received.last?.path == "/inApps/v1/notifications/test/tok_1")
            fake.script(
                "sandbox", .json(#"{"testNotificationToken":"tok_2"}"#),
                .json(#"{"signedPayload":"x","sendAttempts":[{"attemptDate":1,"sendAttemptResult":"TLS_ISSUE"}]}"#))
            let failed = try service.cli.run(
                ["notifications", "test", "--app", tenant.token, "--wait", "20"] + storeKit)
            #expect(failed.status == 1 && failed.stdout.contains("TLS_ISSUE"))

            // `notifications list` shows what arrived, newest first, the recovered ones marked; `recover` is the
            // reconciliation's name.
            let listed = try service.cli.expectSuccess(["notifications", "list", "--app", tenant.token, "--json"])
            let items = try #require(try JSONParser.parse(Array(listed.stdout.utf8)).arrayValue)
            #expect(
                Set(items.compactMap { $0["notification_uuid"]?.stringValue }) == [
                    "delivered", "missed", "missed-refund",
                ])
            #expect(items.first { $0["notification_uuid"] == .string("missed") }?["source"] == .string("history"))
            #expect(items.first { $0["notification_uuid"] == .string("delivered") }?["source"] == .string("apple"))
            fake.script("production", .json(#"{"notificationHistory":[],"hasMore":false}"#))
            fake.script("sandbox", .json(#"{"notificationHistory":[],"hasMore":false}"#))
            let recovered = try service.cli.expectSuccess(
                ["notifications", "recover", "--app", tenant.token, "--since", day, "--json"] + storeKit
            ).jsonObject()
            #expect(recovered["found"] == .integer(0))
        }
    }

    @Test("ledger changes made by /api become events for the endpoints that take them", arguments: StoreKind.available)
    func ledgerChangesBecomeEvents(kind: StoreKind) async throws {
        try await FakeWebhookReceiver.run { receiver, receiverURL in
            try await withLiveService(kind) { service in
                let tenant = try service.tenant(appArguments: ["--allow-test-data", "--claims", "transfer"])
                let hook = try Self.addEndpoint(
                    service, tenant.token, url: receiverURL + "/ledger",
                    ["--event", "transaction.*", "--event", "claim.*"])
                receiver.expect(secret: hook.secret, on: "/ledger")
                let receipt = try LedgerAPITests.receipt(service, count: 2)
                _ = try await LedgerAPITests.call(service, tenant, receipt: receipt, user: "alice")
                _ = try await LedgerAPITests.call(service, tenant, receipt: receipt, user: "bob")
                #expect(try await receiver.wait { _ in receiver.accepted(on: "/ledger").count >= 4 })
                try await Task.sleep(for: .seconds(2))
                // Two purchases of two original transactions: each new once, each claim moved once.
                let received = receiver.accepted(on: "/ledger")
                #expect(
                    received.map(\.type).sorted() == [
                        "claim.transferred", "claim.transferred", "transaction.created", "transaction.created",
                    ])
                let transfer = try #require(received.first { $0.type == "claim.transferred" })
                #expect(transfer.body["data"]?["previous_user"] == .string("alice"))
                #expect(transfer.body["data"]?["app_user_id"] == .string("bob"))
                #expect(received.allSatisfy { $0.isSigned })

                // An app without endpoints keeps no events of its ledger.
                let quiet = try service.tenant(appArguments: ["--allow-test-data"])
                _ = try await LedgerAPITests.call(service, quiet, receipt: receipt)
                let events = try service.cli.expectSuccess(["events", "list", "--app", quiet.token, "--json"])
                #expect(events.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "[]")
            }
        }
    }

    @Test("Apple's real notification is recorded at its nested items' date", arguments: StoreKind.available)
    func applesRealNotification(kind: StoreKind) async throws {
        guard let fixtures = SharedFixtures.directory else {
            if SharedFixtures.isCI { Issue.record("no fixtures at \(SharedFixtures.path)") }
            return
        }
        let text = try String(
            contentsOf: fixtures.appendingPathComponent("jws/apple_notification_did_renew_2022.jws"), encoding: .utf8
        ).trimmingCharacters(in: .whitespacesAndNewlines)
        // Notifications kept for ever: signed in 2022, it is otherwise older than the retention, and a duplicate that
        // changes nothing (security review S14).
        try await withLiveService(kind, serveArguments: ["--retention-notifications-days", "0"]) { service in
            let tenant = try service.tenant(
                appArguments: ["--bundle-id", "com.audaos.audarecorder", "--environment", "sandbox"])
            let answer = try await Self.send(service, tenant.token, text)
            #expect(answer.httpStatus == 200)
            #expect(try answer.json()["notification_uuid"] == .string("469bf30e-7715-4f9f-aae3-a7bfc12aea77"))
            let looked = try await Self.lookUp(service, tenant, original: "2000000000842607")
            let row = try #require(looked["transactions"]?.arrayValue?.first)
            #expect(row["transaction_id"] == .string("2000000004047119"))
            #expect(row["environment"] == .string("Sandbox"))
            // Its subscription expired in 2022: the status says so.
            #expect(looked["subscriptions"]?.arrayValue?.first?["status"] == .string("expired"))
            // A production-only app refuses it.
            let production = try service.tenant(
                appArguments: ["--bundle-id", "com.audaos.audarecorder", "--environment", "production"])
            #expect(try await Self.send(service, production.token, text).httpStatus == 403)
        }
    }
}
