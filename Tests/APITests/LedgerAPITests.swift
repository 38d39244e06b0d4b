import Foundation
import ReceiptCore
import ReceiptTestKit
import TestSupport
import Testing

/// The ledger through the real server: what each answer says to deliver, claims, confirmations, the catalog,
/// look-ups, and exactly-once under concurrency (docs/api.md, "Transactions").
@Suite struct LedgerAPITests {
    static let created = RFC3339.date("2023-05-09T23:20:55Z")

    /// A receipt holding `purchases` (see ``ReceiptBuilder/InAppPurchase/sample(_:before:)``), some refunded.
    static func receipt(
        _ service: LiveService, count: Int, refunded: [Int: Date] = [:], offset: Int = 0
    ) throws -> String {
        var builder = ReceiptBuilder(inAppPurchaseCount: 0)
        builder.inAppPurchases = (0..<count).map { index in
            var purchase = ReceiptBuilder.InAppPurchase.sample(index + offset, before: created)
            purchase.cancellationDate = refunded[index]
            return purchase
        }
        return try builder.build(signedBy: service.pki).base64
    }

    /// The answer's `transactions` by transaction id.
    static func transactions(_ answer: JSONObject) -> [String: JSONObject] {
        var entries: [String: JSONObject] = [:]
        for case .object(let entry) in answer["transactions"]?.arrayValue ?? [] {
            entries[entry["transaction_id"]?.stringValue ?? ""] = entry
        }
        return entries
    }

    static func states(_ answer: JSONObject) -> [String] {
        (answer["transactions"]?.arrayValue ?? []).map {
            "\($0["state"]?.stringValue ?? "?")/\($0["deliver"] == .bool(true))"
        }
    }

    static func call(
        _ service: LiveService, _ tenant: LiveService.Tenant, receipt: String, user: String? = nil,
        path: String = "/api"
    ) async throws -> LiveService.Answer {
        var fields = [("apikey", tenant.apiKey), ("token", tenant.token), ("receipt", receipt)]
        if let user { fields.append(("app_user_id", user)) }
        return try await service.post(path, form: fields)
    }

    @Test(
        "switching confirm to once does not deliver again what confirm offered", arguments: StoreKind.available)
    func switchingToOnceDeliversNothingAgain(kind: StoreKind) async throws {
        try await withLiveService(kind) { service in
            let tenant = try service.tenant(appArguments: ["--allow-test-data", "--delivery", "confirm"])
            let receipt = try Self.receipt(service, count: 2)
            let first = try await Self.call(service, tenant, receipt: receipt, user: "alice").json()
            #expect(Self.states(first) == ["new/true", "new/true"])
            try service.cli.expectSuccess(["app", "update", tenant.token, "--delivery", "once"])
            let after = try await Self.call(service, tenant, receipt: receipt, user: "alice").json()
            #expect(Self.states(after) == ["seen/false", "seen/false"])
            // A purchase new after the switch is delivered once, as once mode does.
            let more = try Self.receipt(service, count: 3)
            let third = try await Self.call(service, tenant, receipt: more, user: "alice").json()
            #expect(Self.states(third) == ["seen/false", "seen/false", "new/true"])

            // Removing the app would forget its ledger (an app added again would deliver it all again): said, and
            // done only when asked for.
            let refused = try service.cli.run(["app", "remove", tenant.token])
            #expect(refused.status != 0 && refused.stderr.contains("ledger holds transactions"))
            #expect(try await Self.call(service, tenant, receipt: more, user: "alice").httpStatus == 200)
            try service.cli.expectSuccess(["app", "remove", tenant.token, "--forget-ledger"])
            #expect(try await Self.call(service, tenant, receipt: more, user: "alice").httpStatus == 401)
        }
    }

    @Test(
        "an app that requires the user refuses a request without one (400) and records nothing; the setting is shown",
        arguments: StoreKind.available)
    func aRequiredUserIsRequired(kind: StoreKind) async throws {
        try await withLiveService(kind) { service in
            let tenant = try service.tenant(appArguments: ["--allow-test-data", "--claims", "refuse", "--require-user"])
            let shown = try service.cli.expectSuccess(["app", "show", tenant.token, "--json"]).jsonObject()
            #expect(shown["requires_user"] == .bool(true))
            let receipt = try Self.receipt(service, count: 2)
            for user in [nil, ""] as [String?] {
                let refused = try await Self.call(service, tenant, receipt: receipt, user: user)
                #expect(refused.httpStatus == 400)
                let body = try refused.json()
                #expect(body["status"] == .integer(400))
                #expect(body["description"]?.stringValue?.contains("requires app_user_id") == true)
                #expect(body["transactions"] == nil && body["receipt"] == nil)
            }
            let listed = try await service.post(
                "/api/transactions", form: [("apikey", tenant.apiKey), ("token", tenant.token)]
            ).json()
            #expect(Self.transactions(listed).isEmpty, "nothing was recorded")
            let alice = try await Self.call(service, tenant, receipt: receipt, user: "alice").json()
            #expect(Self.states(alice) == ["new/true", "new/true"])
            // Turned off, the request without a user is answered again (claims neither made nor checked).
            try service.cli.expectSuccess(["app", "update", tenant.token, "--no-require-user"])
            let anonymous = try await Self.call(service, tenant, receipt: receipt)
            #expect(anonymous.httpStatus == 200)
        }
    }

    @Test("new, seen, refunded after delivery: each answer says what to deliver", arguments: StoreKind.available)
    func statesAndDelivery(kind: StoreKind) async throws {
        try await withLiveService(kind) { service in
            let tenant = try service.tenant(appArguments: ["--allow-test-data"])
            let receipt = try Self.receipt(service, count: 3)
            let first = try await Self.call(service, tenant, receipt: receipt).json()
            #expect(first["status"] == .integer(0))
            #expect(Self.states(first) == ["new/true", "new/true", "new/true"])
            let entry = try #require(Self.transactions(first)["1000000002"])
            #expect(
                Array(entry.keys) == [
                    "transaction_id", "original_transaction_id", "product_id", "environment", "expires_date_ms",
                    "expired", "first_seen_at", "state", "deliver",
                ])
            // The test receipt's periods ended in 2023: delivered once, and said to unlock nothing now.
            #expect(entry["expired"] == .bool(true))
            #expect(entry["environment"] == first["environment"])
            #expect(entry["expires_date_ms"].map { if case .integer = $0 { true } else { false } } == true)
            #expect(entry["original_transaction_id"] == .string("1000000000"))
            #expect(entry["product_id"] == .string("com.example.app.monthly"))
            // Apple's shape is untouched: our fields come after it.
            #expect(
                Array(first.keys) == [
                    "status", "description", "environment", "receipt", "latest_receipt_info", "assurance",
                    "transactions", "request_id",
                ])

            let second = try await Self.call(service, tenant, receipt: receipt).json()
            #expect(Self.states(second) == ["seen/false", "seen/false", "seen/false"])
            #expect(Self.transactions(second)["1000000001"]?["first_seen_at"] == entry["first_seen_at"])

            // Apple refunds the consumable: the next receipt says so, and the backend takes the goods back.
            let refundDate = RFC3339.date("2023-05-10T08:00:00Z")
            let refunded = try await Self.call(
                service, tenant, receipt: try Self.receipt(service, count: 3, refunded: [1: refundDate])
            ).json()
            let coins = try #require(Self.transactions(refunded)["1000000001"])
            #expect(coins["state"] == .string("refunded") && coins["deliver"] == .bool(false))
            #expect(coins["refunded_at"] == .string("2023-05-10T08:00:00.000Z"))
            #expect(coins["refunded_after_delivery"] == .bool(true))
            // The old receipt, from before the refund, does not undo it.
            let old = try await Self.call(service, tenant, receipt: receipt).json()
            #expect(Self.transactions(old)["1000000001"]?["state"] == .string("refunded"))

            // A purchase refunded before it was ever seen is never delivered, and was never delivered.
            let fresh = try await Self.call(
                service, tenant, receipt: try Self.receipt(service, count: 1, refunded: [0: refundDate], offset: 7)
            ).json()
            let never = try #require(Self.transactions(fresh)["1000000007"])
            #expect(never["state"] == .string("refunded") && never["deliver"] == .bool(false))
            #expect(never["refunded_after_delivery"] == nil)
        }
    }

    @Test("claims: flag, refuse, transfer and off with two users", arguments: StoreKind.available)
    func claimsPolicies(kind: StoreKind) async throws {
        try await withLiveService(kind) { service in
            let receipt = try Self.receipt(service, count: 2)
            for policy in ["flag", "refuse", "transfer", "off"] {
                let tenant = try service.tenant(appArguments: ["--allow-test-data", "--claims", policy])
                let alice = try await Self.call(service, tenant, receipt: receipt, user: "alice").json()
                #expect(Self.states(alice) == ["new/true", "new/true"], "\(policy)")
                let again = try await Self.call(service, tenant, receipt: receipt, user: "alice").json()
                #expect(Self.states(again) == ["seen/false", "seen/false"], "\(policy)")
                let bob = try await Self.call(service, tenant, receipt: receipt, user: "bob")
                switch policy {
                case "flag":
                    #expect(
                        Self.states(try bob.json()) == ["claimed_by_other_user/false", "claimed_by_other_user/false"])
                case "refuse":
                    #expect(bob.httpStatus == 403)
                    #expect(
                        try bob.json()["description"]
                            == .string("A purchase in the receipt belongs to another user of the app"))
                    #expect(try bob.json()["receipt"] == nil)
                    // Nothing was recorded for bob.
                    let bobs = try service.cli.expectSuccess([
                        "transactions", "list", "--app", tenant.token, "--user", "bob", "--json",
                    ])
                    #expect(bobs.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "[]")
                case "transfer":
                    let moved = try bob.json()
                    #expect(Self.states(moved) == ["seen/false", "seen/false"])
                    #expect(Self.transactions(moved)["1000000000"]?["transferred_from"] == .string("alice"))
                    // Now alice is the other user.
                    let back = try await Self.call(service, tenant, receipt: receipt, user: "alice").json()
                    #expect(Self.transactions(back)["1000000000"]?["transferred_from"] == .string("bob"))
                default:
                    #expect(Self.states(try bob.json()) == ["seen/false", "seen/false"])
                }
                // No user: no claim made, nothing refused.
                let anonymous = try await Self.call(service, tenant, receipt: receipt)
                #expect(anonymous.httpStatus == 200, "\(policy)")
            }

            // The operator moves and releases a claim from the CLI.
            let tenant = try service.tenant(appArguments: ["--allow-test-data"])
            _ = try await Self.call(service, tenant, receipt: receipt, user: "alice")
            try service.cli.expectSuccess([
                "transactions", "claim", "--app", tenant.token, "1000000000", "--user", "bob",
            ])
            let bob = try await Self.call(service, tenant, receipt: receipt, user: "bob").json()
            #expect(Self.transactions(bob)["1000000000"]?["state"] == .string("seen"))
            #expect(Self.transactions(bob)["1000000001"]?["state"] == .string("claimed_by_other_user"))
            try service.cli.expectSuccess(["transactions", "release", "--app", tenant.token, "1000000001"])
            let carol = try await Self.call(service, tenant, receipt: receipt, user: "carol").json()
            #expect(Self.transactions(carol)["1000000001"]?["state"] == .string("seen"))
            #expect(Self.transactions(carol)["1000000000"]?["state"] == .string("claimed_by_other_user"))
            let unknown = try service.cli.run(["transactions", "release", "--app", tenant.token, "42"])
            #expect(unknown.status != 0 && unknown.stderr.contains("no original transaction '42'"))
        }
    }

    @Test(
        "confirm delivery: a backend that crashed after the answer gets the purchase again",
        arguments: StoreKind.available)
    func confirmedDelivery(kind: StoreKind) async throws {
        try await withLiveService(kind) { service in
            let tenant = try service.tenant(appArguments: ["--allow-test-data", "--delivery", "confirm"])
            let receipt = try Self.receipt(service, count: 2)
            let first = try await Self.call(service, tenant, receipt: receipt, user: "alice").json()
            #expect(Self.states(first) == ["new/true", "new/true"])
            // The backend crashed before delivering: the next answer still says deliver.
            let retry = try await Self.call(service, tenant, receipt: receipt, user: "alice").json()
            #expect(Self.states(retry) == ["seen/true", "seen/true"])
            // Not to another user, though.
            let bob = try await Self.call(service, tenant, receipt: receipt, user: "bob").json()
            #expect(Self.states(bob) == ["claimed_by_other_user/false", "claimed_by_other_user/false"])

            let confirm = [
                ("apikey", tenant.apiKey), ("token", tenant.token), ("transaction_ids", "1000000000,999"),
            ]
            let confirmed = try await service.post("/api/transactions/delivered", form: confirm)
            #expect(confirmed.httpStatus == 200)
            let body = try confirmed.json()
            #expect(body["unknown_transaction_ids"] == .array([.string("999")]))
            let deliveredAt = try #require(body["transactions"]?.arrayValue?.first?["delivered_at"])
            // Idempotent: the same time again.
            let again = try await service.post("/api/transactions/delivered", form: confirm).json()
            #expect(again["transactions"]?.arrayValue?.first?["delivered_at"] == deliveredAt)

            let after = try await Self.call(service, tenant, receipt: receipt, user: "alice").json()
            #expect(Self.states(after) == ["seen/false", "seen/true"])
            #expect(Self.transactions(after)["1000000000"]?["delivered_at"] == deliveredAt)

            // Another app's key and token cannot confirm this app's transactions.
            let other = try service.tenant(appArguments: ["--allow-test-data"])
            let foreign = try await service.post(
                "/api/transactions/delivered",
                form: [("apikey", other.apiKey), ("token", other.token), ("transaction_ids", "1000000001")]
            ).json()
            #expect(foreign["unknown_transaction_ids"] == .array([.string("1000000001")]))
            let missing = try await service.post(
                "/api/transactions/delivered", form: [("apikey", tenant.apiKey), ("token", tenant.token)])
            #expect(missing.httpStatus == 400)

            // Money review M3: a renewal a notification recorded and the backend presented a minute later was
            // offered; a purchase only a notification recorded was not. Switched to `once`, the first is never
            // delivered again, nor is 1000000001 (offered, never confirmed); the second is delivered, once.
            let renewal = try NotificationAPITests.notification(
                service, "DID_RENEW", transactionID: "2000000000000301", original: "2000000000000301")
            #expect(try await NotificationAPITests.send(service, tenant.token, renewal).httpStatus == 200)
            let notified = try NotificationAPITests.notification(
                service, "ONE_TIME_CHARGE", transactionID: "2000000000000302", original: "2000000000000302",
                productType: "Consumable")
            #expect(try await NotificationAPITests.send(service, tenant.token, notified).httpStatus == 200)
            func signed(_ id: String, type: String = "Auto-Renewable Subscription") throws -> String {
                var item = JWSBuilder()
                item.transactionID = id
                item.originalTransactionID = id
                item.type = type
                if type != "Auto-Renewable Subscription" { item.expiresDate = nil }
                return try item.build(signedBy: service.jwsPKI)
            }
            let offered = try await Self.call(service, tenant, receipt: try signed("2000000000000301"), user: "alice")
                .json()
            #expect(Self.transactions(offered)["2000000000000301"]?["deliver"] == .bool(true), "\(offered)")
            try service.cli.expectSuccess(["app", "update", tenant.token, "--delivery", "once"])
            let settled = try await Self.call(service, tenant, receipt: receipt, user: "alice").json()
            #expect(Self.states(settled) == ["seen/false", "seen/false"])
            let renewed = try await Self.call(service, tenant, receipt: try signed("2000000000000301"), user: "alice")
                .json()
            #expect(Self.transactions(renewed)["2000000000000301"]?["deliver"] == .bool(false), "\(renewed)")
            let due = try await Self.call(
                service, tenant, receipt: try signed("2000000000000302", type: "Consumable"), user: "alice"
            ).json()
            #expect(Self.transactions(due)["2000000000000302"]?["deliver"] == .bool(true), "\(due)")
        }
    }

    @Test("the product catalog", arguments: StoreKind.available)
    func productCatalog(kind: StoreKind) async throws {
        try await withLiveService(kind) { service in
            let tenant = try service.tenant(appArguments: ["--allow-test-data", "--product", "com.example.app.monthly"])
            let receipt = try Self.receipt(service, count: 2)
            let refused = try await Self.call(service, tenant, receipt: receipt)
            #expect(refused.httpStatus == 403)
            #expect(try refused.json()["description"] == .string("A product in the receipt is not one of the app's"))
            // Nothing was recorded for a refused receipt.
            try service.cli.expectSuccess([
                "app", "update", tenant.token, "--product", "com.example.app.monthly", "--product",
                "com.example.app.coins",
            ])
            let accepted = try await Self.call(service, tenant, receipt: receipt).json()
            #expect(Self.states(accepted) == ["new/true", "new/true"])
            try service.cli.expectSuccess(["app", "update", tenant.token, "--any-product"])
            let shown = try service.cli.expectSuccess(["app", "show", tenant.token, "--json"]).jsonObject()
            #expect(shown["products"] == nil || shown["products"] == .null)
            let bad = try service.cli.run(["app", "update", tenant.token, "--product", "no spaces"])
            #expect(bad.status != 0 && bad.stderr.contains("malformed product id"))
        }
    }

    @Test("StoreKit 2: prorated and family revocations, appAccountToken claims", arguments: StoreKind.available)
    func signedTransactions(kind: StoreKind) async throws {
        try await withLiveService(kind) { service in
            // The app puts its backend's user ids in appAccountToken, and says so (--store-user-ids).
            let tenant = try service.tenant(appArguments: [
                "--allow-test-data", "--claims", "refuse", "--store-user-ids",
            ])
            var builder = JWSBuilder()
            builder.transactionID = "2000000000000001"
            builder.originalTransactionID = "2000000000000001"
            builder.appAccountToken = "7e3fb20b-4cdb-47cc-936d-99d65f608138"
            let first = try await Self.call(service, tenant, receipt: try builder.build(signedBy: service.jwsPKI))
            #expect(Self.states(try first.json()) == ["new/true"])
            // Another user presenting the same purchase is refused: the token claimed it.
            let other = try await Self.call(
                service, tenant, receipt: try builder.build(signedBy: service.jwsPKI), user: "someone-else")
            #expect(other.httpStatus == 403)

            builder.revocation = (RFC3339.date("2023-05-10T00:00:00Z"), 1, "REFUND_PRORATED", 25_000)
            let prorated = try await Self.call(service, tenant, receipt: try builder.build(signedBy: service.jwsPKI))
                .json()
            let entry = try #require(Self.transactions(prorated)["2000000000000001"])
            #expect(entry["state"] == .string("refunded") && entry["deliver"] == .bool(false))
            #expect(entry["refund_type"] == .string("REFUND_PRORATED"))
            // 25000 thousandths of a percent: 25 (JSON writes the whole number without a fraction).
            #expect(entry["refund_percentage"] == .integer(25))
            #expect(entry["reason"] == .integer(1))
            #expect(entry["refunded_after_delivery"] == .bool(true))

            var family = JWSBuilder()
            family.transactionID = "2000000000000002"
            family.originalTransactionID = "2000000000000002"
            family.ownershipType = "FAMILY_SHARED"
            family.revocation = (RFC3339.date("2023-05-10T00:00:00Z"), 0, "FAMILY_REVOKE", nil)
            let revoked = try await Self.call(service, tenant, receipt: try family.build(signedBy: service.jwsPKI))
                .json()
            let shared = try #require(Self.transactions(revoked)["2000000000000002"])
            #expect(shared["state"] == .string("refunded") && shared["refund_type"] == .string("FAMILY_REVOKE"))
            #expect(shared["deliver"] == .bool(false) && shared["refunded_after_delivery"] == nil)

            let rows = try await service.post(
                "/api/transactions",
                form: [
                    ("apikey", tenant.apiKey), ("token", tenant.token),
                    ("original_transaction_id", "2000000000000002"),
                ]
            ).json()
            let row = try #require(rows["transactions"]?.arrayValue?.first?.objectValue)
            #expect(row["ownership_type"] == .string("FAMILY_SHARED"))
            // Signed by a test root: Xcode's environment, whatever the payload says.
            #expect(row["environment"] == .string("Xcode"))
        }
    }

    @Test("look-ups by user and original transaction, paged", arguments: StoreKind.available)
    func lookUps(kind: StoreKind) async throws {
        try await withLiveService(kind) { service in
            let tenant = try service.tenant(appArguments: ["--allow-test-data"])
            _ = try await Self.call(service, tenant, receipt: try Self.receipt(service, count: 10), user: "alice")
            func page(_ fields: [(String, String)]) async throws -> JSONObject {
                let answer = try await service.post(
                    "/api/transactions", form: [("apikey", tenant.apiKey), ("token", tenant.token)] + fields)
                #expect(answer.httpStatus == 200)
                return try answer.json()
            }
            var ids: [String] = []
            var cursor: String?
            var pages = 0
            repeat {
                let answer = try await page(
                    [("original_transaction_id", "1000000000"), ("limit", "2")]
                        + (cursor.map { [("cursor", $0)] } ?? []))
                ids += (answer["transactions"]?.arrayValue ?? []).compactMap { $0["transaction_id"]?.stringValue }
                cursor = answer["next_cursor"]?.stringValue
                pages += 1
            } while cursor != nil && pages < 10
            #expect(ids.sorted() == ["1000000000", "1000000002", "1000000004", "1000000006", "1000000008"])
            #expect(pages == 3)
            let byUser = try await page([("app_user_id", "alice"), ("limit", "1000")])
            #expect(byUser["transactions"]?.arrayValue?.count == 10)
            #expect(byUser["transactions"]?.arrayValue?.first?["app_user_id"] == .string("alice"))
            #expect(try await page([("app_user_id", "nobody")])["transactions"] == .array([]))

            for bad in [[("limit", "1001"), ("app_user_id", "a")], [("cursor", "garbage"), ("app_user_id", "a")], []] {
                let answer = try await service.post(
                    "/api/transactions", form: [("apikey", tenant.apiKey), ("token", tenant.token)] + bad)
                #expect(answer.httpStatus == 400, "\(bad)")
            }
            // The CLI sees the same ledger; usage counts the look-ups as their own endpoint.
            let listed = try service.cli.expectSuccess([
                "transactions", "list", "--app", tenant.token, "--user", "alice", "--json",
            ])
            let rows = try JSONParser.parse(Array(listed.stdout.utf8)).arrayValue ?? []
            #expect(rows.count == 10)
            let table = try service.cli.expectSuccess(["transactions", "list", "--app", tenant.token])
            #expect(table.stdout.split(separator: "\n").count == 11)
            // Five look-ups answered (three pages, alice's rows, nobody's); the 400s are not billed.
            var lookUps = 0
            for _ in 0..<50 {
                let report = try service.cli.expectSuccess(["usage", "--account", tenant.email, "--json"]).jsonObject()
                lookUps = (report["rows"]?.arrayValue ?? []).filter { $0["endpoint"] == .string("transactions") }
                    .reduce(0) { total, row in
                        guard case .integer(let calls)? = row["calls"] else { return total }
                        return total + Int(calls)
                    }
                if lookUps == 5 { break }
                try await Task.sleep(for: .milliseconds(100))
            }
            #expect(lookUps == 5)
        }
    }

    @Test(
        "50 concurrent requests with one new receipt: each transaction is new exactly once",
        arguments: StoreKind.available)
    func exactlyOnceUnderConcurrency(kind: StoreKind) async throws {
        try await withLiveService(kind) { service in
            let tenant = try service.tenant(appArguments: ["--allow-test-data"])
            let receipt = try Self.receipt(service, count: 4)
            let answers = try await withThrowingTaskGroup(of: [String].self) { group in
                for _ in 0..<50 {
                    group.addTask {
                        let answer = try await Self.call(service, tenant, receipt: receipt)
                        return (try answer.json()["transactions"]?.arrayValue ?? []).compactMap { entry in
                            entry["state"] == .string("new") ? entry["transaction_id"]?.stringValue : nil
                        }
                    }
                }
                return try await group.reduce(into: [String]()) { $0 += $1 }
            }
            #expect(answers.sorted() == ["1000000000", "1000000001", "1000000002", "1000000003"])
        }
    }

    @Test(
        "two serve processes on one PostgreSQL: each transaction new exactly once; a claim moved by one is seen by the other",
        .enabled(if: StoreKind.available.contains(.postgres)))
    func exactlyOnceAcrossServers() async throws {
        try await withLiveService(.postgres) { service in
            let tenant = try service.tenant(appArguments: ["--allow-test-data", "--claims", "transfer"])
            let receipt = try Self.receipt(service, count: 3)
            let fields = [("apikey", tenant.apiKey), ("token", tenant.token), ("receipt", receipt)]
            let first = try await service.startServer(logName: "a.log")
            let second = try await service.startServer(logName: "b.log")
            let news = try await withThrowingTaskGroup(of: [String].self) { group in
                for index in 0..<40 {
                    let server = index % 2 == 0 ? first : second
                    group.addTask {
                        let answer = try await service.post(to: server, form: fields).json()
                        return (answer["transactions"]?.arrayValue ?? []).compactMap { entry in
                            entry["state"] == .string("new") ? entry["transaction_id"]?.stringValue : nil
                        }
                    }
                }
                return try await group.reduce(into: [String]()) { $0 += $1 }
            }
            #expect(news.sorted() == ["1000000000", "1000000001", "1000000002"])

            // Alice claims on the first server, the second server answers from memory; bob takes the purchases over
            // on the first; the second sees the move on its next call (the change is announced).
            _ = try await service.post(to: first, form: fields + [("app_user_id", "alice")])
            let remembered = try await service.post(to: second, form: fields + [("app_user_id", "alice")]).json()
            #expect(Self.states(remembered) == ["seen/false", "seen/false", "seen/false"])
            let moved = try await service.post(to: first, form: fields + [("app_user_id", "bob")]).json()
            #expect(Self.transactions(moved)["1000000000"]?["transferred_from"] == .string("alice"))
            var seenOnSecond: JSONObject = [:]
            for _ in 0..<20 {
                // The notification travels asynchronously: allow it a moment, as a client's retry would.
                seenOnSecond = try await service.post(to: second, form: fields + [("app_user_id", "alice")]).json()
                if Self.transactions(seenOnSecond)["1000000000"]?["transferred_from"] == .string("bob") { break }
                try await Task.sleep(for: .milliseconds(50))
            }
            #expect(Self.transactions(seenOnSecond)["1000000000"]?["transferred_from"] == .string("bob"))
            #expect(first.stop() == 0, "\(first.logText)")
            #expect(second.stop() == 0, "\(second.logText)")
        }
    }

    @Test("ledger writes, answers from memory and conflicts are in /metrics", arguments: StoreKind.available)
    func metrics(kind: StoreKind) async throws {
        try await withLiveService(kind) { service in
            let tenant = try service.tenant(appArguments: ["--allow-test-data"])
            let receipt = try Self.receipt(service, count: 2)
            _ = try await Self.call(service, tenant, receipt: receipt, user: "alice")
            _ = try await Self.call(service, tenant, receipt: receipt, user: "alice")
            _ = try await Self.call(service, tenant, receipt: receipt, user: "bob")
            let text = try await MetricsAPITests.get("\(service.baseURL)/metrics", http: service.http).body
            for line in [
                #"receiptverify_ledger_transactions_total{state="new"} 2"#,
                #"receiptverify_ledger_transactions_total{state="seen"} 2"#,
                #"receiptverify_ledger_transactions_total{state="claimed_by_other_user"} 2"#,
                #"receiptverify_ledger_claim_conflicts_total{policy="flag"} 2"#,
            ] {
                #expect(text.contains(line), "\(line)\n\(text)")
            }
            func value(_ name: String) -> Int? {
                text.split(separator: "\n").first { $0.hasPrefix(name + " ") }.flatMap {
                    Int($0.split(separator: " ")[1])
                }
            }
            // Three answers: the first wrote, the others came from memory (the ledger's change marker moves only when
            // an existing row's claim, revocation or delivery changes).
            let (writes, fromMemory) = (
                value("receiptverify_ledger_writes_total"), value("receiptverify_ledger_memory_answers_total")
            )
            #expect(writes == 1 && fromMemory == 2, "\(text)")
        }
    }
}
