import Foundation
import ReceiptCore
import ReceiptTestKit
import TestSupport
import Testing

/// Customers and entitlements through the real server (docs/api.md, "Customers and entitlements"): a catalog set with
/// the CLI, StoreKit 2 transactions, renewal info and notifications signed by the service's test PKI, and the
/// `customer` of `/api`, `/apiencrypted`, `POST /api/customers` and `receiptverify customers show`, on both stores.
@Suite struct EntitlementAPITests {
    static let day: TimeInterval = 86_400
    static let monthly = "com.example.app.monthly"
    static let lifetime = "com.example.app.lifetime"
    static let coins = "com.example.app.coins"
    static let catalog = [
        "--product", "\(monthly)=auto_renewable:pro", "--product", "\(lifetime)=non_consumable:pro,no_ads",
        "--product", "\(coins)=consumable", "--product", "com.example.app.season=non_renewing/P30D:season",
    ]

    /// A signed StoreKit 2 transaction.
    static func transaction(
        _ service: LiveService, id: String, original: String? = nil, product: String = monthly,
        purchased: Date = Date(), expires: Date? = nil, type: String = "Auto-Renewable Subscription",
        ownership: String = "PURCHASED", offer: (Int, String?)? = nil, revokedAt: Date? = nil
    ) throws -> String {
        var item = JWSBuilder()
        item.transactionID = id
        item.originalTransactionID = original ?? id
        item.productID = product
        item.signedDate = Date()
        item.purchaseDate = purchased
        item.expiresDate = expires
        item.type = type
        item.ownershipType = ownership
        item.offer = offer.map { (type: $0.0, discount: $0.1) }
        if let revokedAt { item.revocation = (revokedAt, 0, "REFUND_FULL", nil) }
        return try item.build(signedBy: service.jwsPKI)
    }

    /// A signed notification about `transaction`, with renewal info when given.
    static func notification(
        _ service: LiveService, _ type: String, subtype: String? = nil, transaction: String,
        renewal: String? = nil, signedAt: Date = Date()
    ) throws -> String {
        var builder = JWSBuilder()
        builder.payload = .notification
        builder.notificationType = type
        builder.notificationSubtype = subtype
        builder.notificationUUID = UUID().uuidString
        builder.signedDate = signedAt
        builder.signedTransactionInfo = transaction
        builder.signedRenewalInfo = renewal
        return try builder.build(signedBy: service.jwsPKI)
    }

    static func verify(_ service: LiveService, _ tenant: LiveService.Tenant, _ receipt: String, user: String)
        async throws -> JSONObject
    {
        let answer = try await service.post(
            form: [
                ("apikey", tenant.apiKey), ("token", tenant.token), ("receipt", receipt), ("app_user_id", user),
            ])
        #expect(answer.httpStatus == 200)
        return try answer.json()
    }

    static func customer(_ service: LiveService, _ tenant: LiveService.Tenant, _ fields: [(String, String)])
        async throws -> LiveService.Answer
    {
        try await service.post(
            "/api/customers", form: [("apikey", tenant.apiKey), ("token", tenant.token)] + fields)
    }

    /// A date as answers write it, to the millisecond (JWS dates are whole milliseconds, rounded down).
    static func rfc3339(_ date: Date) -> String {
        AppleDate.rfc3339(milliseconds: Int64((date.timeIntervalSince1970 * 1_000).rounded(.down)))
    }

    static func entitlement(_ customer: JSONValue?, _ name: String) -> JSONValue? {
        customer?["entitlements"]?.arrayValue?.first { $0["name"] == .string(name) }
    }

    @Test(
        "a subscription's life: trial, grace, refund, and the lifetime purchase that outlasts it",
        arguments: StoreKind.available)
    func aSubscriptionsLife(kind: StoreKind) async throws {
        try await withLiveService(kind) { service in
            let tenant = try service.tenant(appArguments: ["--allow-test-data"] + Self.catalog)
            // A free trial bought now, for a week.
            let trialEnd = Date().addingTimeInterval(7 * Self.day)
            let trial = try Self.transaction(service, id: "7100", expires: trialEnd, offer: (1, "FREE_TRIAL"))
            let answer = try await Self.verify(service, tenant, trial, user: "u1")
            let customer = try #require(answer["customer"])
            #expect(customer["app_user_id"] == .string("u1") && customer["environment"] == .string("Xcode"))
            let pro = try #require(Self.entitlement(customer, "pro"))
            #expect(pro["active"] == .bool(true) && pro["period_type"] == .string("trial"))
            #expect(pro["product_id"] == .string(Self.monthly) && pro["store"] == .string("app_store"))
            #expect(pro["expires_at"]?.stringValue == Self.rfc3339(trialEnd))
            #expect(customer["subscriptions"]?.arrayValue?.first?["status"] == .string("active"))

            // The renewal fails; Apple grants a grace period.
            let graceEnd = trialEnd.addingTimeInterval(16 * Self.day)
            var renewal = JWSBuilder()
            renewal.payload = .renewalInfo
            renewal.originalTransactionID = "7100"
            renewal.productID = Self.monthly
            renewal.isInBillingRetryPeriod = true
            renewal.expiresDate = graceEnd
            renewal.signedDate = Date()
            let failed = try Self.notification(
                service, "DID_FAIL_TO_RENEW", subtype: "GRACE_PERIOD", transaction: trial,
                renewal: try renewal.build(signedBy: service.jwsPKI), signedAt: Date().addingTimeInterval(1))
            #expect(try await NotificationAPITests.send(service, tenant.token, failed).httpStatus == 200)
            let inGrace = try await Self.customer(service, tenant, [("app_user_id", "u1")])
            #expect(inGrace.httpStatus == 200)
            let graced = try #require(Self.entitlement(try inGrace.json()["customer"], "pro"))
            #expect(graced["active"] == .bool(true) && graced["billing_issue_detected_at"]?.stringValue != nil)
            #expect(graced["grace_period_expires_at"]?.stringValue == Self.rfc3339(graceEnd))

            // Apple refunds it: it ends at once.
            let refunded = try Self.transaction(
                service, id: "7100", expires: trialEnd, offer: (1, "FREE_TRIAL"), revokedAt: Date())
            let refund = try Self.notification(
                service, "REFUND", transaction: refunded, signedAt: Date().addingTimeInterval(2))
            #expect(try await NotificationAPITests.send(service, tenant.token, refund).httpStatus == 200)
            let after = try await Self.customer(service, tenant, [("app_user_id", "u1")]).json()
            let ended = try #require(Self.entitlement(after["customer"], "pro"))
            #expect(ended["active"] == .bool(false) && ended["refunded_at"]?.stringValue != nil)
            #expect(after["customer"]?["subscriptions"]?.arrayValue?.first?["status"] == .string("revoked"))

            // A lifetime purchase grants pro again, for good, and no_ads; coins grant nothing.
            let forever = try Self.transaction(service, id: "7200", product: Self.lifetime, type: "Non-Consumable")
            _ = try await Self.verify(service, tenant, forever, user: "u1")
            let coins = try Self.transaction(service, id: "7300", product: Self.coins, type: "Consumable")
            let last = try await Self.verify(service, tenant, coins, user: "u1")
            let lifetimePro = try #require(Self.entitlement(last["customer"], "pro"))
            #expect(lifetimePro["active"] == .bool(true) && lifetimePro["expires_at"] == .null)
            #expect(lifetimePro["product_id"] == .string(Self.lifetime))
            #expect(Self.entitlement(last["customer"], "no_ads")?["active"] == .bool(true))
            let purchases = try #require(last["customer"]?["purchases"]?.arrayValue)
            #expect(purchases.map { $0["type"] } == [.string("non_consumable"), .string("consumable")])

            // The CLI shows the same customer.
            let shown = try service.cli.expectSuccess(["customers", "show", tenant.token, "u1", "--json"])
                .jsonObject()
            var routed = try #require(
                try await Self.customer(service, tenant, [("app_user_id", "u1")]).json()["customer"]?.objectValue)
            var printed = shown
            routed["computed_at"] = nil
            printed["computed_at"] = nil
            #expect(printed == routed)
            let table = try service.cli.expectSuccess(["customers", "show", tenant.token, "u1"]).stdout
            #expect(table.contains("ENTITLEMENTS") && table.contains("no_ads") && table.contains("never"))
        }
    }

    @Test(
        "family sharing, expiry, sandbox apart, an unknown product, and /apiencrypted",
        arguments: StoreKind.available)
    func theOtherStates(kind: StoreKind) async throws {
        try await withLiveService(kind) { service in
            let tenant = try service.tenant(
                appArguments: ["--allow-test-data", "--cipher", "aes-256-cbc"] + Self.catalog
                    + ["--product", "com.example.app.other"])
            // A family member presents the lifetime purchase shared with them: it is theirs.
            let shared = try Self.transaction(
                service, id: "8100", product: Self.lifetime, type: "Non-Consumable", ownership: "FAMILY_SHARED")
            let family = try await Self.verify(service, tenant, shared, user: "member")
            let noAds = try #require(Self.entitlement(family["customer"], "no_ads"))
            #expect(noAds["active"] == .bool(true) && noAds["ownership_type"] == .string("FAMILY_SHARED"))
            #expect(
                Self.entitlement(
                    try await Self.customer(service, tenant, [("app_user_id", "other")]).json()["customer"], "no_ads")
                    == nil)

            // A subscription whose period ended long ago is inactive, and the answer says so once.
            let old = try Self.transaction(
                service, id: "8200", purchased: Date().addingTimeInterval(-60 * Self.day),
                expires: Date().addingTimeInterval(-30 * Self.day))
            let expired = try await Self.verify(service, tenant, old, user: "lapsed")
            #expect(Self.entitlement(expired["customer"], "pro")?["active"] == .bool(false))
            #expect(expired["customer"]?["subscriptions"]?.arrayValue?.first?["status"] == .string("expired"))

            // A product outside the catalog's terms is reported and grants nothing.
            let unknown = try Self.transaction(
                service, id: "8300", product: "com.example.app.other", type: "Non-Consumable")
            let reported = try await Self.verify(service, tenant, unknown, user: "lapsed")
            #expect(reported["customer"]?["unknown_products"] == .array([]))
            #expect(reported["customer"]?["purchases"]?.arrayValue?.first?["entitlements"] == .array([]))

            // Sandbox facts are never in the Xcode (test) customer, nor the other way round.
            let sandbox = try await Self.customer(
                service, tenant, [("app_user_id", "member"), ("environment", "Sandbox")]
            ).json()
            #expect(sandbox["customer"]?["entitlements"] == .array([]))
            #expect(sandbox["customer"]?["environment"] == .string("Sandbox"))
            // Money review M17: a customer with test facts only is shown them without `environment`, and each
            // entitlement says where it was bought; asked for Production, the view is empty.
            let unasked = try await Self.customer(service, tenant, [("app_user_id", "member")]).json()
            let granted = try #require(unasked["customer"]?["entitlements"]?.arrayValue)
            #expect(!granted.isEmpty && granted.allSatisfy { $0["environment"] == .string("Xcode") }, "\(unasked)")
            let production = try await Self.customer(
                service, tenant, [("app_user_id", "member"), ("environment", "Production")]
            ).json()
            #expect(production["customer"]?["entitlements"] == .array([]))

            // Inside the ciphertext of /apiencrypted.
            let sealed = try await service.post(
                "/apiencrypted",
                form: [
                    ("apikey", tenant.apiKey), ("token", tenant.token), ("receipt", shared),
                    ("app_user_id", "member"),
                ])
            let bytes = try #require(Data(base64Encoded: sealed.text))
            let opened = try EncryptedAPITests.opensslDecryptCBC(Array(bytes), key: tenant.resultKey)
            let decrypted = try #require(try JSONParser.parse(opened).objectValue)
            #expect(Self.entitlement(decrypted["customer"], "no_ads")?["active"] == .bool(true))

            // By original transaction, without a user.
            let byOriginal = try await Self.customer(service, tenant, [("original_transaction_id", "8100")]).json()
            #expect(byOriginal["customer"]?["app_user_id"] == .null)
            #expect(byOriginal["customer"]?["original_transaction_id"] == .string("8100"))
            #expect(Self.entitlement(byOriginal["customer"], "pro")?["active"] == .bool(true))
        }
    }

    @Test("POST /api/customers refuses bad input and is metered as its own endpoint", arguments: StoreKind.available)
    func refusalsAndMetering(kind: StoreKind) async throws {
        try await withLiveService(kind) { service in
            let tenant = try service.tenant(appArguments: ["--allow-test-data"] + Self.catalog)
            let missing = try await Self.customer(service, tenant, [])
            #expect(missing.httpStatus == 400)
            #expect(try missing.json()["status"] == .integer(400))
            let badEnvironment = try await Self.customer(
                service, tenant, [("app_user_id", "u1"), ("environment", "Staging")])
            #expect(badEnvironment.httpStatus == 400)
            let stranger = try await service.post(
                "/api/customers", form: [("apikey", "rv_wrong"), ("token", tenant.token), ("app_user_id", "u1")])
            #expect(stranger.httpStatus == 401)
            let unknownUser = try await Self.customer(service, tenant, [("app_user_id", "nobody")])
            #expect(unknownUser.httpStatus == 200)
            #expect(try unknownUser.json()["customer"]?["entitlements"] == .array([]))

            // An app without a catalog: every product is reported, none grants anything.
            let open = try service.tenant(appArguments: ["--allow-test-data"])
            let bought = try Self.transaction(service, id: "9100", product: Self.lifetime, type: "Non-Consumable")
            let uncataloged = try await Self.verify(service, open, bought, user: "u1")
            #expect(uncataloged["customer"]?["unknown_products"] == .array([.string(Self.lifetime)]))
            #expect(uncataloged["customer"]?["entitlements"] == .array([]))

            let noClaims = try service.tenant(appArguments: ["--allow-test-data", "--claims", "off"])
            #expect(try await Self.customer(service, noClaims, [("app_user_id", "u1")]).httpStatus == 400)

            // Counts reach the database within about a second.
            var metered = false
            for _ in 0..<50 where !metered {
                let usage = try service.cli.expectSuccess(["usage", "--account", tenant.email, "--json"]).stdout
                metered = usage.contains("\"customers\"")
                if !metered { try await Task.sleep(for: .milliseconds(200)) }
            }
            #expect(metered)
        }
    }

    @Test(
        "two serve processes on one PostgreSQL: a customer remembered by one sees a purchase recorded by the other",
        .enabled(if: StoreKind.available.contains(.postgres)))
    func aKnownCustomerAcrossServers() async throws {
        try await withLiveService(.postgres) { service in
            let tenant = try service.tenant(appArguments: ["--allow-test-data"] + Self.catalog)
            let first = try await service.startServer(logName: "a.log")
            let second = try await service.startServer(logName: "b.log")
            let look = [("apikey", tenant.apiKey), ("token", tenant.token), ("app_user_id", "u9")]
            let monthly = try Self.transaction(service, id: "9900", expires: Date().addingTimeInterval(Self.day))
            _ = try await service.post(
                to: first,
                form: [("apikey", tenant.apiKey), ("token", tenant.token), ("receipt", monthly), ("app_user_id", "u9")])
            // The second server reads the customer, then answers it from memory.
            for _ in 0..<2 {
                let known = try await service.post(to: second, "/api/customers", form: look).json()
                #expect(Self.entitlement(known["customer"], "no_ads") == nil)
            }
            // The first records a lifetime purchase; the second sees it once the change's announcement arrives.
            let forever = try Self.transaction(service, id: "9901", product: Self.lifetime, type: "Non-Consumable")
            _ = try await service.post(
                to: first,
                form: [("apikey", tenant.apiKey), ("token", tenant.token), ("receipt", forever), ("app_user_id", "u9")])
            var seen = false
            for _ in 0..<40 where !seen {
                let answer = try await service.post(to: second, "/api/customers", form: look).json()
                seen = Self.entitlement(answer["customer"], "no_ads")?["active"] == .bool(true)
                if !seen { try await Task.sleep(for: .milliseconds(50)) }
            }
            #expect(seen)
            #expect(first.stop() == 0, "\(first.logText)")
            #expect(second.stop() == 0, "\(second.logText)")
        }
    }

    @Test(
        "customer.entitlements_changed: told once per change, in the recording's transaction and at expiry",
        arguments: StoreKind.available)
    func entitlementChangesArePushed(kind: StoreKind) async throws {
        try await FakeWebhookReceiver.run { receiver, receiverURL in
            try await withLiveService(kind) { service in
                let tenant = try service.tenant(appArguments: ["--allow-test-data"] + Self.catalog)
                let hook = try NotificationAPITests.addEndpoint(
                    service, tenant.token, url: receiverURL + "/customers", ["--event", "customer.*"])
                receiver.expect(secret: hook.secret, on: "/customers")
                func told() -> [JSONObject] {
                    receiver.accepted(on: "/customers").filter { $0.type == "customer.entitlements_changed" }
                        .compactMap { $0.body["data"]?.objectValue }
                }
                // A subscription that ends in a few seconds starts pro: one event, before [] and after [pro].
                let soon = Date().addingTimeInterval(4)
                let monthly = try Self.transaction(service, id: "9500", expires: soon)
                _ = try await Self.verify(service, tenant, monthly, user: "pushed")
                // The same receipt again changes nothing, and tells nothing.
                _ = try await Self.verify(service, tenant, monthly, user: "pushed")
                #expect(try await receiver.wait { _ in told().count >= 1 })
                let started = try #require(told().first)
                #expect(started["app_user_id"] == .string("pushed") && started["before"] == .array([]))
                #expect(started["changed"] == .array([.string("pro")]))
                #expect(
                    Self.entitlement(.object(["entitlements": started["after"] ?? .null]), "pro")?["active"]
                        == .bool(true))

                // The scheduler tells the end when the period passes, without any input.
                #expect(try await receiver.wait(for: .seconds(20)) { _ in told().count >= 2 })
                let ended = try #require(told().dropFirst().first)
                #expect(
                    Self.entitlement(.object(["entitlements": ended["after"] ?? .null]), "pro")?["active"]
                        == .bool(false))
                #expect(
                    Self.entitlement(.object(["entitlements": ended["before"] ?? .null]), "pro")?["active"]
                        == .bool(true))

                // A lifetime purchase restores it; a refund of it ends it again: one event each.
                let forever = try Self.transaction(service, id: "9501", product: Self.lifetime, type: "Non-Consumable")
                _ = try await Self.verify(service, tenant, forever, user: "pushed")
                let refunded = try Self.transaction(
                    service, id: "9501", product: Self.lifetime, type: "Non-Consumable", revokedAt: Date())
                let refund = try Self.notification(service, "REFUND", transaction: refunded)
                #expect(try await NotificationAPITests.send(service, tenant.token, refund).httpStatus == 200)
                #expect(try await receiver.wait { _ in told().count >= 4 })
                try await Task.sleep(for: .seconds(1))
                // The operator moves the (lapsed) subscription to another user, who is told; the first user's pro
                // stays the refunded lifetime purchase's (it ended last), so they are told nothing.
                try service.cli.expectSuccess([
                    "transactions", "claim", "--app", tenant.token, "9500", "--user", "heir",
                ])
                // On a loaded machine a delivery may time out and be retried (30 s later): wait past one retry.
                #expect(try await receiver.wait(for: .seconds(60)) { _ in told().count >= 5 })
                let moved = told().filter { $0["app_user_id"] == .string("heir") }
                #expect(moved.count == 1 && moved.first?["before"] == .array([]))
                #expect(Self.entitlement(.object(["entitlements": moved.first?["after"] ?? .null]), "pro") != nil)

                // Deliveries may arrive in any order: each event is found by what it says, and ordered by its
                // sequence (M10): the user's changes are numbered 1, 2, 3, 4, and the highest says what holds now.
                let noAds = { (event: JSONObject, side: String) in
                    Self.entitlement(.object(["entitlements": event[side] ?? .null]), "no_ads")
                }
                let noAdsAfter = { (event: JSONObject) in noAds(event, "after") }
                let all = told().filter { $0["app_user_id"] == .string("pushed") }
                #expect(all.count == 4)
                func sequence(_ event: JSONObject) -> Int64 {
                    if case .integer(let number)? = event["sequence"] { number } else { 0 }
                }
                #expect(all.map(sequence).sorted() == [1, 2, 3, 4], "\(all)")
                let last = try #require(all.max { sequence($0) < sequence($1) })
                #expect(noAdsAfter(last)?["refunded_at"]?.stringValue != nil, "the last change is the refund: \(last)")
                #expect(moved.first?["sequence"] == .integer(1))

                #expect(
                    all.contains { event in
                        event["changed"] == .array([.string("pro"), .string("no_ads")])
                            && noAds(event, "after")?["active"] == .bool(true)
                    })
                #expect(
                    all.contains { event in
                        noAds(event, "before")?["active"] == .bool(true)
                            && noAds(event, "after")?["refunded_at"]?.stringValue != nil
                    })
            }
        }
    }
}
