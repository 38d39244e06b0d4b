import Foundation
import ReceiptCore
import ReceiptTestKit
import Testing

/// One transaction type from every input: real Apple receipts, an iOS 6 receipt, a StoreKit 2 transaction and Apple's
/// recorded `verifyReceipt` answers, and a generated JWS that states a prorated refund.
@Suite struct PurchaseTransactionTests {
    static func verify(_ path: String) throws -> VerifiedReceipt? {
        guard let directory = Fixtures.directory else { return nil }
        let text = try String(contentsOf: directory.appendingPathComponent(path), encoding: .utf8)
        return try ReceiptVerifier(anchors: .apple).verify(try ReceiptInput.decode(text))
    }

    static func answer(_ path: String) throws -> JSONObject? {
        guard let directory = Fixtures.directory else { return nil }
        guard
            case .object(let object) = try JSONParser.parse(
                Array(try Data(contentsOf: directory.appendingPathComponent(path))))
        else { return nil }
        return object
    }

    @Test func aUnifiedReceiptYieldsEachOfItsPurchases() throws {
        guard let verified = try Self.verify("receipts/revenuecat_sandbox_ios_2020.b64") else { return }
        let transactions = PurchaseTransaction.all(in: verified)
        #expect(transactions.count == 9)
        #expect(
            transactions.first
                == PurchaseTransaction(
                    transactionID: "1000000692879214", originalTransactionID: "1000000692878476",
                    productID: "com.revenuecat.monthly_4.99.1_week_intro", purchaseDate: 1_594_755_400_000,
                    originalPurchaseDate: 1_594_755_207_000, expiresDate: 1_594_755_700_000, quantity: 1,
                    webOrderLineItemID: "1000000054042695", signedDate: verified.signingDate))
        // Each carries the date the receipt was signed (its creation date), against which its revocation is weighed.
        #expect(transactions.allSatisfy { $0.signedDate == verified.signingDate })
        // Apple's answer for the same receipt: in_app and latest_receipt_info merged by id give the same nine.
        guard let answer = try Self.answer("apple-responses/revenuecat_status0_unified_sandbox_2020.json") else {
            return
        }
        #expect(
            Set(PurchaseTransaction.all(inAnswer: answer).map(\.transactionID))
                == Set(transactions.map(\.transactionID)))
    }

    @Test func anIOS6ReceiptYieldsItsOnePurchaseWithItsExpiry() throws {
        guard let verified = try Self.verify("receipts/ios6_sandbox_mindmob_2012.b64") else { return }
        #expect(
            PurchaseTransaction.all(in: verified) == [
                PurchaseTransaction(
                    transactionID: "1000000046178817", originalTransactionID: "1000000046178817",
                    productID: "com.mindmobapp.download", purchaseDate: 1_335_798_355_868,
                    originalPurchaseDate: 1_335_798_355_868, signedDate: verified.signingDate)
            ])
        // An iOS 6 subscription in Apple's answer: `expires_date` holds milliseconds.
        guard let answer = try Self.answer("apple-responses/mbaasy_status0_ios6_subscription_sandbox_2015.json") else {
            return
        }
        let transaction = try #require(PurchaseTransaction.all(inAnswer: answer).first)
        #expect(transaction.transactionID == "1000000181298734" && transaction.expiresDate == 1_448_346_881_000)
        #expect(transaction.webOrderLineItemID == "1000000030938713")
    }

    @Test func aStoreKitTransactionYieldsItselfWithItsOwnershipAndToken() throws {
        guard let verified = try Self.verify("jws/apple_transaction_voicerec_sub_2022.jws") else { return }
        let transaction = try #require(PurchaseTransaction.all(in: verified).first)
        #expect(transaction.transactionID == "2000000191896422")
        #expect(transaction.originalTransactionID == "2000000184445477")
        #expect(transaction.expiresDate == 1_667_391_504_000 && transaction.inAppOwnershipType == "PURCHASED")
        #expect(transaction.appAccountToken == "e4b2c0ab-07a9-4e12-91c9-a76d7d51b72e")
        #expect(transaction.revocationDate == nil)
        // Renewal info and notifications carry no transaction of their own here.
        guard let renewal = try Self.verify("jws/apple_renewal_info_voicerec_2022.jws") else { return }
        #expect(PurchaseTransaction.all(in: renewal).isEmpty)
    }

    @Test func revocationsAreReadFromBothForms() throws {
        var refunded = JSONObject()
        refunded["transaction_id"] = .string("1")
        refunded["product_id"] = .string("coins")
        refunded["cancellation_date_ms"] = .string("1700000000000")
        refunded["cancellation_reason"] = .string("1")
        let fromReceipt = try #require(PurchaseTransaction(verifyReceiptFields: refunded))
        #expect(fromReceipt.revocationDate == 1_700_000_000_000 && fromReceipt.revocationReason == 1)
        #expect(fromReceipt.originalTransactionID == "1")

        var payload = JSONObject()
        payload["transactionId"] = .string("2")
        payload["productId"] = .string("monthly")
        payload["revocationDate"] = .integer(1_700_000_000_000)
        payload["revocationReason"] = .integer(0)
        payload["revocationType"] = .string("REFUND_PRORATED")
        payload["revocationPercentage"] = .integer(45_000)
        payload["inAppOwnershipType"] = .string("FAMILY_SHARED")
        let fromJWS = try #require(PurchaseTransaction(jwsPayload: payload))
        #expect(fromJWS.revocationType == "REFUND_PRORATED" && fromJWS.revocationPercentage == 45_000)
        #expect(fromJWS.inAppOwnershipType == "FAMILY_SHARED" && fromJWS.revocationReason == 0)
        #expect(PurchaseTransaction(jwsPayload: JSONObject()) == nil)
    }

    @Test func aRefundStatedOnlyInLatestReceiptInfoIsKept() {
        func entry(_ cancelled: Bool) -> JSONValue {
            var object = JSONObject()
            object["transaction_id"] = .string("7")
            object["product_id"] = .string("monthly")
            if cancelled { object["cancellation_date_ms"] = .string("1700000000000") }
            return .object(object)
        }
        var receipt = JSONObject()
        receipt["in_app"] = .array([entry(false)])
        var answer = JSONObject()
        answer["receipt"] = .object(receipt)
        answer["latest_receipt_info"] = .array([entry(true)])
        let merged = PurchaseTransaction.all(inAnswer: answer)
        #expect(merged.count == 1 && merged[0].revocationDate == 1_700_000_000_000)
    }

    /// Since 2025 Apple's transactions and renewal infos carry `appTransactionId`: a transaction is still a
    /// transaction (it was taken for an AppTransaction without a `receiptCreationDate`, refused as malformed), and
    /// its 2025-2026 terms are read.
    @Test func aTransactionWithAnAppTransactionIDIsATransactionWithItsTerms() throws {
        let verifier = ReceiptVerifier(anchors: try ServerNotificationTests.pki.trustAnchors())
        var builder = JWSBuilder()
        builder.extraPayload = [
            "appTransactionId": "704528340000000009", "offerPeriod": "P1M", "billingPlanType": "MONTHLY",
            "commitmentInfo": [
                "billingPeriodNumber": 2, "totalBillingPeriods": 12, "commitmentExpiresDate": 1_800_000_000_000,
                "commitmentPrice": 119_880,
            ] as [String: any Sendable],
        ]
        let verified = try verifier.verify(
            ReceiptInput.decode(try builder.build(signedBy: ServerNotificationTests.pki)), allowTestData: true)
        #expect(verified.kind == .signedTransaction)
        let transaction = try #require(PurchaseTransaction.all(in: verified).first)
        #expect(transaction.appTransactionID == "704528340000000009" && transaction.offerPeriod == "P1M")
        #expect(transaction.billingPlanType == "MONTHLY")
        #expect(
            transaction.commitment
                == Commitment(
                    billingPeriodNumber: 2, totalBillingPeriods: 12, expiresDate: 1_800_000_000_000, price: 119_880))
        var renewal = JWSBuilder()
        renewal.payload = .renewalInfo
        renewal.extraPayload = ["appTransactionId": "704528340000000009", "renewalBillingPlanType": "MONTHLY"]
        let renewalVerified = try verifier.verify(
            ReceiptInput.decode(try renewal.build(signedBy: ServerNotificationTests.pki)), allowTestData: true)
        #expect(renewalVerified.kind == .signedRenewalInfo)
        var app = JWSBuilder()
        app.payload = .appTransaction
        let appVerified = try verifier.verify(
            ReceiptInput.decode(try app.build(signedBy: ServerNotificationTests.pki)), allowTestData: true)
        #expect(appVerified.kind == .appTransaction)
    }
}
