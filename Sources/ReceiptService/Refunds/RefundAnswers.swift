import Foundation
import ReceiptCore

/// How an app answers Apple's refund requests (`CONSUMPTION_REQUEST` notifications) with Send Consumption
/// Information (docs/notifications.md, "Refund requests"): off, or a policy, with the customer's consent stated by
/// the app (never assumed) and whether a sample was provided. `app add|update --refund-policy POLICY
/// --consumption-consent true|false --sample-content-provided true|false`.
public struct RefundAnswers: Sendable, Equatable, Hashable {
    /// The refund preference an answer states.
    public enum Policy: String, Sendable, CaseIterable {
        /// Refund requests are recorded and passed on; Apple is not answered (the default).
        case off
        /// Apple is answered with the facts, without a preference.
        case inform
        /// Always `DECLINE`.
        case decline
        /// Always `GRANT_FULL`.
        case grantFull = "grant_full"
        /// Always `GRANT_PRORATED`.
        case grantProrated = "grant_prorated"
        /// Derived from the facts (``ConsumptionRules``).
        case rules
    }

    /// The policy.
    public var policy: Policy
    /// Whether the app's customers consented to share consumption data with Apple (the app's own terms say so): the
    /// policy answers nothing without it.
    public var customerConsented: Bool
    /// Whether the app provides a free sample, trial or description of the content before its purchase.
    public var sampleContentProvided: Bool

    /// Creates the setting.
    public init(policy: Policy = .off, customerConsented: Bool = false, sampleContentProvided: Bool = false) {
        self.policy = policy
        self.customerConsented = customerConsented
        self.sampleContentProvided = sampleContentProvided
    }

    /// Whether Apple is answered.
    public var answers: Bool { policy != .off && customerConsented }

    /// The stored form: `POLICY consent=BOOL sample=BOOL`.
    public var storedForm: String {
        "\(policy.rawValue) consent=\(customerConsented) sample=\(sampleContentProvided)"
    }

    /// The setting of a stored form; nil when it is not one.
    public init?(storedForm: String) {
        let parts = storedForm.split(separator: " ").map(String.init)
        guard let first = parts.first, let policy = Policy(rawValue: first) else { return nil }
        self.init(policy: policy)
        for part in parts.dropFirst() {
            switch part {
            case "consent=true": customerConsented = true
            case "consent=false": customerConsented = false
            case "sample=true": sampleContentProvided = true
            case "sample=false": sampleContentProvided = false
            default: return nil
            }
        }
    }
}

/// Apple's `deliveryStatus` of Send Consumption Information.
public enum ConsumptionDeliveryStatus: String, Sendable, CaseIterable {
    case delivered = "DELIVERED"
    case undeliveredQualityIssue = "UNDELIVERED_QUALITY_ISSUE"
    case undeliveredWrongItem = "UNDELIVERED_WRONG_ITEM"
    case undeliveredServerOutage = "UNDELIVERED_SERVER_OUTAGE"
    case undeliveredOther = "UNDELIVERED_OTHER"
}

/// What the backend reported of a transaction's use (`POST /api/transactions/consumption`).
public struct ConsumptionReport: Sendable, Equatable {
    /// How much of it the customer consumed, in milliunits of a percent: 0 … 100,000.
    public var consumedMilli: Int?
    /// What the backend says of its delivery, when it says.
    public var deliveryStatus: ConsumptionDeliveryStatus?
    /// When it was reported.
    public var reportedAt: Date

    /// Creates a report.
    public init(consumedMilli: Int?, deliveryStatus: ConsumptionDeliveryStatus?, reportedAt: Date) {
        self.consumedMilli = consumedMilli
        self.deliveryStatus = deliveryStatus
        self.reportedAt = reportedAt
    }
}

/// The body of Apple's Send Consumption Information (v2) for one refund request, from the ledger's facts, the
/// backend's report and the app's policy: pure, each rule tested (ConsumptionRulesTests).
public enum ConsumptionRules {
    /// The facts an answer is built from.
    public struct Facts: Sendable {
        /// When the transaction was delivered (nil: never, as far as the ledger knows).
        public var deliveredAt: Date?
        /// What the backend reported, if it did.
        public var report: ConsumptionReport?
        /// How many other purchases of the same customer (its claimant, else its original transaction) were refunded
        /// before the request.
        public var earlierRefunds: Int
        /// The transaction's product.
        public var productID: String?
        /// The product's kind: the transaction's own `type`, else the app's catalog; nil when neither says.
        public var kind: ProductKind?
        /// When the transaction (a subscription's period) began.
        public var purchasedAt: Date?
        /// When Apple revoked it, if it did.
        public var revokedAt: Date?

        /// Creates the facts.
        public init(
            deliveredAt: Date?, report: ConsumptionReport?, earlierRefunds: Int, productID: String? = nil,
            kind: ProductKind? = nil, purchasedAt: Date? = nil, revokedAt: Date? = nil
        ) {
            self.deliveredAt = deliveredAt
            self.report = report
            self.earlierRefunds = earlierRefunds
            self.productID = productID
            self.kind = kind
            self.purchasedAt = purchasedAt
            self.revokedAt = revokedAt
        }
    }

    /// What the app answers Apple.
    public enum Answer: Sendable, Equatable {
        /// This body is sent.
        case body(JSONObject)
        /// Nothing is sent, for this reason (Apple then decides without the app's facts).
        case withheld(String)
    }

    /// The answer to a request Apple made at `requestedAt` (docs/notifications.md, "Refund requests"):
    ///
    /// - nothing without a policy or the customer's consent;
    /// - `deliveryStatus`: the backend's report where it gives one; else `DELIVERED` when the ledger holds a delivery,
    ///   or when the transaction is a subscription period that began before the request and was not revoked (the
    ///   entitlement was granted, whether or not the backend was ever asked to deliver it); else the delivery is not
    ///   known and nothing is sent: `UNDELIVERED_*` is only ever the backend's own word (money review M2);
    /// - `consumptionPercentage`: the backend's report, never for an auto-renewable subscription (Apple refuses it);
    /// - `refundPreference`: the policy's; under `rules`: not delivered → `GRANT_FULL`; delivered to a customer
    ///   refunded before → `DECLINE`; delivered and reported 0 % consumed → `GRANT_FULL`, fully consumed →
    ///   `DECLINE`, partly → `GRANT_PRORATED`; delivered without a report → `DECLINE`. `inform` states none.
    ///   `GRANT_PRORATED` is stated for a product other than an auto-renewable subscription only with a percentage
    ///   above 0, which Apple requires with it (money review M7).
    public static func answer(_ facts: Facts, answers: RefundAnswers, requestedAt: Date) -> Answer {
        guard answers.answers else { return .withheld("the app no longer answers refund requests") }
        guard let status = deliveryStatus(facts, requestedAt: requestedAt) else {
            return .withheld(
                "the delivery is not known: neither delivered by an answer nor reported by the backend "
                    + "(POST /api/transactions/consumption)")
        }
        let renews = facts.kind == .autoRenewable
        let percentage = renews ? nil : facts.report?.consumedMilli
        var body = JSONObject(capacity: 5)
        body.append("customerConsented", .bool(true))
        if let percentage { body.append("consumptionPercentage", .integer(Int64(percentage))) }
        body.append("deliveryStatus", .string(status.rawValue))
        if var preference = preference(facts, status: status, policy: answers.policy) {
            if preference == "GRANT_PRORATED", !renews, (percentage ?? 0) <= 0 { preference = "" }
            if !preference.isEmpty { body.append("refundPreference", .string(preference)) }
        }
        body.append("sampleContentProvided", .bool(answers.sampleContentProvided))
        return .body(body)
    }

    /// The body of ``answer(_:answers:requestedAt:)``, nil when nothing is sent.
    public static func body(_ facts: Facts, answers: RefundAnswers, requestedAt: Date) -> JSONObject? {
        if case .body(let body) = answer(facts, answers: answers, requestedAt: requestedAt) { body } else { nil }
    }

    /// The delivery status the facts support; nil when the delivery is not known.
    static func deliveryStatus(_ facts: Facts, requestedAt: Date) -> ConsumptionDeliveryStatus? {
        if let reported = facts.report?.deliveryStatus { return reported }
        if facts.deliveredAt != nil { return .delivered }
        if facts.kind?.isSubscription == true, let began = facts.purchasedAt, began <= requestedAt,
            facts.revokedAt.map({ $0 > requestedAt }) ?? true
        {
            return .delivered
        }
        return nil
    }

    /// The refund preference of `policy` for these facts; nil: none stated.
    static func preference(_ facts: Facts, status: ConsumptionDeliveryStatus, policy: RefundAnswers.Policy)
        -> String?
    {
        switch policy {
        case .off, .inform: return nil
        case .decline: return "DECLINE"
        case .grantFull: return "GRANT_FULL"
        case .grantProrated: return "GRANT_PRORATED"
        case .rules:
            guard status == .delivered else { return "GRANT_FULL" }
            if facts.earlierRefunds > 0 { return "DECLINE" }
            guard let consumed = facts.report?.consumedMilli else { return "DECLINE" }
            switch consumed {
            case ...0: return "GRANT_FULL"
            case 100_000...: return "DECLINE"
            default: return "GRANT_PRORATED"
            }
        }
    }
}
