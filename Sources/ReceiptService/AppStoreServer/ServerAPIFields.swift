import ReceiptCore

/// The App Store Server API's signed values in `verifyReceipt`'s shape: `latest_receipt_info` from transactions and
/// `pending_renewal_info` from renewal infos, with verifyReceipt's field names, string values and Apple's three date
/// forms (`…`, `…_ms`, `…_pst`).
/// [latest_receipt_info](https://developer.apple.com/documentation/appstorereceipts/responsebody/latest_receipt_info),
/// [pending_renewal_info](https://developer.apple.com/documentation/appstorereceipts/responsebody/pending_renewal_info)
enum ServerAPIFields {
    /// `latest_receipt_info`: every transaction but consumables (verifyReceipt left finished consumables out, and
    /// the history cannot say which are finished), oldest purchase first; with `excludingOld`, only the newest of
    /// each auto-renewable subscription, as Apple's `exclude-old-transactions` did.
    static func latestReceiptInfo(_ transactions: [JSONObject], excludingOld: Bool) -> [JSONValue] {
        let kept = transactions.enumerated().filter { $0.element["type"]?.stringValue != "Consumable" }
            .sorted { lhs, rhs in
                let (left, right) = (integer(lhs.element["purchaseDate"]), integer(rhs.element["purchaseDate"]))
                return left != right ? (left ?? 0) < (right ?? 0) : lhs.offset < rhs.offset
            }.map(\.element)
        var newest: [String: Int] = [:]
        if excludingOld {
            for (index, transaction) in kept.enumerated()
            where transaction["type"]?.stringValue == "Auto-Renewable Subscription" {
                if let original = transaction["originalTransactionId"]?.stringValue { newest[original] = index }
            }
        }
        return kept.enumerated().compactMap { index, transaction in
            if excludingOld, let original = transaction["originalTransactionId"]?.stringValue,
                let last = newest[original], last != index
            {
                return nil
            }
            return .object(receiptFields(ofTransaction: transaction))
        }
    }

    /// One transaction in `latest_receipt_info`'s shape, in the order Apple's answers list the fields.
    static func receiptFields(ofTransaction payload: JSONObject) -> JSONObject {
        var item = JSONObject(capacity: 24)
        item.append("quantity", .string(String(integer(payload["quantity"]) ?? 1)))
        copy("productId", as: "product_id", from: payload, to: &item)
        copy("transactionId", as: "transaction_id", from: payload, to: &item)
        copy("originalTransactionId", as: "original_transaction_id", from: payload, to: &item)
        date("purchaseDate", as: "purchase_date", from: payload, to: &item)
        date("originalPurchaseDate", as: "original_purchase_date", from: payload, to: &item)
        date("expiresDate", as: "expires_date", from: payload, to: &item)
        copy("webOrderLineItemId", as: "web_order_line_item_id", from: payload, to: &item)
        if payload["expiresDate"] != nil {
            // Apple's offer types: 1 introductory, 2 promotional, 3 offer code, 4 win-back.
            let offerType = integer(payload["offerType"])
            let freeTrial = offerType == 1 && payload["offerDiscountType"]?.stringValue == "FREE_TRIAL"
            item.append("is_trial_period", .string(freeTrial ? "true" : "false"))
            item.append("is_in_intro_offer_period", .string(offerType == 1 && !freeTrial ? "true" : "false"))
        }
        if payload["isUpgraded"] == .bool(true) { item.append("is_upgraded", .string("true")) }
        date("revocationDate", as: "cancellation_date", from: payload, to: &item)
        if let reason = integer(payload["revocationReason"]) {
            item.append("cancellation_reason", .string(String(reason)))
        }
        copy("inAppOwnershipType", as: "in_app_ownership_type", from: payload, to: &item)
        copy("subscriptionGroupIdentifier", as: "subscription_group_identifier", from: payload, to: &item)
        offer(payload, to: &item)
        copy("appAccountToken", as: "app_account_token", from: payload, to: &item)
        // Apple's 2025-2026 fields, which verifyReceipt never had, under the same naming.
        copy("appTransactionId", as: "app_transaction_id", from: payload, to: &item)
        copy("offerPeriod", as: "offer_period", from: payload, to: &item)
        copy("billingPlanType", as: "billing_plan_type", from: payload, to: &item)
        if case .object(let commitment)? = payload["commitmentInfo"] {
            copy("billingPeriodNumber", as: "commitment_billing_period_number", from: commitment, to: &item)
            copy("totalBillingPeriods", as: "commitment_total_billing_periods", from: commitment, to: &item)
            date("commitmentExpiresDate", as: "commitment_expires_date", from: commitment, to: &item)
        }
        return item
    }

    /// `pending_renewal_info`: one entry per renewal info, in Apple's order.
    static func pendingRenewalInfo(_ renewals: [JSONObject]) -> [JSONValue] {
        renewals.map { payload in
            var item = JSONObject(capacity: 16)
            if let intent = integer(payload["expirationIntent"]) {
                item.append("expiration_intent", .string(String(intent)))
            }
            copy("autoRenewProductId", as: "auto_renew_product_id", from: payload, to: &item)
            // verifyReceipt gave the retry flag for a subscription that expired or is being retried, not for one
            // that renews normally.
            if case .bool(let retrying)? = payload["isInBillingRetryPeriod"],
                retrying || payload["expirationIntent"] != nil
            {
                item.append("is_in_billing_retry_period", .string(retrying ? "1" : "0"))
            }
            date("gracePeriodExpiresDate", as: "grace_period_expires_date", from: payload, to: &item)
            copy("originalTransactionId", as: "original_transaction_id", from: payload, to: &item)
            copy("productId", as: "product_id", from: payload, to: &item)
            if let status = integer(payload["autoRenewStatus"]) {
                item.append("auto_renew_status", .string(String(status)))
            }
            if let price = integer(payload["priceIncreaseStatus"]) {
                // verifyReceipt named it twice over the years; both are given.
                item.append("price_consent_status", .string(String(price)))
                item.append("price_increase_status", .string(String(price)))
            }
            offer(payload, to: &item)
            if case .array(let ids)? = payload["eligibleWinBackOfferIds"] {
                item.append("eligible_win_back_offer_ids", .array(ids))
            }
            copy("appTransactionId", as: "app_transaction_id", from: payload, to: &item)
            copy("offerPeriod", as: "offer_period", from: payload, to: &item)
            copy("renewalBillingPlanType", as: "renewal_billing_plan_type", from: payload, to: &item)
            if case .object(let commitment)? = payload["commitmentInfo"] {
                copy(
                    "commitmentAutoRenewProductId", as: "commitment_auto_renew_product_id", from: commitment, to: &item)
                copy("commitmentAutoRenewStatus", as: "commitment_auto_renew_status", from: commitment, to: &item)
                copy(
                    "commitmentRenewalBillingPlanType", as: "commitment_renewal_billing_plan_type", from: commitment,
                    to: &item)
                date("commitmentRenewalDate", as: "commitment_renewal_date", from: commitment, to: &item)
            }
            return .object(item)
        }
    }

    /// `promotional_offer_id` or `offer_code_ref_name`, from the offer type and identifier.
    private static func offer(_ payload: JSONObject, to item: inout JSONObject) {
        guard let identifier = payload["offerIdentifier"]?.stringValue else { return }
        switch integer(payload["offerType"]) {
        case 2: item.append("promotional_offer_id", .string(identifier))
        case 3: item.append("offer_code_ref_name", .string(identifier))
        default: break
        }
    }

    /// A JSON number as an integer (Apple's dates and codes are integers).
    private static func integer(_ value: JSONValue?) -> Int64? {
        switch value {
        case .integer(let number)?: number
        case .double(let number)? where number.rounded() == number && abs(number) < 9e15: Int64(number)
        default: nil
        }
    }

    /// A string or number field as verifyReceipt's string.
    private static func copy(_ name: String, as field: String, from payload: JSONObject, to item: inout JSONObject) {
        switch payload[name] {
        case .string(let text)?: item.append(field, .string(text))
        case .integer(let number)?: item.append(field, .string(String(number)))
        default: break
        }
    }

    /// A date in milliseconds as Apple's three forms.
    private static func date(_ name: String, as field: String, from payload: JSONObject, to item: inout JSONObject) {
        guard let milliseconds = integer(payload[name]) else { return }
        AppleDate.append(AppleDate.Field(field), milliseconds: milliseconds, to: &item)
    }
}
