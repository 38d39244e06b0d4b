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
    static var pki: TestPKI { InProcessAPITests.pki }

    @Test func newReceiptsDoNotSendTheStandingBackToTheDatabaseAndAPlanChangeDoes() async throws {
        try await withTemporarySQLite { base, logger in
            let store = InstrumentedStore(base)
            try await InProcessAPITests.withFixture(over: store, logger: logger) { fixture in
                // Five receipts, each with purchases the ledger has not seen.
                let receipts = try (0..<5).map { index in
                    var builder = ReceiptBuilder(inAppPurchaseCount: 2)
                    for purchase in builder.inAppPurchases.indices {
                        builder.inAppPurchases[purchase].transactionID = "\(7_000_000 + index * 10 + purchase)"
                        builder.inAppPurchases[purchase].originalTransactionID = "\(7_000_000 + index * 10 + purchase)"
                    }
                    return try builder.build(signedBy: Self.pki).base64
                }
                try await fixture.app.test(.router) { client in
                    func verify(_ receipt: String) async throws {
                        let body = InProcessAPITests.form([
                            "apikey": fixture.key, "token": fixture.token, "receipt": receipt,
                        ])
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
                    _ = try await fixture.tenancy.setPlan(
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
}
