import Foundation
import ReceiptCore
import ReceiptTestKit
import TestSupport
import Testing

/// Apple's 2025-2026 transaction fields (`appTransactionId`, `offerPeriod`, `billingPlanType`, `commitmentInfo`)
/// through to answers, the ledger on both stores and entitlements: a month of a twelve-month commitment billed
/// monthly is not the commitment's end.
@Suite struct AppleFieldsTests {
    @Test(
        "a month of a commitment: its terms in the answer, the ledger and the customer", arguments: StoreKind.available)
    func aMonthOfACommitment(kind: StoreKind) async throws {
        try await withLiveService(kind) { service in
            let tenant = try service.tenant(appArguments: [
                "--allow-test-data", "--product", "com.example.app.monthly=auto_renewable:pro",
            ])
            let monthEnd = Date().addingTimeInterval(20 * 86_400)
            let commitmentEnd = Date().addingTimeInterval(300 * 86_400)
            let commitmentEndMilliseconds = Int64((commitmentEnd.timeIntervalSince1970 * 1_000).rounded(.down))
            var month = JWSBuilder()
            month.transactionID = "7400"
            month.originalTransactionID = "7400"
            month.purchaseDate = Date().addingTimeInterval(-10 * 86_400)
            month.expiresDate = monthEnd
            month.signedDate = Date()
            month.extraPayload = [
                "appTransactionId": "704528340000000009", "offerPeriod": "P1M", "billingPlanType": "MONTHLY",
                "commitmentInfo": [
                    "billingPeriodNumber": 2, "totalBillingPeriods": 12,
                    "commitmentExpiresDate": commitmentEndMilliseconds, "commitmentPrice": 119_880,
                ] as [String: any Sendable],
            ]
            let signed = try month.build(signedBy: service.jwsPKI)
            let answer = try await EntitlementAPITests.verify(service, tenant, signed, user: "alice")
            let terms: JSONObject = [
                "billing_period_number": .integer(2), "total_billing_periods": .integer(12),
                "expires_date_ms": .integer(commitmentEndMilliseconds), "price": .integer(119_880),
            ]
            #expect(answer["status"] == .integer(0), "\(answer)")
            // The answer: Apple's payload as signed, and the delivery decision with the terms.
            #expect(answer["receipt"]?["billingPlanType"] == .string("MONTHLY"))
            let decision = try #require(ServerAPIAnswersTests.transactions(answer)["7400"])
            #expect(decision["app_transaction_id"] == .string("704528340000000009"))
            #expect(decision["offer_period"] == .string("P1M") && decision["billing_plan_type"] == .string("MONTHLY"))
            #expect(decision["commitment"] == .object(terms))
            // The ledger kept them (read back from the store).
            let page = try await service.post(
                "/api/transactions",
                form: [("apikey", tenant.apiKey), ("token", tenant.token), ("app_user_id", "alice")]
            ).json()
            let row = try #require(page["transactions"]?.arrayValue?.first)
            #expect(row["commitment"] == .object(terms) && row["app_transaction_id"] == .string("704528340000000009"))
            // The customer: the month ends, the commitment runs on, and the customer renews (committed) even with
            // the commitment's renewal turned off.
            var renewal = JWSBuilder()
            renewal.payload = .renewalInfo
            renewal.originalTransactionID = "7400"
            renewal.autoRenewStatus = 0
            renewal.signedDate = Date()
            let off = try EntitlementAPITests.notification(
                service, "DID_CHANGE_RENEWAL_STATUS", subtype: "AUTO_RENEW_DISABLED", transaction: signed,
                renewal: try renewal.build(signedBy: service.jwsPKI))
            #expect(try await NotificationAPITests.send(service, tenant.token, off).httpStatus == 200)
            let customer = try await EntitlementAPITests.customer(service, tenant, [("app_user_id", "alice")]).json()
            let pro = try #require(EntitlementAPITests.entitlement(customer["customer"], "pro"))
            #expect(pro["active"] == .bool(true) && pro["expires_at"] == .string(EntitlementAPITests.rfc3339(monthEnd)))
            #expect(pro["commitment_expires_at"] == .string(AppleDate.rfc3339(milliseconds: commitmentEndMilliseconds)))
            #expect(pro["will_renew"] == .bool(true) && pro["billing_plan_type"] == .string("MONTHLY"))
            #expect(pro["unsubscribe_detected_at"] != .null, "the commitment's renewal was turned off")
        }
    }
}
