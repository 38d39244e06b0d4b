import Foundation
import ReceiptCore

extension CustomerView {
    /// The view in the shape of answers (`customer`, docs/api.md): every documented key present, null where the
    /// facts say nothing, dates in RFC 3339 UTC.
    public var json: JSONObject {
        var object = JSONObject(capacity: 8)
        object.append("app_user_id", Self.text(appUserID))
        if let originalTransactionID { object.append("original_transaction_id", .string(originalTransactionID)) }
        object.append("environment", .string(environment.rawValue))
        object.append("entitlements", .array(entitlements.map { .object($0.json) }))
        object.append("subscriptions", .array(subscriptions.map { .object($0.json) }))
        object.append("purchases", .array(purchases.map { .object($0.json) }))
        object.append("unknown_products", .array(unknownProducts.map { .string($0) }))
        object.append("computed_at", .string(AppleDate.rfc3339(milliseconds: computedAt)))
        return object
    }

    static func text(_ value: String?) -> JSONValue { value.map { .string($0) } ?? .null }
    static func date(_ milliseconds: Int64?) -> JSONValue {
        milliseconds.map { .string(AppleDate.rfc3339(milliseconds: $0)) } ?? .null
    }
    static func flag(_ value: Bool?) -> JSONValue { value.map { .bool($0) } ?? .null }
}

extension EntitlementState {
    /// The entitlement in the shape of answers.
    public var json: JSONObject {
        var object = JSONObject(capacity: 17)
        object.append("name", .string(name))
        object.append("active", .bool(isActive))
        object.append("expires_at", CustomerView.date(expiresAt))
        object.append("grace_period_expires_at", CustomerView.date(gracePeriodExpiresAt))
        object.append("will_renew", CustomerView.flag(willRenew))
        object.append("period_type", .string(periodType.rawValue))
        object.append("product_id", .string(productID))
        object.append("original_transaction_id", .string(originalTransactionID))
        object.append("transaction_id", .string(transactionID))
        object.append("environment", .string(environment.rawValue))
        object.append("store", .string(store.rawValue))
        object.append("ownership_type", CustomerView.text(ownershipType))
        object.append("purchased_at", CustomerView.date(purchasedAt))
        object.append("billing_issue_detected_at", CustomerView.date(billingIssueDetectedAt))
        object.append("unsubscribe_detected_at", CustomerView.date(unsubscribeDetectedAt))
        object.append("refunded_at", CustomerView.date(refundedAt))
        if let billingPlanType { object.append("billing_plan_type", .string(billingPlanType)) }
        if let commitmentExpiresAt { object.append("commitment_expires_at", CustomerView.date(commitmentExpiresAt)) }
        return object
    }
}

extension SubscriptionState {
    /// The subscription in the shape of answers.
    public var json: JSONObject {
        var object = JSONObject(capacity: 22)
        object.append("product_id", .string(productID))
        object.append("original_transaction_id", .string(originalTransactionID))
        object.append("transaction_id", .string(transactionID))
        object.append("type", .string(kind.name))
        object.append("environment", .string(environment.rawValue))
        object.append("store", .string(store.rawValue))
        object.append("status", .string(status.rawValue))
        object.append("active", .bool(isActive))
        object.append("entitlements", .array(entitlements.map { .string($0) }))
        object.append("purchased_at", CustomerView.date(purchasedAt))
        object.append("original_purchased_at", CustomerView.date(originalPurchasedAt))
        object.append("expires_at", CustomerView.date(expiresAt))
        object.append("grace_period_expires_at", CustomerView.date(gracePeriodExpiresAt))
        object.append("will_renew", CustomerView.flag(willRenew))
        object.append("auto_renew_product_id", CustomerView.text(autoRenewProductID))
        object.append("period_type", .string(periodType.rawValue))
        object.append("ownership_type", CustomerView.text(ownershipType))
        object.append("billing_issue_detected_at", CustomerView.date(billingIssueDetectedAt))
        object.append("unsubscribe_detected_at", CustomerView.date(unsubscribeDetectedAt))
        object.append("refunded_at", CustomerView.date(refundedAt))
        object.append("periods", .integer(Int64(periods)))
        if let billingPlanType { object.append("billing_plan_type", .string(billingPlanType)) }
        if let commitmentExpiresAt { object.append("commitment_expires_at", CustomerView.date(commitmentExpiresAt)) }
        return object
    }
}

extension PurchaseState {
    /// The purchase in the shape of answers.
    public var json: JSONObject {
        var object = JSONObject(capacity: 13)
        object.append("product_id", .string(productID))
        object.append("transaction_id", .string(transactionID))
        object.append("original_transaction_id", .string(originalTransactionID))
        object.append("type", CustomerView.text(kind?.name))
        object.append("environment", .string(environment.rawValue))
        object.append("store", .string(store.rawValue))
        object.append("active", CustomerView.flag(isActive))
        object.append("entitlements", .array(entitlements.map { .string($0) }))
        object.append("purchased_at", CustomerView.date(purchasedAt))
        object.append("quantity", .integer(Int64(quantity)))
        object.append("ownership_type", CustomerView.text(ownershipType))
        object.append("refunded_at", CustomerView.date(refundedAt))
        return object
    }
}
