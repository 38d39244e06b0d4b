import Crypto
import Fakes
import Foundation
import NIOHTTP1
import ReceiptCore
import ReceiptService
import Testing
import TestSupport
import _CryptoExtras

/// Google Play purchases through `/api` on a live server, both stores, against a fake Google speaking the real
/// protocol (token grant checked as Google does, androidpublisher v3 resources answered only to a granted account):
/// one-time products and subscriptions recorded once in the ledger with the store, pending, cancelled and test
/// purchases told apart, the app's checks before Google is asked, and Google's refusals and failures answered
/// clearly.
@Suite struct GooglePlayAPITests {
    static let package = "com.example.android"

    /// A live server pointed at a fake Google, with one account known to Google and granted the package.
    static func withGoogle(
        _ kind: StoreKind, serveArguments: [String] = [],
        _ body: @Sendable (LiveService, FakeGoogle, FakeGoogle.Account) async throws -> Void
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
                ] + serveArguments
            ) { service in
                try await body(service, fake, account)
            }
        }
    }

    /// A tenant whose app sells on Google Play with `account`'s key; `arguments` are more `app add` flags.
    static func tenant(_ service: LiveService, _ account: FakeGoogle.Account, _ arguments: [String] = []) throws
        -> LiveService.Tenant
    {
        let keyFile = service.cli.directory.appendingPathComponent("play-\(UUID().uuidString).json")
        try account.keyFile.write(to: keyFile, atomically: true, encoding: .utf8)
        return try service.tenant(
            appArguments: ["--package-name", package, "--google-service-account-file", keyFile.path] + arguments)
    }

    static func verify(_ service: LiveService, _ tenant: LiveService.Tenant, _ fields: [(String, String)]) async throws
        -> (LiveService.Answer, JSONObject)
    {
        let answer = try await service.post(
            form: [("apikey", tenant.apiKey), ("token", tenant.token), ("store", "google_play")] + fields)
        return (answer, try answer.json())
    }

    /// The `obfuscatedExternalAccountId` an app following Google's advice sets: a one-way hash of its user id, never
    /// the id itself.
    static func hashed(_ user: String) -> String {
        Hex.encode(Array(SHA256.hash(data: Array(("receiptverify-test:" + user).utf8))))
    }

    /// A purchase time as Google states a fresh purchase's: a minute ago (Google refunds one not acknowledged
    /// three days after it, so an older one is past saving).
    static var recentPurchase: Int64 { Int64(Date().timeIntervalSince1970 * 1_000) - 60_000 }

    static func product(
        orderID: String = "GPA.3391-0000-1111-22222", state: Int = 0, testPurchase: Bool = false,
        user: String? = Self.hashed("user-1")
    ) -> String {
        """
        {"kind":"androidpublisher#productPurchase","purchaseTimeMillis":"\(Self.recentPurchase)","purchaseState":\(state),\
        "consumptionState":0,"developerPayload":"","orderId":"\(orderID)","acknowledgementState":0,\
        "quantity":1,"regionCode":"FR"\(testPurchase ? #","purchaseType":0"# : "")\
        \(user.map { #","obfuscatedExternalAccountId":"\#($0)""# } ?? "")}
        """
    }

    static func subscription(
        state: String = "SUBSCRIPTION_STATE_ACTIVE", orderID: String = "GPA.3391-5555-6666-77777",
        expires: String = "2099-01-01T00:00:00.123456Z", renews: Bool = true, user: String = Self.hashed("user-2")
    ) -> String {
        """
        {"kind":"androidpublisher#subscriptionPurchaseV2","regionCode":"FR","startTime":"2026-11-01T10:00:00.5Z",\
        "subscriptionState":"\(state)","latestOrderId":"\(orderID)",\
        "acknowledgementState":"ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED",\
        "externalAccountIdentifiers":{"obfuscatedExternalAccountId":"\(user)"},\
        "lineItems":[{"productId":"premium_monthly","expiryTime":"\(expires)","latestSuccessfulOrderId":"\(orderID)",\
        "autoRenewingPlan":{"autoRenewEnabled":\(renews)},"offerDetails":{"basePlanId":"monthly"}}]}
        """
    }

    @Test(arguments: StoreKind.available)
    func aOneTimeProductIsVerifiedRecordedOnceAndDelivered(kind: StoreKind) async throws {
        try await Self.withGoogle(kind) { service, fake, account in
            let tenant = try Self.tenant(service, account, ["--product", "coins_100=consumable"])
            fake.setProduct(Self.package, "coins_100", token: "tok.one-1", Self.product())
            let fields = [
                ("package_name", Self.package), ("product_id", "coins_100"), ("purchase_token", "tok.one-1"),
                ("app_user_id", "user-1"),
            ]
            let (first, answer) = try await Self.verify(service, tenant, fields)
            #expect(first.httpStatus == 200, "\(first.text)")
            #expect(answer["status"] == .integer(0))
            #expect(answer["store"]?.stringValue == "google_play")
            #expect(answer["environment"]?.stringValue == "Production")
            #expect(answer["assurance"]?.stringValue == "google-play-api")
            #expect(answer["google_play"]?["orderId"]?.stringValue == "GPA.3391-0000-1111-22222")
            let transaction = try #require(answer["transactions"]?.arrayValue?.first)
            #expect(transaction["transaction_id"]?.stringValue == "GPA.3391-0000-1111-22222")
            #expect(transaction["store"]?.stringValue == "google_play")
            #expect(transaction["state"]?.stringValue == "new" && transaction["deliver"] == .bool(true))
            // The backend's user claims it (the purchase's obfuscatedExternalAccountId is a hash of it).
            #expect(answer["customer"]?["app_user_id"]?.stringValue == "user-1")

            // Again: seen, not delivered twice, and Google was asked once (its answer is reused for the cache period).
            let (_, again) = try await Self.verify(service, tenant, fields)
            let seen = try #require(again["transactions"]?.arrayValue?.first)
            #expect(seen["state"]?.stringValue == "seen" && seen["deliver"] == .bool(false))
            #expect(fake.resourceRequests.count == 1 && fake.grants == 1)

            // The ledger holds one Google Play row, claimed by the user.
            let rows = try await service.post(
                "/api/transactions",
                form: [("apikey", tenant.apiKey), ("token", tenant.token), ("app_user_id", "user-1")]
            ).json()
            let row = try #require(rows["transactions"]?.arrayValue?.first)
            #expect(rows["transactions"]?.arrayValue?.count == 1)
            #expect(row["store"]?.stringValue == "google_play" && row["app_user_id"]?.stringValue == "user-1")
        }
    }

    @Test(arguments: StoreKind.available)
    func pendingCancelledTestAndForeignPurchasesAreToldApart(kind: StoreKind) async throws {
        try await Self.withGoogle(kind) { service, fake, account in
            let tenant = try Self.tenant(service, account, ["--environment", "production"])
            func ask(_ token: String, _ more: [(String, String)] = [("purchase_type", "product")]) async throws
                -> (LiveService.Answer, JSONObject)
            {
                try await Self.verify(
                    service, tenant,
                    [("package_name", Self.package), ("product_id", "coins_100"), ("purchase_token", token)] + more)
            }
            fake.setProduct(Self.package, "coins_100", token: "pending", Self.product(orderID: "GPA.1", state: 2))
            let (pending, pendingAnswer) = try await ask("pending")
            #expect(pending.httpStatus == 202 && pendingAnswer["status"] == .integer(202))
            #expect(pendingAnswer["description"]?.stringValue?.contains("pending") == true)
            #expect(pendingAnswer["transactions"] == nil)

            fake.setProduct(Self.package, "coins_100", token: "cancelled", Self.product(orderID: "GPA.2", state: 1))
            let (cancelled, cancelledAnswer) = try await ask("cancelled")
            #expect(cancelled.httpStatus == 403)
            #expect(cancelledAnswer["description"]?.stringValue?.contains("cancelled") == true)

            // A license tester's purchase is the Sandbox environment, which this app does not allow.
            fake.setProduct(
                Self.package, "coins_100", token: "tester", Self.product(orderID: "GPA.3", testPurchase: true))
            let (tester, _) = try await ask("tester")
            #expect(tester.httpStatus == 403)
            let sandboxTenant = try Self.tenant(service, account, ["--environment", "sandbox"])
            let (_, sandbox) = try await Self.verify(
                service, sandboxTenant,
                [
                    ("package_name", Self.package), ("product_id", "coins_100"), ("purchase_token", "tester"),
                    ("purchase_type", "product"),
                ])
            #expect(sandbox["status"] == .integer(0) && sandbox["environment"]?.stringValue == "Sandbox")

            // Refused before Google is asked: another app's package, a missing field, an unknown kind.
            let asked = fake.resourceRequests.count
            let (foreign, foreignAnswer) = try await Self.verify(
                service, tenant,
                [
                    ("package_name", "com.other.app"), ("product_id", "coins_100"), ("purchase_token", "pending"),
                    ("purchase_type", "product"),
                ])
            #expect(foreign.httpStatus == 403)
            #expect(foreignAnswer["description"]?.stringValue?.contains("package_name") == true)
            let (noPackage, _) = try await Self.verify(
                service, tenant, [("product_id", "coins_100"), ("purchase_token", "x"), ("purchase_type", "product")])
            #expect(noPackage.httpStatus == 400)
            let (noKind, noKindAnswer) = try await ask("pending", [])
            #expect(noKind.httpStatus == 400)
            #expect(noKindAnswer["description"]?.stringValue?.contains("purchase_type") == true)
            let (badToken, _) = try await ask("bad token!")
            #expect(badToken.httpStatus == 400)
            #expect(fake.resourceRequests.count == asked)

            // A token Google does not know.
            let (unknown, unknownAnswer) = try await ask("never-issued")
            #expect(unknown.httpStatus == 403)
            #expect(unknownAnswer["description"]?.stringValue?.contains("does not know") == true)

            // The client's Purchase.getOriginalJson() names the package, product and token.
            let original =
                #"{"orderId":"GPA.2","packageName":"com.example.android","productId":"coins_100","purchaseToken":"cancelled"}"#
            let (byJSON, _) = try await Self.verify(
                service, tenant, [("purchase", original), ("purchase_type", "product")])
            #expect(byJSON.httpStatus == 403)
            let (disagreeing, _) = try await Self.verify(
                service, tenant, [("purchase", original), ("purchase_token", "pending"), ("purchase_type", "product")])
            #expect(disagreeing.httpStatus == 400)
        }
    }

    @Test(arguments: StoreKind.available)
    func aSubscriptionGivesItsStatusEntitlementsAndRenewals(kind: StoreKind) async throws {
        try await Self.withGoogle(kind, serveArguments: ["--google-play-cache-seconds", "0"]) {
            service, fake, account in
            let tenant = try Self.tenant(service, account, ["--product", "premium_monthly=auto_renewable:pro"])
            fake.setSubscription(Self.package, token: "sub-1", Self.subscription())
            let fields = [
                ("package_name", Self.package), ("product_id", "premium_monthly"), ("purchase_token", "sub-1"),
                ("app_user_id", "user-2"),
            ]
            let (_, answer) = try await Self.verify(service, tenant, fields)
            #expect(answer["status"] == .integer(0), "\(answer)")
            let first = try #require(answer["transactions"]?.arrayValue?.first)
            #expect(first["original_transaction_id"]?.stringValue == "GPA.3391-5555-6666-77777")
            #expect(first["expires_date_ms"] == .integer(4_070_908_800_123))
            #expect(answer["subscriptions"]?.arrayValue?.first?["status"]?.stringValue == "active")
            let entitlements = answer["customer"]?["entitlements"]?.arrayValue ?? []
            let pro = try #require(entitlements.first { $0["name"]?.stringValue == "pro" })
            #expect(pro["active"] == .bool(true) && pro["store"]?.stringValue == "google_play")
            #expect(pro["expires_at"]?.stringValue?.hasPrefix("2099-01-01T00:00:00") == true)

            // A renewal: a new order of the same original, the status still the subscription's.
            fake.setSubscription(
                Self.package, token: "sub-1", Self.subscription(orderID: "GPA.3391-5555-6666-77777..0"))
            let (_, renewed) = try await Self.verify(service, tenant, fields)
            let renewal = try #require(renewed["transactions"]?.arrayValue?.first)
            #expect(renewal["transaction_id"]?.stringValue == "GPA.3391-5555-6666-77777..0")
            #expect(renewal["original_transaction_id"]?.stringValue == "GPA.3391-5555-6666-77777")
            #expect(renewal["state"]?.stringValue == "new")

            // On hold: the status says so, and the purchase is still Google's to state.
            fake.setSubscription(
                Self.package, token: "sub-1",
                Self.subscription(state: "SUBSCRIPTION_STATE_ON_HOLD", orderID: "GPA.3391-5555-6666-77777..0"))
            let (_, held) = try await Self.verify(service, tenant, fields)
            #expect(held["subscriptions"]?.arrayValue?.first?["status"]?.stringValue == "billing_retry")
        }
    }

    /// An upgrade (a new purchase token linking the old one) takes over the old subscription's rights: the old
    /// subscription is ended, and the customer holds the entitlement once, from the new purchase.
    @Test(arguments: StoreKind.available)
    func anUpgradeEndsTheSubscriptionItReplaces(kind: StoreKind) async throws {
        try await Self.withGoogle(kind) { service, fake, account in
            let tenant = try Self.tenant(
                service, account,
                ["--product", "premium_monthly=auto_renewable:pro", "--product", "premium_yearly=auto_renewable:pro"])
            fake.setSubscription(Self.package, token: "sub-old", Self.subscription(orderID: "GPA.20"))
            _ = try await Self.verify(
                service, tenant,
                [
                    ("package_name", Self.package), ("product_id", "premium_monthly"), ("purchase_token", "sub-old"),
                    ("app_user_id", "user-2"),
                ])
            let upgraded = Self.subscription(orderID: "GPA.21")
                .replacingOccurrences(of: "premium_monthly", with: "premium_yearly")
                .replacingOccurrences(
                    of: #""regionCode":"FR","#, with: #""regionCode":"FR","linkedPurchaseToken":"sub-old","#)
            fake.setSubscription(Self.package, token: "sub-new", upgraded)
            let (_, answer) = try await Self.verify(
                service, tenant,
                [
                    ("package_name", Self.package), ("product_id", "premium_yearly"), ("purchase_token", "sub-new"),
                    ("app_user_id", "user-2"),
                ])
            #expect(answer["status"] == .integer(0), "\(answer)")
            let customer = try #require(answer["customer"])
            let statuses = Dictionary(
                uniqueKeysWithValues: (customer["subscriptions"]?.arrayValue ?? []).compactMap { item in
                    item["original_transaction_id"]?.stringValue.map { ($0, item["status"]?.stringValue ?? "") }
                })
            #expect(statuses["GPA.20"] == "expired", "\(statuses)")
            #expect(statuses["GPA.21"] == "active", "\(statuses)")
            let pro = (customer["entitlements"]?.arrayValue ?? []).filter { $0["name"]?.stringValue == "pro" }
            #expect(pro.count == 1 && pro.first?["original_transaction_id"]?.stringValue == "GPA.21")
            #expect(pro.first?["active"] == .bool(true))
        }
    }

    /// Money review M16: a chain of replacements A→B→C whose middle purchase never reached the ledger (no
    /// notifications set up, B never presented) is read back from Google: presenting C ends A, and the customer holds
    /// the entitlement from C alone.
    @Test(arguments: StoreKind.available)
    func aChainOfUpgradesIsFollowedThroughAPurchaseNeverPresented(kind: StoreKind) async throws {
        try await Self.withGoogle(kind) { service, fake, account in
            let tenant = try Self.tenant(
                service, account,
                ["--product", "premium_monthly=auto_renewable:pro", "--product", "premium_yearly=auto_renewable:pro"])
            func linked(_ orderID: String, to token: String) -> String {
                Self.subscription(orderID: orderID).replacingOccurrences(
                    of: #""regionCode":"FR","#, with: #""regionCode":"FR","linkedPurchaseToken":"\#(token)","#)
            }
            fake.setSubscription(Self.package, token: "sub-a", Self.subscription(orderID: "GPA.30"))
            fake.setSubscription(Self.package, token: "sub-b", linked("GPA.31", to: "sub-a"))
            fake.setSubscription(
                Self.package, token: "sub-c",
                linked("GPA.32", to: "sub-b").replacingOccurrences(of: "premium_monthly", with: "premium_yearly"))
            func verify(_ token: String, _ product: String) async throws -> JSONObject {
                let (_, answer) = try await Self.verify(
                    service, tenant,
                    [
                        ("package_name", Self.package), ("product_id", product), ("purchase_token", token),
                        ("app_user_id", "user-2"),
                    ])
                #expect(answer["status"] == .integer(0), "\(answer)")
                return answer
            }
            _ = try await verify("sub-a", "premium_monthly")
            let answer = try await verify("sub-c", "premium_yearly")
            let customer = try #require(answer["customer"])
            let statuses = Dictionary(
                uniqueKeysWithValues: (customer["subscriptions"]?.arrayValue ?? []).compactMap { item in
                    item["original_transaction_id"]?.stringValue.map { ($0, item["status"]?.stringValue ?? "") }
                })
            #expect(statuses["GPA.30"] == "expired", "\(statuses)")
            #expect(statuses["GPA.32"] == "active", "\(statuses)")
            #expect(statuses["GPA.31"] == nil, "B was never presented: \(statuses)")
            let pro = (customer["entitlements"]?.arrayValue ?? []).filter {
                $0["name"]?.stringValue == "pro" && $0["active"] == .bool(true)
            }
            #expect(pro.map { $0["original_transaction_id"]?.stringValue } == ["GPA.32"], "\(pro)")
        }
    }

    /// A refund or chargeback read from Google's voided purchases revokes the ledger's row as Apple's refunds do, the
    /// list read page by page from a cursor; a purchase the ledger never saw is left alone, and the next read starts at
    /// the newest voided time seen.
    @Test(arguments: StoreKind.available)
    func voidedPurchasesRevokeTheirRows(kind: StoreKind) async throws {
        try await Self.withGoogle(kind, serveArguments: ["--google-voided-poll-seconds", "1"]) {
            service, fake, account in
            let tenant = try Self.tenant(service, account, ["--product", "coins_100=non_consumable:coins"])
            fake.setProduct(Self.package, "coins_100", token: "tok-refund", Self.product(orderID: "GPA.30"))
            let (_, answer) = try await Self.verify(
                service, tenant,
                [("package_name", Self.package), ("product_id", "coins_100"), ("purchase_token", "tok-refund")])
            #expect(answer["transactions"]?.arrayValue?.first?["deliver"] == .bool(true))
            // Voided within Google's 30 days (it lists no older ones).
            let voidedAt = Int64(Date().timeIntervalSince1970 * 1_000) - 86_400_000
            fake.setVoided(
                Self.package,
                pages: [
                    [
                        #"{"kind":"androidpublisher#voidedPurchase","purchaseToken":"never-seen","orderId":"GPA.99","purchaseTimeMillis":"1790000000000","voidedTimeMillis":"\#(voidedAt - 100_000)","voidedSource":0,"voidedReason":1}"#
                    ],
                    [
                        #"{"kind":"androidpublisher#voidedPurchase","purchaseToken":"tok-refund","orderId":"GPA.30","purchaseTimeMillis":"1790000000123","voidedTimeMillis":"\#(voidedAt)","voidedSource":2,"voidedReason":5}"#
                    ],
                ])
            let end = ContinuousClock.now + .seconds(20)
            var refunded: JSONObject?
            while ContinuousClock.now < end {
                let rows = try await service.post(
                    "/api/transactions",
                    form: [("apikey", tenant.apiKey), ("token", tenant.token), ("original_transaction_id", "GPA.30")]
                ).json()
                if case .object(let row)? = rows["transactions"]?.arrayValue?.first, row["refunded_at"] != nil {
                    refunded = row
                    break
                }
                try await Task.sleep(for: .milliseconds(200))
            }
            let row = try #require(refunded, "the voided purchase was not revoked in 20 s")
            #expect(row["reason"] == .integer(5))
            // The next read starts at the newest voided time seen, from the first page.
            let later = ContinuousClock.now + .seconds(10)
            while ContinuousClock.now < later,
                !fake.voidedQueries.contains(where: { $0.contains("startTime=\(voidedAt)") })
            {
                try await Task.sleep(for: .milliseconds(200))
            }
            #expect(fake.voidedQueries.contains { $0.contains("token=page-1") })
            #expect(fake.voidedQueries.contains { $0.contains("startTime=\(voidedAt)") && !$0.contains("token=") })
            // The ledger kept no row of the purchase it never saw, but kept its void (money review M8): presented
            // later, while Google's purchase still reads purchased, it is recorded refunded and never delivered.
            let unknown = try await service.post(
                "/api/transactions",
                form: [("apikey", tenant.apiKey), ("token", tenant.token), ("original_transaction_id", "GPA.99")]
            ).json()
            #expect(unknown["transactions"]?.arrayValue?.isEmpty == true)
            fake.setProduct(Self.package, "coins_100", token: "never-seen", Self.product(orderID: "GPA.99"))
            let (_, late) = try await Self.verify(
                service, tenant,
                [("package_name", Self.package), ("product_id", "coins_100"), ("purchase_token", "never-seen")])
            let item = late["transactions"]?.arrayValue?.first
            #expect(item?["deliver"] == .bool(false), "\(late)")
            let stored = try await service.post(
                "/api/transactions",
                form: [("apikey", tenant.apiKey), ("token", tenant.token), ("original_transaction_id", "GPA.99")]
            ).json()
            let born = stored["transactions"]?.arrayValue?.first
            #expect(born?["refunded_at"] != nil && born?["delivered_at"] == nil, "\(stored)")
            #expect(born?["refund_type"] == JSONValue.string("VOIDED"), "\(stored)")
            #expect(born?["reason"] == JSONValue.integer(1), "\(stored)")
        }
    }

    /// Money review M8: quantity-based partial refunds, which Google lists only when asked for, revoke their share of
    /// a multi-quantity purchase, and a second part the rest (each refund told as `transaction.revoked`).
    @Test(arguments: StoreKind.available)
    func partialRefundsRevokeTheirShare(kind: StoreKind) async throws {
        try await FakeWebhookReceiver.run { receiver, receiverURL in
            try await Self.withGoogle(kind, serveArguments: ["--google-voided-poll-seconds", "1"]) {
                service, fake, account in
                let tenant = try Self.tenant(service, account, ["--product", "coins_100=consumable"])
                let hook = try NotificationAPITests.addEndpoint(service, tenant.token, url: receiverURL + "/hook")
                receiver.expect(secret: hook.secret, on: "/hook")
                let packs = Self.product(orderID: "GPA.40").replacingOccurrences(
                    of: #""quantity":1"#, with: #""quantity":10"#)
                fake.setProduct(Self.package, "coins_100", token: "tok-packs", packs)
                let (_, answer) = try await Self.verify(
                    service, tenant,
                    [("package_name", Self.package), ("product_id", "coins_100"), ("purchase_token", "tok-packs")])
                #expect(answer["transactions"]?.arrayValue?.first?["deliver"] == .bool(true), "\(answer)")
                let first = Int64(Date().timeIntervalSince1970 * 1_000) - 3_600_000
                func void(_ quantity: Int, at time: Int64) -> String {
                    #"{"kind":"androidpublisher#voidedPurchase","purchaseToken":"tok-packs","orderId":"GPA.40","purchaseTimeMillis":"1790000000123","voidedTimeMillis":"\#(time)","voidedSource":0,"voidedReason":0,"voidedQuantity":\#(quantity)}"#
                }
                func row(until done: (JSONObject) -> Bool) async throws -> JSONObject? {
                    let end = ContinuousClock.now + .seconds(20)
                    while ContinuousClock.now < end {
                        let rows = try await service.post(
                            "/api/transactions",
                            form: [
                                ("apikey", tenant.apiKey), ("token", tenant.token),
                                ("original_transaction_id", "GPA.40"),
                            ]
                        ).json()
                        if case .object(let row)? = rows["transactions"]?.arrayValue?.first, done(row) { return row }
                        try await Task.sleep(for: .milliseconds(200))
                    }
                    return nil
                }
                fake.setVoided(Self.package, pages: [[void(4, at: first)]])
                let part = try #require(
                    try await row { $0["refunded_at"] != nil }, "4 of 10 refunded was not revoked in 20 s")
                #expect(part["refund_type"] == .string("VOIDED_QUANTITY"), "\(part)")
                #expect(part["refund_percentage"] == .integer(40), "\(part)")
                #expect(fake.voidedQueries.allSatisfy { $0.contains("includeQuantityBasedPartialRefund=true") })
                // The rest refunded: the two parts add up to the whole purchase.
                fake.setVoided(Self.package, pages: [[void(4, at: first), void(6, at: first + 60_000)]])
                let whole = try #require(
                    try await row { $0["refund_type"] == .string("VOIDED") }, "the rest was not revoked in 20 s")
                #expect(whole["refund_percentage"] == nil, "\(whole)")
                #expect(
                    try await receiver.wait { $0.filter { $0.type == "transaction.revoked" }.count >= 2 },
                    "\(receiver.accepted(on: "/hook").map(\.type))")
                let revoked = receiver.accepted(on: "/hook").filter { $0.type == "transaction.revoked" }
                #expect(revoked.count == 2)
            }
        }
    }

    /// Money review M15: a cursor left more than 30 days behind (a month of failures) starts again at the oldest
    /// time Google lists, instead of asking a start Google refuses (400) forever.
    @Test(arguments: StoreKind.available)
    func aCursorLeftBehindStartsAgainWithinGooglesThirtyDays(kind: StoreKind) async throws {
        try await Self.withGoogle(kind, serveArguments: ["--google-voided-poll-seconds", "1"]) {
            service, fake, account in
            _ = try Self.tenant(service, account, ["--product", "coins_100=non_consumable:coins"])
            // The first read's newest voided time is 40 days old: the next read's start would be refused.
            let old = Int64(Date().timeIntervalSince1970 * 1_000) - 40 * 86_400_000
            fake.setVoided(
                Self.package,
                pages: [
                    [
                        #"{"kind":"androidpublisher#voidedPurchase","purchaseToken":"gone","orderId":"GPA.98","purchaseTimeMillis":"\#(old - 1_000)","voidedTimeMillis":"\#(old)","voidedSource":0,"voidedReason":1}"#
                    ]
                ])
            let oldest = Int64(Date().timeIntervalSince1970 * 1_000) - 30 * 86_400_000
            func starts() -> [Int64] {
                fake.voidedQueries.compactMap { query in
                    query.split(separator: "&").first { $0.hasPrefix("startTime=") }
                        .flatMap { Int64($0.dropFirst("startTime=".count)) }
                }
            }
            let end = ContinuousClock.now + .seconds(20)
            while ContinuousClock.now < end, !starts().contains(where: { $0 >= oldest }) {
                try await Task.sleep(for: .milliseconds(200))
            }
            #expect(starts().contains { $0 >= oldest }, "\(fake.voidedQueries)")
            #expect(!starts().contains { $0 < oldest }, "a refused start was asked: \(fake.voidedQueries)")
            let metrics = try await service.post("/metrics", body: "", method: .GET)
            #expect(metrics.text.contains("receiptverify_google_voided_gaps_total"), "\(metrics.text)")
        }
    }

    @Test(arguments: StoreKind.available)
    func aRefusedKeyAndGooglesFailuresAreAnsweredClearly(kind: StoreKind) async throws {
        try await Self.withGoogle(kind, serveArguments: ["--google-play-cache-seconds", "0"]) {
            service, fake, account in
            // A key Google does not know: a 500 naming the key, not retryable, and not asked again in a loop.
            let stranger = try FakeGoogle.Account.make("stranger")
            let refusedTenant = try Self.tenant(service, stranger)
            let fields = [
                ("package_name", Self.package), ("product_id", "coins_100"), ("purchase_token", "tok"),
                ("purchase_type", "product"),
            ]
            for _ in 0..<3 {
                let (refused, answer) = try await Self.verify(service, refusedTenant, fields)
                #expect(refused.httpStatus == 500)
                #expect(answer["description"]?.stringValue?.contains("service account key") == true)
                #expect(answer["retryable"] == nil)
            }
            #expect(fake.grants == 1 && fake.refusedAssertions == ["unknown service account"])

            // Google's failures of the moment are retryable 500s; an account without access to the package is told.
            let tenant = try Self.tenant(service, account)
            fake.setProduct(Self.package, "coins_100", token: "tok", Self.product())
            fake.fail(503, 429)
            for _ in 0..<2 {
                let (failed, answer) = try await Self.verify(service, tenant, fields)
                #expect(failed.httpStatus == 500 && answer["retryable"] == .bool(true), "\(answer)")
            }
            let (_, valid) = try await Self.verify(service, tenant, fields)
            #expect(valid["status"] == .integer(0))
            let outsider = try FakeGoogle.Account.make("outsider")
            fake.add(outsider)
            let outsiderTenant = try Self.tenant(service, outsider)
            let (denied, deniedAnswer) = try await Self.verify(service, outsiderTenant, fields)
            #expect(denied.httpStatus == 500)
            #expect(deniedAnswer["description"]?.stringValue?.contains("Play Console") == true)
            // No key at all: the app is told how to set one.
            let bare = try service.tenant(appArguments: ["--package-name", Self.package])
            let (keyless, keylessAnswer) = try await Self.verify(service, bare, fields)
            #expect(keyless.httpStatus == 403)
            #expect(keylessAnswer["description"]?.stringValue?.contains("service account key") == true)
        }
    }

    /// Google refunds a purchase not acknowledged within three days: a delivered one is acknowledged by the server
    /// (at once in `once` mode, on the backend's confirmation in `confirm` mode), retried after a failure, and never
    /// asked when Google says it is acknowledged already; the ledger shows where each stands.
    @Test(arguments: StoreKind.available)
    func deliveredPurchasesAreAcknowledgedOnceRetriedAndShown(kind: StoreKind) async throws {
        try await Self.withGoogle(kind, serveArguments: ["--google-acknowledge-retry-seconds", "1"]) {
            service, fake, account in
            let tenant = try Self.tenant(
                service, account, ["--product", "coins_100=consumable", "--product", "sword=non_consumable"])
            func waitFor(_ what: String, _ condition: () -> Bool) async throws {
                let end = ContinuousClock.now + .seconds(20)
                while !condition() {
                    guard ContinuousClock.now < end else { throw SetupError("\(what) did not happen in 20 s") }
                    try await Task.sleep(for: .milliseconds(100))
                }
            }
            func row(_ tenant: LiveService.Tenant, _ id: String) async throws -> JSONObject? {
                let rows = try await service.post(
                    "/api/transactions",
                    form: [("apikey", tenant.apiKey), ("token", tenant.token), ("original_transaction_id", id)]
                ).json()
                guard case .object(let row)? = rows["transactions"]?.arrayValue?.first else { return nil }
                return row
            }
            // Once mode: delivered by the answer, acknowledged after one failure of Google's.
            fake.failAcknowledgements(503)
            fake.setProduct(Self.package, "sword", token: "tok-ack", Self.product(orderID: "GPA.10"))
            let (_, answer) = try await Self.verify(
                service, tenant,
                [("package_name", Self.package), ("product_id", "sword"), ("purchase_token", "tok-ack")])
            #expect(answer["transactions"]?.arrayValue?.first?["deliver"] == .bool(true))
            try await waitFor("the acknowledgement") {
                fake.acknowledged.contains("\(Self.package)/products/sword/tok-ack")
            }
            let acknowledged = try #require(try await row(tenant, "GPA.10")?["google_acknowledgement"])
            #expect(acknowledged["state"]?.stringValue == "acknowledged" && acknowledged["attempts"] == .integer(2))
            #expect(fake.consumed.isEmpty)

            // A consumable of the catalog is consumed once delivered (which acknowledges it), so it can be bought
            // again; not acknowledged besides.
            fake.setProduct(Self.package, "coins_100", token: "tok-eat", Self.product(orderID: "GPA.13"))
            _ = try await Self.verify(
                service, tenant,
                [("package_name", Self.package), ("product_id", "coins_100"), ("purchase_token", "tok-eat")])
            try await waitFor("the consumption") {
                fake.consumed == ["\(Self.package)/products/coins_100/tok-eat"]
            }
            let eaten = try #require(try await row(tenant, "GPA.13")?["google_acknowledgement"])
            #expect(eaten["state"]?.stringValue == "acknowledged" && eaten["attempts"] == .integer(1))
            #expect(!fake.acknowledged.contains { $0.hasSuffix("/tok-eat") })

            // Already acknowledged by Google (the app did it on the device): never asked.
            fake.setProduct(
                Self.package, "sword", token: "tok-done",
                Self.product(orderID: "GPA.11").replacingOccurrences(
                    of: #""acknowledgementState":0"#, with: #""acknowledgementState":1"#))
            _ = try await Self.verify(
                service, tenant,
                [("package_name", Self.package), ("product_id", "sword"), ("purchase_token", "tok-done")])
            let done = try #require(try await row(tenant, "GPA.11")?["google_acknowledgement"])
            #expect(done["state"]?.stringValue == "acknowledged" && done["attempts"] == .integer(0))

            // Confirm mode: nothing until the backend confirms the delivery; a subscription's own endpoint then.
            let confirming = try Self.tenant(
                service, account, ["--delivery", "confirm", "--product", "premium_monthly=auto_renewable:pro"])
            fake.setSubscription(
                Self.package, token: "sub-ack",
                Self.subscription(orderID: "GPA.12").replacingOccurrences(
                    of: "ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED", with: "ACKNOWLEDGEMENT_STATE_PENDING"))
            _ = try await Self.verify(
                service, confirming,
                [("package_name", Self.package), ("product_id", "premium_monthly"), ("purchase_token", "sub-ack")])
            try await Task.sleep(for: .seconds(2))
            #expect(!fake.acknowledged.contains { $0.hasSuffix("/sub-ack") })
            #expect(try await row(confirming, "GPA.12")?["google_acknowledgement"] == nil)
            let confirmed = try await service.post(
                "/api/transactions/delivered",
                form: [("apikey", confirming.apiKey), ("token", confirming.token), ("transaction_ids", "GPA.12")])
            #expect(confirmed.httpStatus == 200, "\(confirmed.text)")
            try await waitFor("the subscription's acknowledgement") {
                fake.acknowledged.contains("\(Self.package)/subscriptions/premium_monthly/sub-ack")
            }
            #expect(fake.acknowledged.count == 2 && fake.consumed.count == 1)
        }
    }

    /// The client's purchase JSON with the Play licensing key's signature (SHA1withRSA): checked before Google is
    /// asked where the app has the key, a changed byte or a missing signature refused, the key refused by the CLI
    /// when it is not an RSA key.
    @Test(arguments: StoreKind.available)
    func aPurchaseJSONMustCarryTheLicensingKeysSignature(kind: StoreKind) async throws {
        let licensing = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        let publicKey = licensing.publicKey.derRepresentation.base64EncodedString()
        try await Self.withGoogle(kind) { service, fake, account in
            let tenant = try Self.tenant(
                service, account, ["--product", "coins_100=consumable", "--google-license-key", publicKey])
            fake.setProduct(Self.package, "coins_100", token: "tok-lic", Self.product(orderID: "GPA.77"))
            let purchase =
                #"{"orderId":"GPA.77","packageName":"\#(Self.package)","productId":"coins_100","purchaseTime":1790000000123,"purchaseState":0,"purchaseToken":"tok-lic","quantity":1,"acknowledged":false}"#
            func sign(_ text: String) throws -> String {
                let signature = try licensing.signature(
                    for: Insecure.SHA1.hash(data: Array(text.utf8)), padding: .insecurePKCS1v1_5)
                return signature.rawRepresentation.base64EncodedString()
            }
            let (unsigned, unsignedJSON) = try await Self.verify(service, tenant, [("purchase", purchase)])
            #expect(unsigned.httpStatus == 400)
            #expect(unsignedJSON["description"]?.stringValue?.hasPrefix("signature") == true)
            let changed = purchase.replacingOccurrences(of: #""quantity":1"#, with: #""quantity":2"#)
            let (forged, forgedJSON) = try await Self.verify(
                service, tenant, [("purchase", changed), ("signature", try sign(purchase))])
            #expect(forged.httpStatus == 403, "\(forged.text)")
            #expect(forgedJSON["description"]?.stringValue?.contains("licensing key") == true)
            #expect(fake.resourceRequests.isEmpty, "Google was asked about a purchase whose signature failed")
            let (signed, signedJSON) = try await Self.verify(
                service, tenant, [("purchase", purchase), ("signature", try sign(purchase))])
            #expect(signed.httpStatus == 200 && signedJSON["status"] == .integer(0), "\(signed.text)")
            // A token alone names no signed JSON: Google's answer decides, as without a key.
            let (byToken, _) = try await Self.verify(
                service, tenant,
                [("package_name", Self.package), ("product_id", "coins_100"), ("purchase_token", "tok-lic")])
            #expect(byToken.httpStatus == 200)
            let bad = try service.cli.run(["app", "update", tenant.token, "--google-license-key", "bm90IGEga2V5"])
            #expect(bad.status != 0 && bad.stderr.contains("Play licensing key"), "\(bad.stderr)")
            _ = try service.cli.expectSuccess(["app", "update", tenant.token, "--google-license-key", ""])
        }
    }
}
