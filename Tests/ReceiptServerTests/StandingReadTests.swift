import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import ReceiptCore
import ReceiptServer
import ReceiptService
import ReceiptStore
import ReceiptTestKit
import Testing

/// The account's standing on SQLite is read again only after a plan or account change, not after every commit: new
/// receipts recorded in the ledger (a commit each) leave the cached standing in place (issue 38; before, the marker
/// was the write-ahead log's metadata, and every new receipt sent the next calls back to the database). A cached
/// standing also lapses after a second (`UsageGate.standingMaxAge`), so this suite is time-bound (scripts/test.sh runs
/// it alone): its calls take milliseconds.
@Suite struct StandingReadTests {
    static let pki = try! TestPKI(TestPKI.Options(keyType: .rsa2048))

    @Test func newReceiptsDoNotSendTheStandingBackToTheDatabaseAndAPlanChangeDoes() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("rv-\(UUID().uuidString).sqlite").path
        defer {
            for suffix in ["", "-wal", "-shm", "-ledger", "-statuses", "-customers"] {
                try? FileManager.default.removeItem(atPath: path + suffix)
            }
        }
        let logger = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
        try await StoreLocation.sqlite(path: path).withStore(logger: logger) { base in
            let store = InstrumentedStore(base)
            let tenancy = TenancyService(store: store, masterKey: MasterKey.generate())
            _ = try await tenancy.setPlan(
                name: "pro", monthlyQuota: .some(1_000_000), rateLimitPerSecond: 1000,
                includesEncryptedEndpoint: true, monthlyPriceCents: nil, overagePricePer1000Cents: nil)
            _ = try await tenancy.createAccount(name: "Acme", email: "ops@acme.test", planName: "pro")
            let key = try await tenancy.createAPIKey(account: "ops@acme.test", label: nil).clearText
            let anchors = try TrustAnchors(encoded: [Self.pki.rootDER])
            var settings = AppSettings(
                bundleIDs: ["com.example.app"], allowedEnvironments: ["sandbox", "production"],
                verificationMode: "local", resultCipher: "aes-256-gcm", allowsTestData: true)
            settings.testAnchors = anchors.anchors.map(\.fingerprint)
            let app = try await tenancy.addApp(account: "ops@acme.test", settings: settings)
            let application = try buildApplication(
                configuration: ServerConfiguration.forTests(), tenancy: tenancy,
                verification: VerificationService(verifier: ReceiptVerifier(anchors: anchors), apple: nil),
                logger: logger)
            // Five receipts, each with purchases the ledger has not seen.
            let receipts = try (0..<5).map { index in
                var builder = ReceiptBuilder(inAppPurchaseCount: 2)
                for purchase in builder.inAppPurchases.indices {
                    builder.inAppPurchases[purchase].transactionID = "\(7_000_000 + index * 10 + purchase)"
                    builder.inAppPurchases[purchase].originalTransactionID = "\(7_000_000 + index * 10 + purchase)"
                }
                return try builder.build(signedBy: Self.pki).base64
            }
            try await application.test(.router) { client in
                func verify(_ receipt: String) async throws {
                    let body = InProcessAPITests.form(["apikey": key, "token": app.token, "receipt": receipt])
                    try await client.execute(
                        uri: "/api", method: .post, headers: InProcessAPITests.formHeaders, body: body
                    ) { response in
                        let answer = try InProcessAPITests.json(response.body)
                        #expect(answer["status"] == .integer(0))
                        guard case .array(let entries)? = answer["transactions"] else {
                            Issue.record("no transactions in \(answer)")
                            return
                        }
                        #expect(entries.allSatisfy { $0["state"] == .string("new") })
                    }
                }
                for receipt in receipts { try await verify(receipt) }
                #expect(store.count("record") == receipts.count)
                #expect(store.count("standing") == 1)

                // A plan change (the CLI's `plan set`, here through the same store) is seen by the next call.
                _ = try await tenancy.setPlan(
                    name: "pro", monthlyQuota: .some(2_000_000), rateLimitPerSecond: 1000,
                    includesEncryptedEndpoint: true, monthlyPriceCents: nil, overagePricePer1000Cents: nil)
                var next = ReceiptBuilder(inAppPurchaseCount: 1)
                next.inAppPurchases[0].transactionID = "7999999"
                next.inAppPurchases[0].originalTransactionID = "7999999"
                try await verify(try next.build(signedBy: Self.pki).base64)
                #expect(store.count("standing") == 2)
            }
        }
    }
}
