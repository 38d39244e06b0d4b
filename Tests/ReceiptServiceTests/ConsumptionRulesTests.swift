import Foundation
import ReceiptCore
import Testing

@testable import ReceiptService

/// The body of an app's answer to a refund request (``ConsumptionRules``): one test per rule.
@Suite struct ConsumptionRulesTests {
    static let answering = RefundAnswers(policy: .rules, customerConsented: true, sampleContentProvided: false)
    static let delivered = Date(timeIntervalSince1970: 1_790_000_000)

    /// When Apple asked: a day after the delivery.
    static let requested = delivered.addingTimeInterval(86_400)

    static func facts(
        delivered: Bool = true, consumed: Int? = nil, status: ConsumptionDeliveryStatus? = nil,
        refunds: Int = 0, kind: ProductKind? = .consumable, began: Date? = nil, revoked: Date? = nil
    ) -> ConsumptionRules.Facts {
        let report =
            (consumed != nil || status != nil)
            ? ConsumptionReport(consumedMilli: consumed, deliveryStatus: status, reportedAt: Self.delivered) : nil
        return ConsumptionRules.Facts(
            deliveredAt: delivered ? Self.delivered : nil, report: report, earlierRefunds: refunds,
            productID: "com.example.app.product", kind: kind, purchasedAt: began, revokedAt: revoked)
    }

    static func body(_ facts: ConsumptionRules.Facts, _ answers: RefundAnswers = answering) -> JSONObject? {
        ConsumptionRules.body(facts, answers: answers, requestedAt: Self.requested)
    }

    static func preference(_ facts: ConsumptionRules.Facts, _ answers: RefundAnswers = answering) -> JSONValue? {
        body(facts, answers)?["refundPreference"]
    }

    @Test func nothingIsAnsweredWithoutAPolicyOrTheCustomersConsent() {
        #expect(Self.body(Self.facts(), RefundAnswers()) == nil)
        #expect(Self.body(Self.facts(), RefundAnswers(policy: .decline)) == nil)
    }

    @Test func theBodyStatesConsentDeliveryAndTheSampleInApplesOrder() throws {
        let answers = RefundAnswers(policy: .inform, customerConsented: true, sampleContentProvided: true)
        let body = try #require(Self.body(Self.facts(consumed: 40_000), answers))
        #expect(
            body.members.map(\.key) == [
                "customerConsented", "consumptionPercentage", "deliveryStatus",
                "sampleContentProvided",
            ])
        #expect(body["customerConsented"] == .bool(true) && body["sampleContentProvided"] == .bool(true))
        #expect(body["deliveryStatus"] == .string("DELIVERED") && body["consumptionPercentage"] == .integer(40_000))
        // The backend's own status wins where it gives one.
        #expect(
            Self.body(Self.facts(status: .undeliveredServerOutage), answers)?["deliveryStatus"]
                == .string("UNDELIVERED_SERVER_OUTAGE"))
        #expect(Self.body(Self.facts(), answers)?["consumptionPercentage"] == nil)
    }

    /// M2: a one-time purchase the ledger never delivered and the backend never reported is not known to be
    /// undelivered (it may have been delivered before the ledger, or the answer not confirmed): nothing is said, and
    /// above all no `UNDELIVERED_OTHER` with a `GRANT_FULL`.
    @Test func anUnknownDeliveryIsNotCalledUndelivered() {
        for kind: ProductKind? in [.consumable, .nonConsumable, nil] {
            let answer = ConsumptionRules.answer(
                Self.facts(delivered: false, kind: kind), answers: Self.answering, requestedAt: Self.requested)
            guard case .withheld(let reason) = answer else {
                Issue.record("answered \(answer) for \(String(describing: kind))")
                continue
            }
            #expect(reason.contains("not known"))
        }
    }

    /// M2: a subscription period that began before the request and was not revoked was delivered: the entitlement
    /// was granted, though no answer ever said `deliver: true` (a renewal recorded by `DID_RENEW`).
    @Test func aSubscriptionPeriodThatBeganWasDelivered() throws {
        let began = Self.delivered.addingTimeInterval(-3_600)
        for kind in [ProductKind.autoRenewable, .nonRenewing(nil)] {
            let body = try #require(Self.body(Self.facts(delivered: false, kind: kind, began: began)))
            #expect(body["deliveryStatus"] == .string("DELIVERED"))
            #expect(body["refundPreference"] == .string("DECLINE"), "\(body)")
        }
        // Not begun by the request, or revoked before it: not known to be delivered.
        #expect(
            Self.body(Self.facts(delivered: false, kind: .autoRenewable, began: Self.requested.addingTimeInterval(60)))
                == nil)
        #expect(
            Self.body(
                Self.facts(delivered: false, kind: .autoRenewable, began: began, revoked: began.addingTimeInterval(60)))
                == nil)
    }

    /// M7: Apple refuses a consumption percentage for an auto-renewable subscription, and `GRANT_PRORATED` without a
    /// percentage above 0 for the other kinds.
    @Test func applesPerTypeRulesAreKept() throws {
        let renewing = try #require(Self.body(Self.facts(consumed: 50_000, kind: .autoRenewable)))
        #expect(renewing["consumptionPercentage"] == nil)
        #expect(renewing["refundPreference"] == .string("GRANT_PRORATED"))
        let prorated = RefundAnswers(policy: .grantProrated, customerConsented: true)
        let consumable = try #require(Self.body(Self.facts(kind: .consumable), prorated))
        #expect(consumable["refundPreference"] == nil && consumable["consumptionPercentage"] == nil, "\(consumable)")
        #expect(Self.preference(Self.facts(consumed: 0, kind: .consumable), prorated) == nil)
        #expect(Self.preference(Self.facts(consumed: 30_000, kind: .consumable), prorated) == .string("GRANT_PRORATED"))
        #expect(Self.preference(Self.facts(kind: .autoRenewable), prorated) == .string("GRANT_PRORATED"))
    }

    @Test func fixedPoliciesStateTheirPreference() {
        for (policy, stated) in [
            (RefundAnswers.Policy.decline, "DECLINE"), (.grantFull, "GRANT_FULL"),
            (.grantProrated, "GRANT_PRORATED"),
        ] {
            let answers = RefundAnswers(policy: policy, customerConsented: true)
            #expect(Self.preference(Self.facts(consumed: 20_000), answers) == .string(stated))
        }
    }

    @Test func theRulesGrantWhatWasNeverDelivered() {
        #expect(
            Self.preference(Self.facts(delivered: false, status: .undeliveredQualityIssue)) == .string("GRANT_FULL"))
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
        #expect(
            Self.preference(Self.facts(delivered: false, status: .undeliveredOther, refunds: 3))
                == .string("GRANT_FULL"))
    }

    @Test func theSettingKeepsItsStoredForm() {
        let setting = RefundAnswers(policy: .grantProrated, customerConsented: true, sampleContentProvided: true)
        #expect(RefundAnswers(storedForm: setting.storedForm) == setting)
        #expect(RefundAnswers(storedForm: "off consent=false sample=false") == RefundAnswers())
        #expect(RefundAnswers(storedForm: "sometimes") == nil)
        #expect(RefundAnswers(storedForm: "rules consent=maybe") == nil)
    }
}
