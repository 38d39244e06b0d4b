import Foundation
import ReceiptCore
import Testing

@testable import ReceiptService

/// Apple's 2025-2026 fields of signed transactions and renewal infos, carried into an enriched answer's
/// `latest_receipt_info` and `pending_renewal_info` under verifyReceipt's naming; items without them unchanged.
@Suite struct ServerAPIFieldsTests {
    @Test func aMonthOfACommitmentKeepsItsTermsInVerifyReceiptsShape() throws {
        let transaction: JSONObject = [
            "transactionId": .string("7400"), "originalTransactionId": .string("7400"),
            "productId": .string("pro.monthly"), "purchaseDate": .integer(1_767_225_600_000),
            "expiresDate": .integer(1_769_904_000_000), "type": .string("Auto-Renewable Subscription"),
            "appTransactionId": .string("704528340000000009"), "offerPeriod": .string("P1M"),
            "billingPlanType": .string("MONTHLY"),
            "commitmentInfo": .object([
                "billingPeriodNumber": .integer(2), "totalBillingPeriods": .integer(12),
                "commitmentExpiresDate": .integer(1_796_083_200_000), "commitmentPrice": .integer(119_880),
            ]),
        ]
        let item = try #require(ServerAPIFields.latestReceiptInfo([transaction], excludingOld: false).first)
        #expect(item["app_transaction_id"] == .string("704528340000000009") && item["offer_period"] == .string("P1M"))
        #expect(item["billing_plan_type"] == .string("MONTHLY"))
        #expect(item["commitment_billing_period_number"] == .string("2"))
        #expect(item["commitment_total_billing_periods"] == .string("12"))
        #expect(item["commitment_expires_date_ms"] == .string("1796083200000"))
        let renewal: JSONObject = [
            "originalTransactionId": .string("7400"), "autoRenewProductId": .string("pro.monthly"),
            "productId": .string("pro.monthly"), "autoRenewStatus": .integer(1),
            "appTransactionId": .string("704528340000000009"), "renewalBillingPlanType": .string("MONTHLY"),
            "commitmentInfo": .object([
                "commitmentAutoRenewProductId": .string("pro.monthly"), "commitmentAutoRenewStatus": .integer(0),
                "commitmentRenewalBillingPlanType": .string("MONTHLY"),
                "commitmentRenewalDate": .integer(1_796_083_200_000),
            ]),
        ]
        let pending = try #require(ServerAPIFields.pendingRenewalInfo([renewal]).first)
        #expect(pending["renewal_billing_plan_type"] == .string("MONTHLY"))
        #expect(pending["commitment_auto_renew_status"] == .string("0"))
        #expect(pending["commitment_renewal_date_ms"] == .string("1796083200000"))
        #expect(pending["app_transaction_id"] == .string("704528340000000009"))
        // A 2022 item says nothing of them.
        var old = transaction
        for key in ["appTransactionId", "offerPeriod", "billingPlanType", "commitmentInfo"] { old[key] = nil }
        let plain = try #require(ServerAPIFields.latestReceiptInfo([old], excludingOld: false).first)
        guard case .object(let fields) = plain else {
            Issue.record("latest_receipt_info holds \(plain), not an object")
            return
        }
        #expect(fields.keys.allSatisfy { !$0.hasPrefix("commitment") && $0 != "billing_plan_type" })
    }
}
