import Crypto
import Foundation
import NIOHTTP1
import ReceiptCore
import ReceiptTestKit
import TestSupport
import Testing

/// `/api` with Apple's server-side truth, end to end: a live `serve` whose App Store Server API is a fake Apple on
/// loopback that checks every JWT. Enriched answers (history → `latest_receipt_info`, statuses →
/// `pending_renewal_info`, the ledger learning Apple's transactions), a burst costing Apple one request, Apple out of
/// reach, look-ups by id with their `assurance`, and the `verifyReceipt` drop-in.
@Suite struct ServerAPIAnswersTests {
    static let bundleID = "com.example.app"

    /// Runs `body` against a live service of `kind` whose App Store Server API is a fake Apple that takes JWTs for
    /// `bundleID`.
    static func withServerAPI(
        _ kind: StoreKind, bundleID: String = bundleID, serveArguments: [String] = [],
        _ body: @Sendable (LiveService, FakeAppStoreServer) async throws -> Void
    ) async throws {
        try await FakeAppStoreServer.run(
            publicKey: AppStoreServerAPITests.appKey.publicKey, issuerID: AppStoreServerAPITests.issuerID,
            bundleID: bundleID
        ) { fake, base in
            try await withLiveService(
                kind,
                serveArguments: [
                    "--storekit-production-url", base + "/production", "--storekit-sandbox-url", base + "/sandbox",
                ] + serveArguments
            ) { service in try await body(service, fake) }
        }
    }

    /// An app with App Store Server API credentials (the fake's key) and `arguments`.
    static func tenant(_ service: LiveService, _ arguments: [String] = []) throws -> LiveService.Tenant {
        let keyFile = service.cli.directory.appendingPathComponent("apple-key-\(UUID().uuidString).p8")
        try AppStoreServerAPITests.appKey.pemRepresentation.write(to: keyFile, atomically: true, encoding: .utf8)
        return try service.tenant(
            appArguments: [
                "--allow-test-data", "--apple-issuer-id", AppStoreServerAPITests.issuerID, "--apple-key-id",
                "ABC123DEFG", "--apple-private-key-file", keyFile.path,
            ] + arguments)
    }

    static let base = RFC3339.date("2023-05-01T00:00:00Z")

    /// A signed transaction of the test PKI.
    static func transaction(
        _ id: String, original: String = "1000000000", type: String = "Auto-Renewable Subscription",
        product: String = "com.example.app.monthly", hoursAfterBase hours: Double, revoked: Bool = false,
        appAccountToken: String? = nil, bundleID: String? = nil, environment: String? = nil
    ) throws -> String {
        var builder = JWSBuilder()
        builder.appAccountToken = appAccountToken
        if let bundleID { builder.bundleID = bundleID }
        if let environment { builder.environment = environment }
        builder.transactionID = id
        builder.originalTransactionID = original
        builder.type = type
        builder.productID = product
        builder.purchaseDate = base.addingTimeInterval(hours * 3_600)
        if type == "Auto-Renewable Subscription" {
            builder.expiresDate = base.addingTimeInterval(hours * 3_600 + 30 * 86_400)
        }
        if revoked { builder.revocation = (base.addingTimeInterval(hours * 3_600 + 600), 1, "REFUND_FULL", nil) }
        return try builder.build(signedBy: try sharedJWSPKI.get())
    }

    /// Apple's history of a customer holding `transactions` (oldest first), served page by page in the order asked.
    static func history(_ transactions: [String]) -> FakeAppStoreServer.Reply {
        .history(transactions, bundleID: bundleID)
    }

    /// Apple's subscription statuses answer: one group, the subscription's last transaction and renewal info.
    static func statuses(transaction: String, winBackOffers: [String]) throws -> FakeAppStoreServer.Reply {
        var renewal = JWSBuilder()
        renewal.payload = .renewalInfo
        renewal.originalTransactionID = "1000000000"
        renewal.eligibleWinBackOfferIDs = winBackOffers
        let item: JSONObject = [
            "originalTransactionId": .string("1000000000"), "status": .integer(1),
            "signedTransactionInfo": .string(transaction),
            "signedRenewalInfo": .string(try renewal.build(signedBy: try sharedJWSPKI.get())),
        ]
        let group: JSONObject = [
            "subscriptionGroupIdentifier": .string("21000000"), "lastTransactions": .array([.object(item)]),
        ]
        let answer: JSONObject = [
            "environment": .string("Sandbox"), "bundleId": .string(bundleID), "data": .array([.object(group)]),
        ]
        return .json(JSONValue.object(answer).encodedString)
    }

    /// Scripts the fake with a customer whose subscription renewed after the receipt was made and whose coins were
    /// refunded; returns the renewal's transaction id.
    static func scriptCustomer(_ fake: FakeAppStoreServer) throws {
        let renewal = try transaction("1000000010", hoursAfterBase: 48)
        fake.script(
            "production",
            history([
                try transaction("1000000000", hoursAfterBase: 0),
                try transaction(
                    "1000000001", original: "1000000001", type: "Consumable", product: "com.example.app.coins",
                    hoursAfterBase: 1, revoked: true),
                try transaction("1000000002", hoursAfterBase: 24),
                renewal,
            ]),
            try statuses(transaction: renewal, winBackOffers: ["winback.later", "winback.first"]))
    }

    static func transactions(_ answer: JSONObject) -> [String: JSONObject] {
        var found: [String: JSONObject] = [:]
        for case .object(let entry) in answer["transactions"]?.arrayValue ?? [] {
            if let id = entry["transaction_id"]?.stringValue { found[id] = entry }
        }
        return found
    }

    @Test(
        "an enriched answer: Apple's history and renewal state, the ledger learns them, a burst asks Apple once",
        arguments: StoreKind.available)
    func enrichedAnswers(kind: StoreKind) async throws {
        try await Self.withServerAPI(kind) { service, fake in
            let tenant = try Self.tenant(service, ["--enrichment", "on"])
            try Self.scriptCustomer(fake)
            let receipt = try service.receipt(count: 3)
            let answer = try await service.post(form: [
                ("apikey", tenant.apiKey), ("token", tenant.token), ("receipt", receipt),
            ]).json()
            #expect(answer["status"] == .integer(0))
            #expect(
                Array(answer.keys) == [
                    "status", "description", "environment", "receipt", "latest_receipt_info", "pending_renewal_info",
                    "enrichment", "assurance", "transactions", "subscriptions", "request_id",
                ])
            // Apple's renewal info set the subscription's status: its latest period ended in 2023, no retry.
            #expect(answer["subscriptions"]?.arrayValue?.map { $0["status"] } == [.string("expired")])
            #expect(answer["enrichment"] == .string("applied"))
            #expect(answer["assurance"] == .string("signed-receipt"))
            // Apple's truth, oldest first, consumables left out as verifyReceipt did, the renewal the receipt
            // predates included; verifyReceipt's names and Apple's three date forms.
            let latest = try #require(answer["latest_receipt_info"]?.arrayValue)
            #expect(latest.map { $0["transaction_id"]?.stringValue } == ["1000000000", "1000000002", "1000000010"])
            let newest = try #require(latest.last)
            #expect(newest["original_transaction_id"] == .string("1000000000"))
            #expect(newest["quantity"] == .string("1"))
            let purchased = Int64(Self.base.addingTimeInterval(48 * 3_600).timeIntervalSince1970 * 1_000)
            #expect(newest["purchase_date_ms"] == .string(String(purchased)))
            #expect(newest["purchase_date"] == .string("2023-05-03 00:00:00 Etc/GMT"))
            #expect(newest["purchase_date_pst"] == .string("2023-05-02 17:00:00 America/Los_Angeles"))
            #expect(newest["expires_date_ms"] == .string(String(purchased + 30 * 86_400_000)))
            #expect(newest["is_trial_period"] == .string("false"))
            #expect(
                answer["pending_renewal_info"]
                    == .array([
                        .object([
                            "auto_renew_product_id": .string("com.example.app.monthly"),
                            "original_transaction_id": .string("1000000000"),
                            "product_id": .string("com.example.app.monthly"), "auto_renew_status": .string("1"),
                            // Apple's order, not sorted.
                            "eligible_win_back_offer_ids": .array([.string("winback.later"), .string("winback.first")]),
                        ])
                    ]))
            // The ledger learnt every transaction Apple gave: the renewal is new, the refunded coins are not
            // delivered.
            let ledger = Self.transactions(answer)
            #expect(ledger["1000000010"]?["state"] == .string("new"))
            #expect(ledger["1000000010"]?["deliver"] == .bool(true))
            #expect(ledger["1000000001"]?["state"] == .string("refunded"))
            #expect(ledger["1000000001"]?["deliver"] == .bool(false))
            #expect(fake.badTokens == 0)
            #expect(
                fake.received.map(\.path) == ["/inApps/v2/history/1000000000", "/inApps/v1/subscriptions/1000000000"])
            // Newest first: a long history's part left out is its oldest (money review M5).
            #expect(fake.received.first?.query.contains("sort=DESCENDING") == true)

            // A burst of calls for the same customer costs Apple nothing more: the answers are reused.
            try await withThrowingTaskGroup(of: JSONObject.self) { group in
                for _ in 0..<8 {
                    group.addTask {
                        try await service.post(form: [
                            ("apikey", tenant.apiKey), ("token", tenant.token), ("receipt", receipt),
                        ]).json()
                    }
                }
                for try await again in group {
                    #expect(again["enrichment"] == .string("applied"))
                    #expect(again["latest_receipt_info"] == answer["latest_receipt_info"])
                }
            }
            #expect(fake.received.count == 2)

            // exclude-old-transactions: the newest of each subscription alone.
            let newestOnly = try await service.post(form: [
                ("apikey", tenant.apiKey), ("token", tenant.token), ("receipt", receipt),
                ("exclude_old_transactions", "true"),
            ]).json()
            #expect(
                newestOnly["latest_receipt_info"]?.arrayValue?.map { $0["transaction_id"] } == [.string("1000000010")])

            // Without the switch, the same receipt is answered from itself alone, and Apple is not asked.
            let plain = try Self.tenant(service)
            let local = try await service.post(form: [
                ("apikey", plain.apiKey), ("token", plain.token), ("receipt", receipt),
            ]).json()
            #expect(local["enrichment"] == nil && local["pending_renewal_info"] == nil)
            #expect(local["latest_receipt_info"]?.arrayValue?.count == 2)
            #expect(fake.received.count == 2)

            // Apple's calls in /metrics: by endpoint and status, their time, and the cache's hits and misses.
            let metrics = String(
                decoding: try await service.post("/metrics", body: "", method: .GET).body, as: UTF8.self)
            for line in [
                #"receiptverify_storekit_requests_total{endpoint="transaction_history",environment="production",status="200"} 1"#,
                #"receiptverify_storekit_requests_total{endpoint="subscription_statuses",environment="production",status="200"} 1"#,
                #"receiptverify_storekit_cache_total{result="miss"} 2"#,
            ] {
                #expect(metrics.contains(line), "\(line)")
            }
            #expect(metrics.contains(#"receiptverify_storekit_cache_total{result="hit"}"#))
            #expect(metrics.contains("receiptverify_storekit_request_duration_seconds"))
        }
    }

    @Test(
        "Apple out of reach: the answer from the receipt alone, enrichment unavailable, retryable",
        arguments: StoreKind.available)
    func enrichmentUnavailable(kind: StoreKind) async throws {
        try await Self.withServerAPI(kind, serveArguments: ["--storekit-timeout", "3"]) { service, fake in
            let tenant = try Self.tenant(service, ["--enrichment", "on"])
            for _ in 0..<8 { fake.script("production", .error(503)) }
            let answer = try await service.post(form: [
                ("apikey", tenant.apiKey), ("token", tenant.token), ("receipt", try service.receipt(count: 3)),
            ])
            #expect(answer.httpStatus == 200)
            let body = try answer.json()
            #expect(body["status"] == .integer(0))
            #expect(body["enrichment"] == .string("unavailable"))
            #expect(body["retryable"] == .bool(true))
            // What the receipt itself proves is still there, and the ledger decided on it.
            #expect(body["latest_receipt_info"]?.arrayValue?.count == 2)
            #expect(Self.transactions(body).count == 3)
            #expect(fake.received.count > 1, "5xx answers are retried")

            // Apple refusing the app's key is no moment's trouble: said as such, and not retryable.
            let otherKey = service.cli.directory.appendingPathComponent("other-key.p8")
            try P256.Signing.PrivateKey().pemRepresentation.write(to: otherKey, atomically: true, encoding: .utf8)
            let refusedTenant = try service.tenant(appArguments: [
                "--allow-test-data", "--apple-issuer-id", AppStoreServerAPITests.issuerID, "--apple-key-id",
                "ABC123DEFG", "--apple-private-key-file", otherKey.path, "--enrichment", "on",
            ])
            let refused = try await service.post(form: [
                ("apikey", refusedTenant.apiKey), ("token", refusedTenant.token),
                ("receipt", try service.receipt(count: 3)),
            ]).json()
            #expect(refused["status"] == .integer(0))
            #expect(refused["enrichment"] == .string("refused"))
            #expect(refused["retryable"] == nil)
            #expect(service.logText.contains("Apple refused the app's App Store Server API credentials"))
        }
    }

    @Test(
        "an enriched answer records what Apple's history holds of another app account, but never claims or delivers it to the presenter (money review M13)",
        arguments: StoreKind.available)
    func enrichmentLeavesOtherAccountsTheirs(kind: StoreKind) async throws {
        try await Self.withServerAPI(kind) { service, fake in
            let tenant = try Self.tenant(service, ["--enrichment", "on"])
            // One iPad, one Apple ID, two of the app's accounts: Bob's and Alice's purchases are one history.
            let bobToken = UUID().uuidString.lowercased()
            let aliceToken = UUID().uuidString.lowercased()
            let bobs = try Self.transaction(
                "2000000000", original: "2000000000", type: "Non-Consumable", product: "com.example.app.pro",
                hoursAfterBase: 1, appAccountToken: bobToken)
            let alices = try Self.transaction(
                "2000000001", original: "2000000001", type: "Non-Consumable", product: "com.example.app.extra",
                hoursAfterBase: 2, appAccountToken: aliceToken)
            let unnamed = try Self.transaction(
                "2000000002", original: "2000000002", type: "Non-Consumable", product: "com.example.app.more",
                hoursAfterBase: 3)
            for _ in 0..<2 { fake.script("production", Self.history([bobs, alices, unnamed])) }
            let bob = try await service.post(form: [
                ("apikey", tenant.apiKey), ("token", tenant.token), ("receipt", bobs), ("app_user_id", "bob"),
            ]).json()
            #expect(bob["enrichment"] == .string("applied"))
            // Bob gets his own and the one naming no account; Alice's stays hers (Apple's history still shows it).
            let bobsLedger = Self.transactions(bob)
            #expect(Set(bobsLedger.keys) == ["2000000000", "2000000002"])
            #expect(bobsLedger["2000000000"]?["deliver"] == .bool(true))
            #expect(
                bob["latest_receipt_info"]?.arrayValue?.compactMap { $0["transaction_id"]?.stringValue }.contains(
                    "2000000001") == true)
            // It was recorded (unclaimed, undelivered): Alice's own presentation delivers it to her.
            let alice = try await service.post(form: [
                ("apikey", tenant.apiKey), ("token", tenant.token), ("receipt", alices), ("app_user_id", "alice"),
            ]).json()
            let alicesLedger = Self.transactions(alice)
            #expect(alicesLedger["2000000001"]?["deliver"] == .bool(true))
            #expect(alicesLedger["2000000001"]?["state"] != .string("claimed_by_other_user"))
            #expect(alicesLedger["2000000000"] == nil)
        }
    }

    /// A subscriber's 205 daily periods, oldest first, all of original `1000000000`.
    static func longHistory() throws -> [String] {
        try (0..<205).map { try Self.transaction(String(1_000_000_000 + $0), hoursAfterBase: Double($0) * 24) }
    }

    @Test(
        "a long history: an enriched answer reads Apple's newest 200 transactions, the current period among them (money review M5)",
        arguments: StoreKind.available)
    func aLongHistoryIsReadNewestFirst(kind: StoreKind) async throws {
        try await Self.withServerAPI(kind) { service, fake in
            let tenant = try Self.tenant(service, ["--enrichment", "on"])
            let history = try Self.longHistory()
            let newest = try #require(history.last)
            fake.script("production", Self.history(history), try Self.statuses(transaction: newest, winBackOffers: []))
            let answer = try await service.post(form: [
                ("apikey", tenant.apiKey), ("token", tenant.token), ("receipt", history[0]), ("app_user_id", "u1"),
            ]).json()
            #expect(answer["enrichment"] == .string("applied"), "\(answer)")
            let latest = try #require(answer["latest_receipt_info"]?.arrayValue)
            #expect(latest.count == 200)
            #expect(latest.last?["transaction_id"] == .string("1000000204"))
            #expect(latest.first?["transaction_id"] == .string("1000000005"))
            #expect(Self.transactions(answer)["1000000204"]?["deliver"] == .bool(true))
            let pages = fake.received.filter { $0.path.hasPrefix("/inApps/v2/history/") }
            #expect(pages.count == 10 && pages.allSatisfy { $0.query.contains("sort=DESCENDING") })
        }
    }

    @Test(
        "an enriched answer's renewal info sets the subscription's status; a stale one does not revive it",
        arguments: StoreKind.available)
    func enrichmentRenewalInfoSetsTheStatus(kind: StoreKind) async throws {
        try await Self.withServerAPI(kind) { service, fake in
            let tenant = try Self.tenant(
                service, ["--enrichment", "on", "--product", "com.example.app.monthly=auto_renewable:pro"])
            // The receipt's period ended long ago; Apple is retrying the payment, with a grace period of 3 days.
            let period = try Self.transaction("1000000400", original: "1000000400", hoursAfterBase: 1)
            let graceEnd = Date().addingTimeInterval(3 * 86_400)
            var renewal = JWSBuilder()
            renewal.payload = .renewalInfo
            renewal.originalTransactionID = "1000000400"
            renewal.isInBillingRetryPeriod = true
            renewal.autoRenewStatus = 1
            renewal.expiresDate = graceEnd
            renewal.signedDate = Date().addingTimeInterval(-60)
            let item: JSONObject = [
                "originalTransactionId": .string("1000000400"), "status": .integer(4),
                "signedTransactionInfo": .string(period),
                "signedRenewalInfo": .string(try renewal.build(signedBy: try sharedJWSPKI.get())),
            ]
            let statuses: JSONObject = [
                "environment": .string("Sandbox"), "bundleId": .string(Self.bundleID),
                "data": .array([.object(["lastTransactions": .array([.object(item)])])]),
            ]
            fake.script("production", Self.history([period]), .json(JSONValue.object(statuses).encodedString))
            let form = [("apikey", tenant.apiKey), ("token", tenant.token), ("receipt", period), ("app_user_id", "u1")]
            let answer = try await service.post(form: form).json()
            #expect(answer["enrichment"] == .string("applied"))
            let status = try #require(answer["subscriptions"]?.arrayValue?.first)
            #expect(status["status"] == .string("grace_period") && status["auto_renews"] == .bool(true))
            #expect(status["grace_period_expires_at"]?.stringValue == EntitlementAPITests.rfc3339(graceEnd))
            let pro = try #require(EntitlementAPITests.entitlement(answer["customer"], "pro"))
            #expect(pro["active"] == .bool(true) && pro["will_renew"] == .bool(true))
            #expect(pro["grace_period_expires_at"]?.stringValue == EntitlementAPITests.rfc3339(graceEnd))
            #expect(pro["billing_issue_detected_at"]?.stringValue != nil)

            // Apple says it expired (signed now); the same renewal info again (Apple's answer, reused) is older.
            let expired = try EntitlementAPITests.notification(service, "EXPIRED", transaction: period)
            #expect(try await NotificationAPITests.send(service, tenant.token, expired).httpStatus == 200)
            let again = try await service.post(form: form).json()
            #expect(again["subscriptions"]?.arrayValue?.first?["status"] == .string("expired"))
            #expect(EntitlementAPITests.entitlement(again["customer"], "pro")?["active"] == .bool(false))
            let looked = try await EntitlementAPITests.customer(service, tenant, [("app_user_id", "u1")]).json()
            #expect(looked["customer"]?["subscriptions"]?.arrayValue?.first?["status"] == .string("expired"))
        }
    }

    @Test(
        "an enriched StoreKit 2 transaction is still claimed for its appAccountToken, so another user is refused",
        arguments: StoreKind.available)
    func enrichmentKeepsTheAppAccountTokenAsTheUser(kind: StoreKind) async throws {
        try await Self.withServerAPI(kind) { service, fake in
            // The app puts its backend's user ids in appAccountToken, and says so (--store-user-ids).
            let tenant = try Self.tenant(service, ["--enrichment", "on", "--claims", "refuse", "--store-user-ids"])
            let owner = "e4b2c0ab-7bd5-4e6c-9a37-5b1f8e0c2d11"
            let signed = try Self.transaction(
                "1000000300", original: "1000000300", type: "Non-Consumable", product: "com.example.app.pro",
                hoursAfterBase: 2, appAccountToken: owner)
            fake.script(
                "production",
                Self.history([
                    signed,
                    try Self.transaction(
                        "1000000301", original: "1000000301", type: "Non-Consumable", product: "com.example.app.extra",
                        hoursAfterBase: 3, appAccountToken: owner),
                ]))
            let first = try await service.post(form: [
                ("apikey", tenant.apiKey), ("token", tenant.token), ("receipt", signed),
            ]).json()
            #expect(first["enrichment"] == .string("applied"))
            #expect(Self.transactions(first).count == 2)
            let listed = try await service.post(
                "/api/transactions",
                form: [("apikey", tenant.apiKey), ("token", tenant.token), ("app_user_id", owner)]
            ).json()
            #expect(
                Set(Self.transactions(listed).keys) == ["1000000300", "1000000301"],
                "every merged purchase is claimed for the token")
            let mallory = try await service.post(form: [
                ("apikey", tenant.apiKey), ("token", tenant.token), ("receipt", signed), ("app_user_id", "mallory"),
            ])
            #expect(mallory.httpStatus == 403)
        }
    }

    @Test(
        "enrichment keeps only the app's own: its bundle IDs and its catalog",
        arguments: StoreKind.available)
    func enrichmentMergesOnlyTheAppsOwn(kind: StoreKind) async throws {
        try await Self.withServerAPI(kind) { service, fake in
            let tenant = try Self.tenant(
                service,
                ["--enrichment", "on", "--product", "com.example.app.pro", "--product", "com.example.app.extra"])
            func item(
                _ id: String, product: String = "com.example.app.extra", bundleID: String? = nil,
                environment: String? = nil
            ) throws -> String {
                try Self.transaction(
                    id, original: id, type: "Non-Consumable", product: product, hoursAfterBase: 2,
                    bundleID: bundleID, environment: environment)
            }
            let signed = try item("1000000400", product: "com.example.app.pro")
            fake.script(
                "production",
                Self.history([
                    signed, try item("1000000401"), try item("1000000402", bundleID: "com.other.app"),
                    try item("1000000404", product: "com.example.app.not-sold"),
                ]))
            let answer = try await service.post(form: [
                ("apikey", tenant.apiKey), ("token", tenant.token), ("receipt", signed),
            ]).json()
            #expect(answer["enrichment"] == .string("applied"))
            #expect(Set(Self.transactions(answer).keys) == ["1000000400", "1000000401"])
            #expect(
                answer["latest_receipt_info"]?.arrayValue?.compactMap { $0["transaction_id"]?.stringValue }.sorted()
                    == ["1000000400", "1000000401"])
            // (Test-signed items are all of the Xcode environment: EnrichmentTests holds the environment rule.)
            let listed = try service.cli.expectSuccess(["transactions", "list", "--app", tenant.token, "--json"])
            for id in ["1000000402", "1000000404"] { #expect(!listed.stdout.contains(id)) }
            #expect(listed.stdout.contains("1000000401"))
        }
    }

    @Test(
        "look-ups by id: transaction_id and app_transaction_id, assurance id-lookup, refused when the app says so",
        arguments: StoreKind.available)
    func lookUpsByID(kind: StoreKind) async throws {
        try await Self.withServerAPI(kind) { service, fake in
            let tenant = try Self.tenant(service, ["--id-lookups", "allow"])
            let signed = try Self.transaction("1000000002", hoursAfterBase: 24)
            fake.script("production", .json(#"{"signedTransactionInfo":"\#(signed)"}"#))
            let byTransaction = try await service.post(form: [
                ("apikey", tenant.apiKey), ("token", tenant.token), ("transaction_id", "1000000002"),
                ("lookup", "true"),
            ]).json()
            #expect(byTransaction["status"] == .integer(0))
            #expect(byTransaction["assurance"] == .string("id-lookup"))
            #expect(byTransaction["receipt"]?["transactionId"] == .string("1000000002"))
            #expect(Self.transactions(byTransaction)["1000000002"]?["state"] == .string("new"))
            #expect(fake.received.last?.path == "/inApps/v1/transactions/1000000002")

            fake.script("production", Self.history([try Self.transaction("1000000000", hoursAfterBase: 0)]))
            let byAppTransaction = try await service.post(form: [
                ("apikey", tenant.apiKey), ("token", tenant.token), ("app_transaction_id", "704528340000000001"),
                ("lookup", "true"),
            ]).json()
            #expect(byAppTransaction["status"] == .integer(0))
            #expect(byAppTransaction["assurance"] == .string("id-lookup"))
            #expect(byAppTransaction["receipt"]?["app_transaction_id"] == .string("704528340000000001"))
            #expect(byAppTransaction["latest_receipt_info"]?.arrayValue?.count == 1)
            #expect(fake.received.last?.path == "/inApps/v2/history/704528340000000001")

            // An id Apple knows in neither environment: as if the purchase was never made.
            let unknown = try await service.post(form: [
                ("apikey", tenant.apiKey), ("token", tenant.token), ("transaction_id", "1999999999"),
                ("lookup", "true"),
            ]).json()
            #expect(unknown["status"] == .integer(21_010))
            #expect(unknown["assurance"] == nil)
            let both = try await service.post(form: [
                ("apikey", tenant.apiKey), ("token", tenant.token), ("transaction_id", "1"),
                ("app_transaction_id", "2"), ("lookup", "true"),
            ])
            #expect(both.httpStatus == 400)
            let malformed = try await service.post(form: [
                ("apikey", tenant.apiKey), ("token", tenant.token), ("transaction_id", "../../admin"),
                ("lookup", "true"),
            ]).json()
            #expect(malformed["status"] == .integer(21_002))

            // The app refuses ids alone; an app without credentials cannot look them up; an app made without a
            // choice refuses them (look-ups are off by default); and without lookup=true, an id with no receipt is
            // a missing receipt, never a look-up.
            let requests = fake.received.count
            let byDefault = try Self.tenant(service)
            let defaultRefused = try await service.post(form: [
                ("apikey", byDefault.apiKey), ("token", byDefault.token), ("transaction_id", "1000000002"),
                ("lookup", "true"),
            ])
            #expect(defaultRefused.httpStatus == 403)
            for receipt in [[("receipt", "")], []] {
                let notALookUp = try await service.post(
                    form: [("apikey", tenant.apiKey), ("token", tenant.token), ("transaction_id", "1000000002")]
                        + receipt
                ).json()
                #expect(notALookUp["status"] == .integer(21_002))
                #expect(notALookUp["assurance"] == nil)
            }
            let lookUpWithReceipt = try await service.post(form: [
                ("apikey", tenant.apiKey), ("token", tenant.token), ("receipt", signed), ("lookup", "true"),
            ])
            #expect(lookUpWithReceipt.httpStatus == 400)
            let refusing = try Self.tenant(service, ["--id-lookups", "refuse"])
            let refused = try await service.post(form: [
                ("apikey", refusing.apiKey), ("token", refusing.token), ("transaction_id", "1000000002"),
                ("lookup", "true"),
            ])
            #expect(refused.httpStatus == 403)
            #expect(try refused.json()["description"]?.stringValue?.contains("transaction id alone") == true)
            let bare = try service.tenant(appArguments: ["--allow-test-data"])
            let withoutCredentials = try await service.post(form: [
                ("apikey", bare.apiKey), ("token", bare.token), ("transaction_id", "1000000002"),
                ("lookup", "true"),
            ])
            #expect(withoutCredentials.httpStatus == 403)
            #expect(fake.received.count == requests, "refused look-ups never reach Apple")

            // A signed transaction says so too.
            let jws = try await service.post(form: [
                ("apikey", tenant.apiKey), ("token", tenant.token), ("receipt", signed),
            ]).json()
            #expect(jws["assurance"] == .string("signed-jws"))
        }
    }

    @Test(
        "the verifyReceipt drop-in: Apple's request, Apple's shape and codes, the key as bearer or basic",
        arguments: StoreKind.available)
    func verifyReceiptDropIn(kind: StoreKind) async throws {
        try await Self.withServerAPI(kind) { service, fake in
            let tenant = try Self.tenant(service, ["--enrichment", "on", "--shared-secret", "0123456789abcdef"])
            try Self.scriptCustomer(fake)
            let receipt = try service.receipt(count: 3)
            let path = "/verifyReceipt/\(tenant.token)"
            let request =
                #"{"receipt-data":"\#(receipt)","password":"0123456789abcdef","exclude-old-transactions":false}"#
            // No content type, as libraries send it; the key as a bearer token.
            let answer = try await service.post(
                path, body: request, contentType: "text/plain", headers: [("Authorization", "Bearer \(tenant.apiKey)")])
            #expect(answer.httpStatus == 200)
            let body = try answer.json()
            #expect(
                Array(body.keys) == [
                    "status", "environment", "receipt", "latest_receipt_info", "latest_receipt", "pending_renewal_info",
                ])
            #expect(body["status"] == .integer(0))
            #expect(body["latest_receipt"] == .string(receipt))
            #expect(body["latest_receipt_info"]?.arrayValue?.count == 3)

            // The key as HTTP Basic's user: what a library sends for https://KEY@host/verifyReceipt/TOKEN.
            let basic = Data("\(tenant.apiKey):".utf8).base64EncodedString()
            let viaBasic = try await service.post(
                path, body: request, contentType: "application/json", headers: [("Authorization", "Basic \(basic)")])
            #expect(try viaBasic.json()["status"] == .integer(0))

            // Apple's codes: another shared secret 21004, damaged data 21002, a forged receipt 21003, an unreadable
            // body 21002; all HTTP 200 as Apple answered.
            let cases: [(String, Int)] = [
                (#"{"receipt-data":"\#(receipt)","password":"not-the-secret"}"#, 21_004),
                (#"{"receipt-data":"AAAA"}"#, 21_002),
                (#"{"receipt-data":"\#(try service.receipt(count: 1, tampering: .content))"}"#, 21_003),
                ("{not json", 21_002),
            ]
            for (text, status) in cases {
                let refused = try await service.post(
                    path, body: text, contentType: "application/json",
                    headers: [("Authorization", "Bearer \(tenant.apiKey)")])
                #expect(refused.httpStatus == 200, "\(status)")
                #expect(try refused.json() == ["status": .integer(Int64(status))], "\(status)")
            }

            // The exchange itself failing is not a verdict: a wrong key is HTTP 401, another method 405.
            let stranger = try await service.post(
                path, body: request, contentType: "application/json", headers: [("Authorization", "Bearer rv_nope")])
            #expect(stranger.httpStatus == 401)
            // Without a key, a body Apple would not read is a 401 too, not a verdict (21002) for a stranger.
            for (body, type) in [("", "application/json"), ("not json", "application/json"), ("x=%zz", "text/plain")] {
                let keyless = try await service.post(path, body: body, contentType: type)
                #expect(keyless.httpStatus == 401, "\(body)")
            }
            let get = try await service.post(path, body: "", method: .GET)
            #expect(get.httpStatus == 405 && get.header("Allow") == "POST")
            // Another app's token with this key is refused alike.
            let other = try await service.post(
                "/verifyReceipt/app_00000000000000000000000000000000", body: request, contentType: "application/json",
                headers: [("Authorization", "Bearer \(tenant.apiKey)")])
            #expect(other.httpStatus == 401)
        }
    }

    @Test("the drop-in answers Apple's real receipt in Apple's recorded shape", arguments: StoreKind.available)
    func dropInOnApplesReceipt(kind: StoreKind) async throws {
        guard let fixtures = SharedFixtures.directory else {
            if SharedFixtures.isCI { Issue.record("fixtures missing under CI") }
            return
        }
        try await withLiveService(kind) { service in
            let receipt = try String(
                contentsOf: fixtures.appendingPathComponent("receipts/revenuecat_sandbox_ios_2020.b64"), encoding: .utf8
            ).trimmingCharacters(in: .whitespacesAndNewlines)
            let recorded = try RecordedAnswer.revenueCat(fixtures)
            let sandbox = try service.tenant(appArguments: [
                "--bundle-id", "com.revenuecat.sampleapp", "--environment", "sandbox",
            ])
            let request = #"{"receipt-data":"\#(receipt)","exclude-old-transactions":false}"#
            let answer = try await service.post(
                "/verifyReceipt/\(sandbox.token)", body: request, contentType: "application/json",
                headers: [("Authorization", "Bearer \(sandbox.apiKey)")])
            #expect(answer.httpStatus == 200)
            let body = try answer.json()
            // Apple's members in Apple's order; pending_renewal_info is Apple's servers' alone (enrichment gives it).
            #expect(Array(body.keys) == Array(recorded.keys).filter { $0 != "pending_renewal_info" })
            #expect(body["status"] == recorded["status"])
            #expect(body["environment"] == recorded["environment"])
            // Apple's receipt, with the time of this request as Apple's request_date.
            guard case .object(var receiptFields)? = body["receipt"],
                case .object(var recordedFields)? = recorded["receipt"]
            else { throw SetupError("no receipt") }
            #expect(Array(receiptFields.keys) == Array(recordedFields.keys))
            let requested = Int64(receiptFields["request_date_ms"]?.stringValue ?? "") ?? 0
            #expect(abs(requested - Int64(Date().timeIntervalSince1970 * 1_000)) < 60_000)
            for field in ["request_date", "request_date_ms", "request_date_pst"] {
                receiptFields[field] = nil
                recordedFields[field] = nil
            }
            #expect(receiptFields == recordedFields)
            let apples = try #require(RecordedAnswer.latestReceiptInfoWithoutGroups(recorded))
            #expect(body["latest_receipt_info"]?.arrayValue == apples)
            #expect(body["latest_receipt"] == .string(receipt))

            // A sandbox receipt sent to an app that takes production only: Apple's 21007.
            let production = try service.tenant(appArguments: [
                "--bundle-id", "com.revenuecat.sampleapp", "--environment", "production",
            ])
            let wrongEnvironment = try await service.post(
                "/verifyReceipt/\(production.token)", body: request, contentType: "application/json",
                headers: [("Authorization", "Bearer \(production.apiKey)")])
            #expect(try wrongEnvironment.json() == ["status": .integer(21_007)])
            // Another app's receipt: Apple "could not authorize" it.
            let otherApp = try service.tenant(appArguments: ["--environment", "sandbox"])
            let foreign = try await service.post(
                "/verifyReceipt/\(otherApp.token)", body: request, contentType: "application/json",
                headers: [("Authorization", "Bearer \(otherApp.apiKey)")])
            #expect(try foreign.json() == ["status": .integer(21_010)])
        }
    }

    @Test(
        "a confirmed delivery is finished with Apple: retried when Apple fails, failed when Apple refuses",
        arguments: StoreKind.available)
    func confirmedDeliveriesAreFinishedWithApple(kind: StoreKind) async throws {
        guard let fixtures = SharedFixtures.directory else {
            if SharedFixtures.isCI { Issue.record("fixtures missing under CI") }
            return
        }
        // Apple's own sandbox receipt: its transactions are the sandbox's (test-signed ones are Xcode's, which Apple's
        // servers never saw and which are not finished).
        let bundleID = "com.revenuecat.sampleapp"
        try await Self.withServerAPI(
            kind, bundleID: bundleID, serveArguments: ["--storekit-finish-retry-seconds", "1"]
        ) { service, fake in
            let tenant = try Self.tenant(
                service, ["--bundle-id", bundleID, "--environment", "sandbox", "--delivery", "confirm"])
            let receipt = try String(
                contentsOf: fixtures.appendingPathComponent("receipts/revenuecat_sandbox_ios_2020.b64"),
                encoding: .utf8)
            let answer = try await service.post(form: [
                ("apikey", tenant.apiKey), ("token", tenant.token), ("receipt", receipt),
            ]).json()
            #expect(answer["status"] == .integer(0))
            let (first, second, third) = ("1000000692878476", "1000000692879214", "1000000696553650")
            #expect(Self.transactions(answer)[first]?["deliver"] == .bool(true))

            // Apple fails the first one asked (the client's own 4 attempts), takes the second, then the first
            // on the finisher's retry.
            fake.script(
                "sandbox", .error(503), .error(503), .error(503), .error(503), .json(""), .json(""),
                .error(400, appleCode: 4_000_006))
            let confirmed = try await service.post(
                "/api/transactions/delivered",
                form: [
                    ("apikey", tenant.apiKey), ("token", tenant.token), ("transaction_ids", "\(first),\(second)"),
                ]
            ).json()
            #expect(
                confirmed["transactions"]?.arrayValue?.map { $0["apple_finish"]?["state"] } == [
                    .string("pending"), .string("pending"),
                ])

            @Sendable func finishes() async throws -> [String: JSONObject] {
                let rows = try await service.post(
                    "/api/transactions",
                    form: [
                        ("apikey", tenant.apiKey), ("token", tenant.token), ("original_transaction_id", first),
                        ("limit", "100"),
                    ]
                ).json()
                var found: [String: JSONObject] = [:]
                for case .object(let row) in rows["transactions"]?.arrayValue ?? [] {
                    if let id = row["transaction_id"]?.stringValue, case .object(let finish)? = row["apple_finish"] {
                        found[id] = finish
                    }
                }
                return found
            }
            var states: [String: JSONObject] = [:]
            for _ in 0..<200 {
                states = try await finishes()
                if states[first]?["state"] == .string("finished"), states[second]?["state"] == .string("finished") {
                    break
                }
                try await Task.sleep(for: .milliseconds(100))
            }
            #expect(states.count == 2, "only confirmed deliveries are finished")
            #expect(
                states[first]?["state"] == .string("finished") && states[second]?["state"] == .string("finished"))
            #expect(
                Set([states[first]?["attempts"], states[second]?["attempts"]]) == [.integer(1), .integer(2)],
                "one finished at once, the other on its retry")
            #expect(states.values.allSatisfy { $0["finished_at"] != nil && $0["last_error"] == nil })

            // Apple refusing the request itself is final, and says why.
            _ = try await service.post(
                "/api/transactions/delivered",
                form: [("apikey", tenant.apiKey), ("token", tenant.token), ("transaction_ids", third)])
            for _ in 0..<100 {
                states = try await finishes()
                if states[third]?["state"] != .string("pending") { break }
                try await Task.sleep(for: .milliseconds(100))
            }
            #expect(states[third]?["state"] == .string("failed"))
            #expect(states[third]?["last_error"]?.stringValue?.contains("HTTP 400") == true)

            // In `once` mode the answer was the delivery: a confirmation never asks Apple to finish.
            // (Recorded in `confirm` mode, so its rows are not yet delivered; then switched.)
            let once = try Self.tenant(
                service, ["--bundle-id", bundleID, "--environment", "sandbox", "--delivery", "confirm"])
            _ = try await service.post(form: [("apikey", once.apiKey), ("token", once.token), ("receipt", receipt)])
            try service.cli.expectSuccess(["app", "update", once.token, "--delivery", "once"])
            let onceConfirmed = try await service.post(
                "/api/transactions/delivered",
                form: [("apikey", once.apiKey), ("token", once.token), ("transaction_ids", third)]
            ).json()
            #expect(onceConfirmed["transactions"]?.arrayValue?.first?["delivered_at"] != nil)
            #expect(onceConfirmed["transactions"]?.arrayValue?.first?["apple_finish"] == nil)
            try await Task.sleep(for: .milliseconds(1_500))

            let asked = fake.received
            #expect(asked.count == 7)
            #expect(asked.allSatisfy { $0.method == "POST" && $0.environment == "sandbox" })
            #expect(
                Set(asked.map(\.path))
                    == Set(
                        [first, second, third].map { "/inApps/v1/transactions/\($0)/finish" }))
            #expect(fake.badTokens == 0)
        }
    }
}
