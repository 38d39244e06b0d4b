import Foundation
import ReceiptCore

extension LedgerEntry {
    /// The row as `POST /api/transactions` and `transactions list --json` give it (docs/api.md, "Ledger look-ups"):
    /// Apple's dates in milliseconds as Apple states them, ours in RFC 3339; absent values left out.
    public var json: JSONObject {
        var object = JSONObject(capacity: 20)
        object.append("transaction_id", .string(transaction.transactionID))
        object.append("original_transaction_id", .string(transaction.originalTransactionID))
        object.append("product_id", .string(transaction.productID))
        object.append("environment", .string(environment.rawValue))
        appendStore(to: &object)
        if let date = transaction.purchaseDate { object.append("purchase_date_ms", .integer(date)) }
        if let date = transaction.originalPurchaseDate { object.append("original_purchase_date_ms", .integer(date)) }
        if let date = transaction.expiresDate { object.append("expires_date_ms", .integer(date)) }
        object.append("quantity", .integer(Int64(transaction.quantity)))
        if let id = transaction.webOrderLineItemID { object.append("web_order_line_item_id", .string(id)) }
        if let ownership = transaction.inAppOwnershipType { object.append("ownership_type", .string(ownership)) }
        appendTerms(to: &object)
        appendRefund(to: &object)
        if let claimant { object.append("app_user_id", .string(claimant)) }
        object.append("first_seen_at", .string(Self.rfc3339(firstSeenAt)))
        object.append("last_seen_at", .string(Self.rfc3339(lastSeenAt)))
        object.append("first_request_id", .string(firstRequestID))
        if let deliveredAt { object.append("delivered_at", .string(Self.rfc3339(deliveredAt))) }
        appendAppleFinish(to: &object)
        appendGoogleAcknowledgement(to: &object)
        return object
    }

    /// The row as a transaction event (`transaction.created`, `transaction.revoked`, `transaction.revocation_reversed`)
    /// carries it: ``json`` and `revocation_as_of`, the signed date (milliseconds) of the statement that last set or
    /// cleared the revocation, which only grows: a receiver applies a revocation event only when it is higher than the
    /// last it applied (docs/webhooks.md, "Order", money review M10).
    public var eventJSON: JSONObject {
        var object = json
        if let revocationAsOf { object.append("revocation_as_of", .integer(revocationAsOf)) }
        return object
    }

    /// Google Play's acknowledgement of the delivered purchase as `google_acknowledgement` (`state`: `pending`,
    /// `acknowledged` or `failed`; `attempts`, `last_error`, `acknowledged_at`), appended to `object`; nothing when
    /// none was asked.
    public func appendGoogleAcknowledgement(to object: inout JSONObject) {
        guard let status = googleAcknowledgement else { return }
        var acknowledgement = JSONObject(capacity: 4)
        acknowledgement.append("state", .string(status.state == .finished ? "acknowledged" : status.state.rawValue))
        acknowledgement.append("attempts", .integer(Int64(status.attempts)))
        if let error = status.lastError, status.state != .finished {
            acknowledgement.append("last_error", .string(error))
        }
        if let at = status.finishedAt { acknowledgement.append("acknowledged_at", .string(Self.rfc3339(at))) }
        object.append("google_acknowledgement", .object(acknowledgement))
    }

    /// The row's store as `store`, for a store other than the App Store (whose rows, older than the store's
    /// dimension, say nothing of it).
    public func appendStore(to object: inout JSONObject) {
        if store != .appStore { object.append("store", .string(store.rawValue)) }
    }

    /// Apple's Finish Transaction of the confirmed delivery as `apple_finish` (`state`, `attempts`, `last_error`,
    /// `finished_at`), appended to `object`; nothing when none was asked.
    public func appendAppleFinish(to object: inout JSONObject) {
        guard let appleFinish else { return }
        var finish = JSONObject(capacity: 4)
        finish.append("state", .string(appleFinish.state.rawValue))
        finish.append("attempts", .integer(Int64(appleFinish.attempts)))
        if let error = appleFinish.lastError, appleFinish.state != .finished {
            finish.append("last_error", .string(error))
        }
        if let finishedAt = appleFinish.finishedAt { finish.append("finished_at", .string(Self.rfc3339(finishedAt))) }
        object.append("apple_finish", .object(finish))
    }

    /// Apple's 2025-2026 terms of the transaction, each where Apple states it: `app_transaction_id`, `offer_period`,
    /// `billing_plan_type`, and `commitment` (`billing_period_number`, `total_billing_periods`, `expires_date_ms`,
    /// `price`) for a period billed monthly within a commitment: the period's own end is not the commitment's.
    public func appendTerms(to object: inout JSONObject) {
        if let id = transaction.appTransactionID { object.append("app_transaction_id", .string(id)) }
        if let period = transaction.offerPeriod { object.append("offer_period", .string(period)) }
        if let plan = transaction.billingPlanType { object.append("billing_plan_type", .string(plan)) }
        guard let commitment = transaction.commitment else { return }
        var terms = JSONObject(capacity: 4)
        if let number = commitment.billingPeriodNumber {
            terms.append("billing_period_number", .integer(Int64(number)))
        }
        if let total = commitment.totalBillingPeriods { terms.append("total_billing_periods", .integer(Int64(total))) }
        if let expires = commitment.expiresDate { terms.append("expires_date_ms", .integer(expires)) }
        if let price = commitment.price { terms.append("price", .integer(price)) }
        object.append("commitment", .object(terms))
    }

    /// The revocation as our fields (`refunded_at`, `reason`, `refund_type`, `refund_percentage`, each where known),
    /// appended to `object`; nothing when it was not revoked.
    public func appendRefund(to object: inout JSONObject) {
        guard let date = transaction.revocationDate else { return }
        object.append("refunded_at", .string(AppleDate.rfc3339(milliseconds: date)))
        if let reason = transaction.revocationReason { object.append("reason", .integer(Int64(reason))) }
        if let type = transaction.revocationType { object.append("refund_type", .string(type)) }
        if let percentage = transaction.revocationPercentage {
            // Apple states thousandths of a percent: 25000 is 25 %.
            object.append("refund_percentage", .double(Double(percentage) / 1_000))
        }
    }

    public static func rfc3339(_ date: Date) -> String { AppleDate.rfc3339(milliseconds: date.millisecondsSince1970) }
}

extension LedgerPosition {
    /// The position as an opaque cursor: base64url of `first_seen|environment|transaction_id`.
    public var cursor: String { Base64URL.encode("\(firstSeen)|\(environment)|\(transactionID)".utf8) }

    /// The position a cursor names; nil for text no server made.
    public init?(cursor: String) {
        guard cursor.utf8.count <= VerificationRequest.maximumCursorLength, let bytes = Base64URL.decode(cursor),
            let text = String(validating: bytes, as: UTF8.self)
        else { return nil }
        let parts = text.split(separator: "|", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count == 3, let firstSeen = Int64(parts[0]),
            StoreEnvironment(rawValue: String(parts[1])) != nil, !parts[2].isEmpty
        else { return nil }
        self.init(firstSeen: firstSeen, environment: String(parts[1]), transactionID: String(parts[2]))
    }
}
