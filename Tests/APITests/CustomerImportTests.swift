import Foundation
import ReceiptCore
import ReceiptTestKit
import TestSupport
import Testing

/// `receiptverify customers import` against the fake App Store Server API (docs/api.md, "Importing customers"). Its
/// fake Apple answers from inside the test process while the CLI runs: `scripts/test.sh` runs it one test at a time,
/// with the other suites whose fakes must answer in time.
@Suite struct CustomerImportTests {
    @Test(
        "customers import reads a long history to its end, oldest first (money review M5)",
        arguments: StoreKind.available)
    func importReadsTheWholeHistory(kind: StoreKind) async throws {
        try await ServerAPIAnswersTests.withServerAPI(kind, bundleID: "com.example.app") { service, fake in
            let tenant = try ServerAPIAnswersTests.tenant(service)
            fake.script("production", ServerAPIAnswersTests.history(try ServerAPIAnswersTests.longHistory()))
            let report = try service.cli.expectSuccess(
                [
                    "customers", "import", tenant.token, "--original-transaction-id", "1000000000", "--json",
                    "--production-url", fake.baseURL + "/production", "--sandbox-url", fake.baseURL + "/sandbox",
                    "--trust-anchors", service.anchors.path, "--allow-test-data",
                ]
            ).jsonObject()
            #expect(report["new_transactions"] == .integer(205), "\(report)")
            let pages = fake.received.filter { $0.path.hasPrefix("/inApps/v2/history/") }
            #expect(pages.count == 11 && pages.allSatisfy { $0.query.contains("sort=ASCENDING") })
        }
    }

    @Test(
        "customers import fills the ledger and entitlements from Apple's Transaction History, once",
        arguments: StoreKind.available)
    func importFromTransactionHistory(kind: StoreKind) async throws {
        try await ServerAPIAnswersTests.withServerAPI(kind, bundleID: "com.example.app") { service, fake in
            let tenant = try ServerAPIAnswersTests.tenant(
                service, ["--product", "com.example.app.monthly=auto_renewable:pro"])
            // Two periods, the second still running; Apple answers the sandbox (production knows no such id).
            let now = Date().timeIntervalSince(ServerAPIAnswersTests.base) / 3_600
            let history = ServerAPIAnswersTests.history([
                try ServerAPIAnswersTests.transaction("1000000000", hoursAfterBase: now - 40 * 24),
                try ServerAPIAnswersTests.transaction("1000000001", hoursAfterBase: now - 10 * 24),
            ])
            fake.script("sandbox", history)
            let file = service.cli.directory.appendingPathComponent("customers.csv")
            try "# moving to ReceiptVerify\n1000000000,alice\n\n4000000000,bob\n".write(
                to: file, atomically: true, encoding: .utf8)
            let storeKit = [
                "--production-url", fake.baseURL + "/production", "--sandbox-url", fake.baseURL + "/sandbox",
                "--trust-anchors", service.anchors.path, "--allow-test-data",
            ]
            let first = try service.cli.run(
                ["customers", "import", tenant.token, "--file", file.path, "--json"] + storeKit)
            // Bob's transaction is unknown to Apple: reported, and the command fails for it alone.
            #expect(first.status == 1)
            let report = try #require(try JSONParser.parse(Array(first.stdout.utf8)).objectValue)
            #expect(report["imported"] == .integer(1) && report["new_transactions"] == .integer(2))
            #expect(report["failed"]?.arrayValue?.count == 1, "\(report)")
            let alice = try await EntitlementAPITests.customer(service, tenant, [("app_user_id", "alice")]).json()
            let pro = try #require(EntitlementAPITests.entitlement(alice["customer"], "pro"))
            #expect(pro["active"] == .bool(true) && pro["transaction_id"] == .string("1000000001"))
            #expect(alice["customer"]?["subscriptions"]?.arrayValue?.first?["periods"] == .integer(2))

            // Imported purchases count as delivered (the app's previous backend delivered them), claimed by alice.
            let rows = try await NotificationAPITests.lookUp(service, tenant, original: "1000000000")
            let ledger = try #require(rows["transactions"]?.arrayValue)
            #expect(ledger.count == 2)
            #expect(
                ledger.allSatisfy { $0["delivered_at"]?.stringValue != nil && $0["app_user_id"] == .string("alice") })
            // A second run finds everything known.
            fake.script("sandbox", history)
            let second = try service.cli.expectSuccess(
                ["customers", "import", tenant.token, "--original-transaction-id", "1000000000", "--json"] + storeKit
            ).jsonObject()
            #expect(second["new_transactions"] == .integer(0) && second["known_transactions"] == .integer(2))

            // Resumed with --skip-known, what the ledger holds is not asked of Apple again; the rest is.
            let asked = fake.received.count
            fake.script("sandbox", history)
            let third = try service.cli.run(
                [
                    "customers", "import", tenant.token, "--original-transaction-id", "1000000000",
                    "--original-transaction-id", "4000000000", "--skip-known", "--json",
                ] + storeKit)
            let resumed = try #require(try JSONParser.parse(Array(third.stdout.utf8)).objectValue)
            #expect(resumed["skipped"] == .integer(1) && resumed["imported"] == .integer(1), "\(resumed)")
            let paths = fake.received.dropFirst(asked).map(\.path)
            #expect(paths.contains { $0.contains("4000000000") }, "the unknown id is asked: \(paths)")
            #expect(!paths.contains { $0.contains("1000000000") }, "the known id is not asked: \(paths)")
        }
    }
}
