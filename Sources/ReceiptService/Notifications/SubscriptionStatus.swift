import Foundation
import ReceiptCore

/// Where one auto-renewable subscription (an original transaction of an app, in one environment) stands, as the
/// newest signed statement about it said (docs/notifications.md, "Subscription status").
public struct SubscriptionStatus: Sendable, Equatable {
    /// The subscription's state.
    public enum State: String, Sendable, CaseIterable {
        /// Paid up to ``SubscriptionStatus/expiresDate``.
        case active
        /// A renewal failed; Apple's billing grace period keeps the service on until
        /// ``SubscriptionStatus/gracePeriodExpiresDate``.
        case gracePeriod = "grace_period"
        /// A renewal failed and Apple is retrying the payment; the service should be off.
        case billingRetry = "billing_retry"
        /// It ended (the customer cancelled, or billing retries ran out, or its expiry passed with no renewal).
        case expired
        /// Apple refunded or revoked its latest transaction.
        case revoked

        /// Whether the customer should have the service in this state.
        public var isEntitled: Bool { self == .active || self == .gracePeriod }
        /// Whether a renewal failed: grace period or billing retry.
        public var hasBillingIssue: Bool { self == .gracePeriod || self == .billingRetry }
    }

    /// The app.
    public var appID: UUID
    /// The store.
    public var store: Store
    /// The environment.
    public var environment: StoreEnvironment
    /// The subscription's original transaction.
    public var originalTransactionID: String
    /// The product of its latest transaction.
    public var productID: String
    /// Its state.
    public var state: State
    /// When its latest transaction expires, in milliseconds since 1970.
    public var expiresDate: Int64?
    /// When Apple's billing grace period ends, in milliseconds since 1970.
    public var gracePeriodExpiresDate: Int64?
    /// Whether it renews automatically, when the renewal info said.
    public var autoRenews: Bool?
    /// The product it renews to.
    public var autoRenewProductID: String?
    /// The signed date (milliseconds since 1970) of the statement that set it: a statement signed earlier does not
    /// overwrite it, whenever it arrives.
    public var asOf: Int64
    /// When it was last written.
    public var updatedAt: Date
    /// The signed date (milliseconds since 1970) of the first statement of its current billing issue; set by the
    /// store from ``State/hasBillingIssue``.
    public var billingIssueDetectedAt: Int64?
    /// The signed date (milliseconds since 1970) of the first statement that its renewal is off; set by the store.
    public var unsubscribeDetectedAt: Int64?

    /// Creates a status.
    public init(
        appID: UUID, store: Store = .appStore, environment: StoreEnvironment, originalTransactionID: String,
        productID: String, state: State, expiresDate: Int64?, gracePeriodExpiresDate: Int64? = nil,
        autoRenews: Bool? = nil, autoRenewProductID: String? = nil, asOf: Int64, updatedAt: Date,
        billingIssueDetectedAt: Int64? = nil, unsubscribeDetectedAt: Int64? = nil
    ) {
        self.billingIssueDetectedAt = billingIssueDetectedAt
        self.unsubscribeDetectedAt = unsubscribeDetectedAt
        self.appID = appID
        self.store = store
        self.environment = environment
        self.originalTransactionID = originalTransactionID
        self.productID = productID
        self.state = state
        self.expiresDate = expiresDate
        self.gracePeriodExpiresDate = gracePeriodExpiresDate
        self.autoRenews = autoRenews
        self.autoRenewProductID = autoRenewProductID
        self.asOf = asOf
        self.updatedAt = updatedAt.roundedToMilliseconds
    }

    /// The status in the shape of the ledger look-up and `/api` answers (`subscription`).
    public var json: JSONObject {
        var object = JSONObject(capacity: 10)
        object.append("original_transaction_id", .string(originalTransactionID))
        object.append("environment", .string(environment.rawValue))
        object.append("product_id", .string(productID))
        object.append("status", .string(state.rawValue))
        object.append("entitled", .bool(state.isEntitled))
        if let expiresDate { object.append("expires_at", .string(Self.rfc3339(expiresDate))) }
        if let gracePeriodExpiresDate {
            object.append("grace_period_expires_at", .string(Self.rfc3339(gracePeriodExpiresDate)))
        }
        if let autoRenews { object.append("auto_renews", .bool(autoRenews)) }
        if let autoRenewProductID { object.append("auto_renew_product_id", .string(autoRenewProductID)) }
        object.append("updated_at", .string(LedgerEntry.rfc3339(updatedAt)))
        return object
    }

    static func rfc3339(_ milliseconds: Int64) -> String { AppleDate.rfc3339(milliseconds: milliseconds) }
}
