import Foundation
import ReceiptCore

/// What one customer of an app may use now, computed from every fact the service holds about them in one environment
/// (docs/api.md, "Customers and entitlements"): the ledger's transactions (every renewal, with its expiry and
/// revocation) and the subscriptions' statuses that renewal info, the App Store Server API and notifications set.
public struct CustomerView: Sendable, Equatable {
    /// The app's user, when the view is of a user.
    public var appUserID: String?
    /// The original transaction, when the view is of one original transaction (no user given).
    public var originalTransactionID: String?
    /// The environment of every fact in the view: sandbox and production never mix.
    public var environment: StoreEnvironment
    /// Each entitlement the customer was ever granted, by name.
    public var entitlements: [EntitlementState]
    /// Each subscription (one per original transaction), auto-renewable or not.
    public var subscriptions: [SubscriptionState]
    /// Each purchase that is not a subscription, one per transaction.
    public var purchases: [PurchaseState]
    /// The products the customer bought that the app's catalog does not describe (they grant nothing).
    public var unknownProducts: [String]
    /// The time the view was computed for, in milliseconds since 1970.
    public var computedAt: Int64
    /// The first time after ``computedAt`` at which the same facts give another view (an expiry or a grace period's
    /// end), in milliseconds since 1970; nil when none comes.
    public var nextChangeAt: Int64?

    /// Creates a view.
    public init(
        appUserID: String?, originalTransactionID: String? = nil, environment: StoreEnvironment,
        entitlements: [EntitlementState], subscriptions: [SubscriptionState], purchases: [PurchaseState],
        unknownProducts: [String], computedAt: Int64, nextChangeAt: Int64? = nil
    ) {
        self.nextChangeAt = nextChangeAt
        self.appUserID = appUserID
        self.originalTransactionID = originalTransactionID
        self.environment = environment
        self.entitlements = entitlements
        self.subscriptions = subscriptions
        self.purchases = purchases
        self.unknownProducts = unknownProducts
        self.computedAt = computedAt
    }

    /// The entitlement named `name`, if the customer was ever granted it.
    public func entitlement(_ name: String) -> EntitlementState? { entitlements.first { $0.name == name } }

    /// The names of the entitlements active now.
    public var activeEntitlements: [String] { entitlements.filter(\.isActive).map(\.name) }
}

/// What part of a subscription a period is (the latest period's offer).
public enum PeriodType: String, Sendable, Hashable {
    /// A free trial (an introductory offer that is free).
    case trial
    /// A paid introductory offer.
    case intro
    /// The regular price.
    case normal
    /// A promotional, offer-code or win-back offer.
    case offer

    /// The period type a transaction's offer states.
    public init(_ transaction: PurchaseTransaction) {
        switch transaction.offerType {
        case 1?: self = transaction.offerDiscountType == "FREE_TRIAL" ? .trial : .intro
        case 2?, 3?, 4?: self = .offer
        default: self = .normal
        }
    }
}

/// One entitlement of a customer: whether it is active now, and the purchase that grants it (the one that grants it
/// longest among the active ones; the one that ended last otherwise).
public struct EntitlementState: Sendable, Equatable {
    /// The entitlement's name in the app's catalog.
    public var name: String
    /// Whether the customer may use it now.
    public var isActive: Bool
    /// When it ends, in milliseconds since 1970; nil for a lifetime purchase.
    public var expiresAt: Int64?
    /// When Apple's billing grace period ends, while the subscription is in it.
    public var gracePeriodExpiresAt: Int64?
    /// Whether the subscription renews; nil when not a subscription or not known.
    public var willRenew: Bool?
    /// The granting period's type.
    public var periodType: PeriodType
    /// The granting product.
    public var productID: String
    /// The granting purchase's original transaction.
    public var originalTransactionID: String
    /// The granting purchase's latest transaction.
    public var transactionID: String
    /// The environment.
    public var environment: StoreEnvironment
    /// The store.
    public var store: Store
    /// Apple's ownership of the granting purchase (`PURCHASED`, `FAMILY_SHARED`), when stated.
    public var ownershipType: String?
    /// When the granting period (or purchase) was bought.
    public var purchasedAt: Int64?
    /// When a billing issue of the granting subscription was first stated, while it lasts.
    public var billingIssueDetectedAt: Int64?
    /// When the granting subscription's renewal was first stated off, while it is off.
    public var unsubscribeDetectedAt: Int64?
    /// When Apple refunded or revoked the granting purchase.
    public var refundedAt: Int64?
    /// The granting period's billing plan (`MONTHLY` within a commitment), when Apple states it.
    public var billingPlanType: String? = nil
    /// When the commitment of the granting period ends (its periods end monthly before it), when it has one.
    public var commitmentExpiresAt: Int64? = nil
}

/// One subscription of a customer (an original transaction): where it stands now.
public struct SubscriptionState: Sendable, Equatable {
    /// The product of its current period.
    public var productID: String
    /// Its original transaction.
    public var originalTransactionID: String
    /// The transaction of its current period.
    public var transactionID: String
    /// Its kind: ``ProductKind/autoRenewable`` or ``ProductKind/nonRenewing(_:)``.
    public var kind: ProductKind
    /// The environment.
    public var environment: StoreEnvironment
    /// The store.
    public var store: Store
    /// Where it stands: active, grace period, billing retry, expired, revoked.
    public var status: SubscriptionStatus.State
    /// Whether it grants its entitlements now.
    public var isActive: Bool
    /// The entitlements its current product grants.
    public var entitlements: [String]
    /// When its current period was bought.
    public var purchasedAt: Int64?
    /// When it was first bought.
    public var originalPurchasedAt: Int64?
    /// When its current period ends.
    public var expiresAt: Int64?
    /// When Apple's billing grace period ends, while it is in it.
    public var gracePeriodExpiresAt: Int64?
    /// Whether it renews, when known.
    public var willRenew: Bool?
    /// The product it renews to, when known.
    public var autoRenewProductID: String?
    /// The current period's type.
    public var periodType: PeriodType
    /// Apple's ownership (`PURCHASED`, `FAMILY_SHARED`), when stated.
    public var ownershipType: String?
    /// When a billing issue was first stated, while it lasts.
    public var billingIssueDetectedAt: Int64?
    /// When its renewal was first stated off, while it is off.
    public var unsubscribeDetectedAt: Int64?
    /// When Apple refunded or revoked its current period.
    public var refundedAt: Int64?
    /// How many periods the ledger holds.
    public var periods: Int
    /// The current period's billing plan (`MONTHLY` within a commitment), when Apple states it.
    public var billingPlanType: String? = nil
    /// When the current period's commitment ends: its monthly periods end before it, and it renews until then.
    public var commitmentExpiresAt: Int64? = nil
}

/// One purchase of a customer that is not a subscription.
public struct PurchaseState: Sendable, Equatable {
    /// The product.
    public var productID: String
    /// The transaction.
    public var transactionID: String
    /// Its original transaction.
    public var originalTransactionID: String
    /// Its kind, when the catalog or the input says it.
    public var kind: ProductKind?
    /// The environment.
    public var environment: StoreEnvironment
    /// The store.
    public var store: Store
    /// Whether it grants its entitlements now (a non-consumable not refunded); nil for a consumable or an unknown
    /// kind.
    public var isActive: Bool?
    /// The entitlements it grants.
    public var entitlements: [String]
    /// When it was bought.
    public var purchasedAt: Int64?
    /// How many were bought.
    public var quantity: Int
    /// Apple's ownership (`PURCHASED`, `FAMILY_SHARED`), when stated.
    public var ownershipType: String?
    /// When Apple refunded or revoked it.
    public var refundedAt: Int64?
}
