import Foundation
import ReceiptCore
import ReceiptService

extension StoredForm {
    /// A due answer from `consumption_requests`' columns.
    static func consumptionAnswerTask(_ row: some StoredRow) throws -> ConsumptionAnswerTask {
        ConsumptionAnswerTask(
            appID: try row.uuid("app_id"), environment: try enumValue(try row.text("environment")),
            transactionID: try row.text("transaction_id"), attempts: try row.int("answer_attempts"),
            requestedAt: try row.date("first_at"))
    }

    /// What an attempt's outcome writes: state, next due time, body, Apple's status, error, answered.
    static func consumptionAnswerColumns(_ outcome: ConsumptionAnswerOutcome) -> (
        state: String, due: Date?, body: String?, status: Int?, error: String?, answered: Bool
    ) {
        switch outcome {
        case .sent(let body, let status): ("sent", nil, body, status, nil, true)
        case .retry(let next, let error, let status): ("pending", next, nil, status, String(error.prefix(500)), false)
        case .failed(let error, let body, let status): ("failed", nil, body, status, String(error.prefix(500)), false)
        }
    }

    /// A refund request's answer from `consumption_requests`' columns.
    static func consumptionAnswerStatus(_ row: some StoredRow) throws -> ConsumptionAnswerStatus {
        ConsumptionAnswerStatus(
            environment: try enumValue(try row.text("environment")), transactionID: try row.text("transaction_id"),
            requests: try row.int("requests"), firstRequestedAt: try row.date("first_at"),
            state: try row.optionalText("answer_state"), attempts: try row.int("answer_attempts"),
            body: try row.optionalText("answer_body"), appleStatus: try row.optionalInt("answer_status"),
            lastError: try row.optionalText("answer_error"), answeredAt: try row.optionalDate("answered_at"))
    }

    /// The facts of a ledger row (`delivered_at`, `consumption_*`) and the count of the customer's refunds.
    static func consumptionFacts(_ row: (some StoredRow)?, refunds: Int) throws -> ConsumptionRules.Facts {
        guard let row else { return ConsumptionRules.Facts(deliveredAt: nil, report: nil, earlierRefunds: refunds) }
        var report: ConsumptionReport?
        if let reportedAt = try row.optionalDate("consumption_reported_at") {
            report = ConsumptionReport(
                consumedMilli: try row.optionalInt("consumption_milli"),
                deliveryStatus: try row.optionalText("consumption_delivery").flatMap(
                    ConsumptionDeliveryStatus.init(rawValue:)),
                reportedAt: reportedAt)
        }
        // The kind the transaction states; a row without one (a unified receipt's) with an expiry is a subscription.
        let kind =
            try row.optionalText("product_type").flatMap(ProductKind.init(storeKitType:))
            ?? (try row.optionalInt("expires_date") != nil ? .autoRenewable : nil)
        return ConsumptionRules.Facts(
            deliveredAt: try row.optionalDate("delivered_at"), report: report, earlierRefunds: refunds,
            productID: try row.text("product_id"), kind: kind,
            purchasedAt: try row.optionalInt("purchase_date").map { Date(millisecondsSince1970: Int64($0)) },
            revokedAt: try row.optionalInt("revocation_date").map { Date(millisecondsSince1970: Int64($0)) })
    }
}
