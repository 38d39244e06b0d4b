import Foundation
import ReceiptCore

/// The rules that turn a customer's facts into a ``CustomerView`` (docs/api.md, "Customers and entitlements"). Pure:
/// the facts, the catalog and "now" are parameters.
///
/// - A subscription is its original transaction's latest period (by purchase date): an upgrade within a subscription
///   group, a new period bought now, switches at once; a downgrade or crossgrade takes effect at the renewal, when its
///   period begins.
/// - It is active until that period's expiry, or its grace period's end where Apple states one; billing retry without
///   grace is inactive. A status (renewal info, the App Store Server API, a notification) is taken when it is about
///   the latest period or a later one; a period the ledger saw after it wins.
/// - A refund or revocation of the current period ends it at once (prorated too); a reversal (a newer statement
///   without it) restores it.
/// - A non-renewing subscription lasts its catalog duration from its purchase; a non-consumable lasts for good; a
///   consumable grants nothing.
/// - Family-shared purchases grant to the user who presents them (their claimant), like any other.
/// - A product the catalog does not describe grants nothing and is reported.
public enum EntitlementRules {
    /// The view of `entries` and `statuses` (one environment's facts of one customer) under `catalog` at `now`
    /// (milliseconds since 1970).
    public static func view(
        appUserID: String?, originalTransactionID: String? = nil, environment: StoreEnvironment,
        entries: [LedgerEntry], statuses: [SubscriptionStatus], catalog: [CatalogProduct]?, now: Int64
    ) -> CustomerView {
        let products = Dictionary((catalog ?? []).map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        let entries = entries.filter { $0.environment == environment }
        let statusByOriginal = Dictionary(
            statuses.filter { $0.environment == environment }.map { ($0.originalTransactionID, $0) },
            uniquingKeysWith: { first, second in first.asOf >= second.asOf ? first : second })
        var unknown: [String] = []
        var seenUnknown = Set<String>()
        for entry in entries where products[entry.transaction.productID] == nil {
            if seenUnknown.insert(entry.transaction.productID).inserted { unknown.append(entry.transaction.productID) }
        }
        var byOriginal: [String: [LedgerEntry]] = [:]
        var order: [String] = []
        var purchases: [PurchaseState] = []
        var subscriptions: [SubscriptionState] = []
        for entry in entries {
            switch kind(of: entry.transaction, in: products) {
            case .autoRenewable?:
                if byOriginal[entry.transaction.originalTransactionID] == nil {
                    order.append(entry.transaction.originalTransactionID)
                }
                byOriginal[entry.transaction.originalTransactionID, default: []].append(entry)
            case .nonRenewing(let duration)?:
                subscriptions.append(nonRenewing(entry, duration: duration, products: products, now: now))
            case let kind:
                purchases.append(purchase(entry, kind: kind, products: products))
            }
        }
        for original in order {
            subscriptions.append(
                autoRenewable(
                    byOriginal[original] ?? [], status: statusByOriginal[original], products: products, now: now))
        }
        subscriptions.sort {
            ($0.purchasedAt ?? 0, $0.originalTransactionID) < ($1.purchasedAt ?? 0, $1.originalTransactionID)
        }
        purchases.sort { ($0.purchasedAt ?? 0, $0.transactionID) < ($1.purchasedAt ?? 0, $1.transactionID) }
        // Every rule compares "now" with a subscription's expiry or grace period's end: until the next of them, the
        // same facts give the same view.
        let nextChange = subscriptions.flatMap { [$0.expiresAt, $0.gracePeriodExpiresAt] }.compactMap { $0 }
            .filter { $0 > now }.min()
        return CustomerView(
            appUserID: appUserID, originalTransactionID: originalTransactionID, environment: environment,
            entitlements: entitlements(subscriptions: subscriptions, purchases: purchases),
            subscriptions: subscriptions, purchases: purchases, unknownProducts: unknown, computedAt: now,
            nextChangeAt: nextChange)
    }

    /// A transaction's kind: the one its input states (StoreKit 2's `type`; a non-renewing subscription takes its
    /// duration from the catalog), else the catalog's, else an auto-renewable subscription when it has an expiry.
    static func kind(of transaction: PurchaseTransaction, in products: [String: CatalogProduct]) -> ProductKind? {
        let cataloged = products[transaction.productID]?.kind
        if let stated = transaction.productType.flatMap(ProductKind.init(storeKitType:)) {
            if case .nonRenewing = stated, case .nonRenewing? = cataloged { return cataloged }
            return stated
        }
        if let cataloged { return cataloged }
        return transaction.expiresDate != nil ? .autoRenewable : nil
    }

    /// The entitlements `productID` grants; none for a consumable or a product outside the catalog.
    static func grants(_ productID: String, products: [String: CatalogProduct]) -> [String] {
        guard let product = products[productID], product.kind != .consumable else { return [] }
        return product.entitlements
    }

    /// The order of a subscription's periods: by purchase date, then by transaction id.
    static func precedes(_ a: LedgerEntry, _ b: LedgerEntry) -> Bool {
        let first = a.transaction.purchaseDate ?? a.firstSeenAt.millisecondsSince1970
        let second = b.transaction.purchaseDate ?? b.firstSeenAt.millisecondsSince1970
        return (first, a.transaction.transactionID) < (second, b.transaction.transactionID)
    }

    static func autoRenewable(
        _ periods: [LedgerEntry], status: SubscriptionStatus?, products: [String: CatalogProduct], now: Int64
    ) -> SubscriptionState {
        let sorted = periods.sorted(by: precedes)
        let latest = sorted[sorted.count - 1]
        let transaction = latest.transaction
        let ledgerExpiry = transaction.expiresDate
        // A status about the latest period or a later one is current; one written before a period the ledger saw
        // since is not.
        let current = status.flatMap { status in (status.expiresDate ?? .min) >= (ledgerExpiry ?? .min) ? status : nil }
        var productID = transaction.productID
        var expiresAt = ledgerExpiry
        if let current, let stated = current.expiresDate, stated > (ledgerExpiry ?? .min) {
            // The status knows a period the ledger has not seen (its transaction not yet presented).
            productID = current.productID
            expiresAt = stated
        }
        var refundedAt: Int64?
        let revocationAsOf = latest.revocationAsOf ?? .min
        if let revoked = transaction.revocationDate {
            // A newer statement that the subscription stands (a reversal told by the status alone) restores it.
            if let current, current.state != .revoked, current.asOf > revocationAsOf {
                refundedAt = nil
            } else {
                refundedAt = revoked
            }
        } else if let current, current.state == .revoked, current.asOf > revocationAsOf {
            refundedAt = current.asOf
        }
        let state: SubscriptionStatus.State
        var graceEnd: Int64?
        if refundedAt != nil {
            state = .revoked
        } else if let current {
            switch current.state {
            case .gracePeriod:
                graceEnd = current.gracePeriodExpiresDate
                if let graceEnd, now < graceEnd {
                    state = .gracePeriod
                } else if graceEnd == nil, let expiresAt, now < expiresAt {
                    state = .gracePeriod
                } else {
                    state = .billingRetry
                }
            case .billingRetry: state = .billingRetry
            case .expired: state = .expired
            case .active, .revoked: state = (expiresAt.map { now < $0 } ?? false) ? .active : .expired
            }
        } else {
            state = (expiresAt.map { now < $0 } ?? false) ? .active : .expired
        }
        // A period billed monthly within a commitment ends before the commitment does: the customer is committed to
        // the next one whatever the renewal info says of renewing the commitment itself.
        let commitmentEnd = transaction.commitment?.expiresDate
        var willRenew = current?.autoRenews
        if state.isEntitled, let commitmentEnd, let expiresAt, expiresAt < commitmentEnd { willRenew = true }
        return SubscriptionState(
            productID: productID, originalTransactionID: transaction.originalTransactionID,
            transactionID: transaction.transactionID, kind: .autoRenewable, environment: latest.environment,
            store: latest.store, status: state, isActive: state.isEntitled,
            entitlements: grants(productID, products: products), purchasedAt: transaction.purchaseDate,
            originalPurchasedAt: sorted.compactMap {
                $0.transaction.originalPurchaseDate ?? $0.transaction.purchaseDate
            }
            .min(),
            expiresAt: expiresAt, gracePeriodExpiresAt: state == .gracePeriod ? graceEnd : nil,
            willRenew: willRenew, autoRenewProductID: current?.autoRenewProductID,
            periodType: PeriodType(transaction), ownershipType: transaction.inAppOwnershipType,
            billingIssueDetectedAt: state.hasBillingIssue
                ? current.map { $0.billingIssueDetectedAt ?? $0.asOf } : nil,
            unsubscribeDetectedAt: current?.autoRenews == false
                ? current.map { $0.unsubscribeDetectedAt ?? $0.asOf } : nil,
            refundedAt: refundedAt, periods: sorted.count, billingPlanType: transaction.billingPlanType,
            commitmentExpiresAt: commitmentEnd)
    }

    static func nonRenewing(
        _ entry: LedgerEntry, duration: CatalogDuration?, products: [String: CatalogProduct], now: Int64
    ) -> SubscriptionState {
        let transaction = entry.transaction
        let purchased = transaction.purchaseDate ?? entry.firstSeenAt.millisecondsSince1970
        let expiresAt = duration.map { $0.end(from: purchased) } ?? transaction.expiresDate
        let state: SubscriptionStatus.State =
            transaction.revocationDate != nil
            ? .revoked : (expiresAt.map { now < $0 } ?? false) ? .active : .expired
        return SubscriptionState(
            productID: transaction.productID, originalTransactionID: transaction.originalTransactionID,
            transactionID: transaction.transactionID, kind: .nonRenewing(duration), environment: entry.environment,
            store: entry.store, status: state, isActive: state == .active,
            entitlements: grants(transaction.productID, products: products), purchasedAt: transaction.purchaseDate,
            originalPurchasedAt: transaction.originalPurchaseDate ?? transaction.purchaseDate, expiresAt: expiresAt,
            gracePeriodExpiresAt: nil, willRenew: false, autoRenewProductID: nil, periodType: .normal,
            ownershipType: transaction.inAppOwnershipType, billingIssueDetectedAt: nil, unsubscribeDetectedAt: nil,
            refundedAt: transaction.revocationDate, periods: 1)
    }

    static func purchase(_ entry: LedgerEntry, kind: ProductKind?, products: [String: CatalogProduct])
        -> PurchaseState
    {
        let transaction = entry.transaction
        return PurchaseState(
            productID: transaction.productID, transactionID: transaction.transactionID,
            originalTransactionID: transaction.originalTransactionID, kind: kind, environment: entry.environment,
            store: entry.store, isActive: kind == .nonConsumable ? transaction.revocationDate == nil : nil,
            entitlements: grants(transaction.productID, products: products), purchasedAt: transaction.purchaseDate,
            quantity: transaction.quantity, ownershipType: transaction.inAppOwnershipType,
            refundedAt: transaction.revocationDate)
    }

    /// Each entitlement once: granted by the purchase that grants it longest among the active ones (a lifetime
    /// purchase first), else by the one that ended last; in the order the entitlements were first granted.
    static func entitlements(subscriptions: [SubscriptionState], purchases: [PurchaseState]) -> [EntitlementState] {
        var best: [String: EntitlementState] = [:]
        var order: [String] = []
        func offer(_ candidate: EntitlementState) {
            guard let held = best[candidate.name] else {
                best[candidate.name] = candidate
                order.append(candidate.name)
                return
            }
            if ranks(candidate, above: held) { best[candidate.name] = candidate }
        }
        for subscription in subscriptions {
            for name in subscription.entitlements {
                offer(
                    EntitlementState(
                        name: name, isActive: subscription.isActive, expiresAt: subscription.expiresAt,
                        gracePeriodExpiresAt: subscription.gracePeriodExpiresAt, willRenew: subscription.willRenew,
                        periodType: subscription.periodType, productID: subscription.productID,
                        originalTransactionID: subscription.originalTransactionID,
                        transactionID: subscription.transactionID, environment: subscription.environment,
                        store: subscription.store, ownershipType: subscription.ownershipType,
                        purchasedAt: subscription.purchasedAt,
                        billingIssueDetectedAt: subscription.billingIssueDetectedAt,
                        unsubscribeDetectedAt: subscription.unsubscribeDetectedAt, refundedAt: subscription.refundedAt,
                        billingPlanType: subscription.billingPlanType,
                        commitmentExpiresAt: subscription.commitmentExpiresAt))
            }
        }
        for purchase in purchases where purchase.kind == .nonConsumable {
            for name in purchase.entitlements {
                offer(
                    EntitlementState(
                        name: name, isActive: purchase.isActive ?? false, expiresAt: nil, gracePeriodExpiresAt: nil,
                        willRenew: nil, periodType: .normal, productID: purchase.productID,
                        originalTransactionID: purchase.originalTransactionID, transactionID: purchase.transactionID,
                        environment: purchase.environment, store: purchase.store,
                        ownershipType: purchase.ownershipType, purchasedAt: purchase.purchasedAt,
                        billingIssueDetectedAt: nil, unsubscribeDetectedAt: nil, refundedAt: purchase.refundedAt))
            }
        }
        return order.compactMap { best[$0] }
    }

    /// Whether `a` grants an entitlement better than `b`: active over inactive; among active ones the later end (a
    /// lifetime purchase has none, and is best); among inactive ones the later end.
    static func ranks(_ a: EntitlementState, above b: EntitlementState) -> Bool {
        if a.isActive != b.isActive { return a.isActive }
        let endA = a.isActive ? (a.expiresAt.map { max($0, a.gracePeriodExpiresAt ?? $0) } ?? .max) : ended(a)
        let endB = b.isActive ? (b.expiresAt.map { max($0, b.gracePeriodExpiresAt ?? $0) } ?? .max) : ended(b)
        if endA != endB { return endA > endB }
        return (a.purchasedAt ?? 0) > (b.purchasedAt ?? 0)
    }

    private static func ended(_ state: EntitlementState) -> Int64 {
        state.refundedAt ?? state.expiresAt ?? state.purchasedAt ?? 0
    }
}
