import Foundation
import ReceiptCore
import Testing

@testable import ReceiptService

/// The body of an app's answer to a refund request (``ConsumptionRules``): one test per rule.
@Suite struct ConsumptionRulesTests {
    static let answering = RefundAnswers(policy: .rules, customerConsented: true, sampleContentProvided: false)
    static let delivered = Date(timeIntervalSince1970: 1_790_000_000)

    static func facts(
        delivered: Bool = true, consumed: Int? = nil, status: ConsumptionDeliveryStatus? = nil,
        refunds: Int = 0
    ) -> ConsumptionRules.Facts {
        let report =
            (consumed != nil || status != nil)
            ? ConsumptionReport(consumedMilli: consumed, deliveryStatus: status, reportedAt: Self.delivered) : nil
        return ConsumptionRules.Facts(
            deliveredAt: delivered ? Self.delivered : nil, report: report, earlierRefunds: refunds)
    }

    static func preference(_ facts: ConsumptionRules.Facts, _ answers: RefundAnswers = answering) -> JSONValue? {
        ConsumptionRules.body(facts, answers: answers)?["refundPreference"]
    }

    @Test func nothingIsAnsweredWithoutAPolicyOrTheCustomersConsent() {
        #expect(ConsumptionRules.body(Self.facts(), answers: RefundAnswers()) == nil)
        #expect(ConsumptionRules.body(Self.facts(), answers: RefundAnswers(policy: .decline)) == nil)
    }

    @Test func theBodyStatesConsentDeliveryAndTheSampleInApplesOrder() throws {
        let answers = RefundAnswers(policy: .inform, customerConsented: true, sampleContentProvided: true)
        let body = try #require(ConsumptionRules.body(Self.facts(consumed: 40_000), answers: answers))
        #expect(
            body.members.map(\.key) == [
                "customerConsented", "consumptionPercentage", "deliveryStatus",
                "sampleContentProvided",
            ])
        #expect(body["customerConsented"] == .bool(true) && body["sampleContentProvided"] == .bool(true))
        #expect(body["deliveryStatus"] == .string("DELIVERED") && body["consumptionPercentage"] == .integer(40_000))
        // Never delivered as far as the ledger knows; the backend's own status wins where it gives one.
        #expect(
            ConsumptionRules.body(Self.facts(delivered: false), answers: answers)?["deliveryStatus"]
                == .string("UNDELIVERED_OTHER"))
        #expect(
            ConsumptionRules.body(Self.facts(status: .undeliveredServerOutage), answers: answers)?[
                "deliveryStatus"] == .string("UNDELIVERED_SERVER_OUTAGE"))
        #expect(ConsumptionRules.body(Self.facts(), answers: answers)?["consumptionPercentage"] == nil)
    }

    @Test func fixedPoliciesStateTheirPreference() {
        for (policy, stated) in [
            (RefundAnswers.Policy.decline, "DECLINE"), (.grantFull, "GRANT_FULL"),
            (.grantProrated, "GRANT_PRORATED"),
        ] {
            let answers = RefundAnswers(policy: policy, customerConsented: true)
            #expect(Self.preference(Self.facts(delivered: false), answers) == .string(stated))
        }
    }

    @Test func theRulesGrantWhatWasNeverDelivered() {
        #expect(Self.preference(Self.facts(delivered: false)) == .string("GRANT_FULL"))
        #expect(Self.preference(Self.facts(status: .undeliveredWrongItem)) == .string("GRANT_FULL"))
    }

    @Test func theRulesFollowWhatWasConsumed() {
        #expect(Self.preference(Self.facts(consumed: 0)) == .string("GRANT_FULL"))
        #expect(Self.preference(Self.facts(consumed: 1)) == .string("GRANT_PRORATED"))
        #expect(Self.preference(Self.facts(consumed: 99_999)) == .string("GRANT_PRORATED"))
        #expect(Self.preference(Self.facts(consumed: 100_000)) == .string("DECLINE"))
        // Delivered without a report: the content was there to use.
        #expect(Self.preference(Self.facts()) == .string("DECLINE"))
    }

    @Test func theRulesDeclineACustomerRefundedBefore() {
        #expect(Self.preference(Self.facts(consumed: 0, refunds: 1)) == .string("DECLINE"))
        #expect(Self.preference(Self.facts(delivered: false, refunds: 3)) == .string("GRANT_FULL"))
    }

    @Test func theSettingKeepsItsStoredForm() {
        let setting = RefundAnswers(policy: .grantProrated, customerConsented: true, sampleContentProvided: true)
        #expect(RefundAnswers(storedForm: setting.storedForm) == setting)
        #expect(RefundAnswers(storedForm: "off consent=false sample=false") == RefundAnswers())
        #expect(RefundAnswers(storedForm: "sometimes") == nil)
        #expect(RefundAnswers(storedForm: "rules consent=maybe") == nil)
    }
}
