import Foundation

/// The reference model of the simulator (docs/testing.md): what each user of one app has paid for on each store, and
/// therefore what the service must answer. It is small and pure on purpose: it imports nothing of the service, so a
/// rule the service gets wrong cannot be copied into the model by sharing code.
///
/// The model knows the truth of the store (every purchase, renewal and refund, with its dates) and, separately, what
/// the service has been told so far (``Knowledge``): a purchase the service never heard of cannot be delivered or
/// entitle anyone, and a refund it never heard of cannot end anything.
public struct MoneyModel: Sendable {
    /// The catalog: every product the app sells.
    public let products: [String: Product]
    /// Every store transaction of the history (purchases, renewal periods), by transaction id.
    public private(set) var purchases: [String: Purchase] = [:]
    /// What the service has been told, and what it has answered.
    public private(set) var knowledge = Knowledge()
    /// Whether the app delivers in `confirm` mode: a purchase is offered (`deliver: true`) in every answer until the
    /// backend confirms its delivery; in `once` mode the answer that offers it is its delivery. An operator may switch
    /// it (``switchDelivery(confirms:)``).
    public private(set) var confirmsDeliveries: Bool

    public init(products: [Product], confirmsDeliveries: Bool = false) {
        self.products = Dictionary(uniqueKeysWithValues: products.map { ($0.id, $0) })
        self.confirmsDeliveries = confirmsDeliveries
    }

    /// Adds a store transaction to the truth (the service does not know it yet).
    public mutating func add(_ purchase: Purchase) { purchases[purchase.transactionID] = purchase }

    /// Marks `transactionID` refunded by the store at `date`.
    public mutating func refund(_ transactionID: String, at date: Date) { purchases[transactionID]?.refundedAt = date }

    /// Whether the store held `purchase` refunded at `date` (refunded by then, and not reversed by then).
    public static func isRefunded(_ purchase: Purchase, at date: Date) -> Bool {
        guard let refunded = purchase.refundedAt, refunded <= date else { return false }
        return purchase.reversedAt.map { $0 > date } ?? true
    }

    // MARK: - What the service is told

    /// What the service has learnt and answered.
    public struct Knowledge: Sendable, Equatable {
        /// Transactions the service has heard of (by any source).
        public var known: Set<String> = []
        /// Transactions the service holds a ledger row of: every one it heard of but a store's void of a purchase it
        /// never saw, which it keeps apart until the purchase arrives (money review M8).
        public var recorded: Set<String> = []
        /// Refunds the service holds now, by transaction id.
        public var revoked: [String: Date] = [:]
        /// The signed date of the newest statement of each transaction's refund the service took (a refund, its
        /// reversal): an older statement arriving later changes nothing.
        public var revocationAsOf: [String: Date] = [:]
        /// Who holds each original transaction (the first user a request named; no store-side id ever claims).
        public var claims: [String: String] = [:]
        /// The transactions the service holds delivered: in `once` mode by the answer that offered it, in `confirm`
        /// mode by the backend's confirmation.
        public var delivered: Set<String> = []
        /// In `confirm` mode, the transactions offered and not confirmed yet.
        public var offered: Set<String> = []
        /// Transactions answered `deliver: true` while a switch to `confirm` was not yet seen by every server (a server
        /// holds an app's settings for its authentication cache's lifetime): delivered, if a server still in `once`
        /// answered, or offered, if one in `confirm` did. The next answer once every server sees the switch (`false`:
        /// delivered), a confirmation, or a switch back to `once` tells which.
        public var unsettled: Set<String> = []
    }

    /// What a message says of a transaction's refund, signed at a date.
    public enum Statement: Sendable, Equatable {
        /// Nothing (a purchase, a renewal, an item signed while it was not refunded).
        case none
        /// Refunded (a `REFUND`, an item signed while it was refunded).
        case refunded
        /// The refund reversed (`REFUND_REVERSED`).
        case reversed
    }

    /// The service hears of `transactionID` from a message signed at `signedAt`: a purchase, a renewal, a refund or its
    /// reversal. A statement of the refund is taken only when it is no older than the newest one taken (Apple's
    /// signed dates order them, not their arrival). Notifications never claim and never deliver. A message that names
    /// the transaction without stating it (a void) gives the service no row of it (`recordsRow` false).
    public mutating func notified(
        _ transactionID: String, stating statement: Statement, signedAt: Date, recordsRow: Bool = true
    ) {
        guard let purchase = purchases[transactionID] else { return }
        knowledge.known.insert(transactionID)
        if recordsRow { knowledge.recorded.insert(transactionID) }
        guard statement != .none, knowledge.revocationAsOf[transactionID].map({ $0 <= signedAt }) ?? true else {
            return
        }
        knowledge.revocationAsOf[transactionID] = signedAt
        if statement == .refunded, let refunded = purchase.refundedAt {
            knowledge.revoked[transactionID] = refunded
        } else if statement == .reversed {
            knowledge.revoked[transactionID] = nil
        }
    }

    /// What one presentation must be answered.
    public struct Expectation: Sendable, Equatable {
        /// `deliver` of the transaction's entry.
        public var deliver: Bool
        /// Whether the entry must say another user holds the purchase (`claimed_by_other_user`).
        public var claimedByOther: Bool
    }

    /// A client presents `transactionID` for `user` (nil: the request named no user), signed at `signedAt` (carrying
    /// the refund if the store held it refunded then). Returns what the answer must say and records the delivery it
    /// makes.
    public mutating func presented(
        _ transactionID: String, user: String?, signedAt: Date, eitherMode: Bool = false, answered: Bool = false
    ) -> Expectation {
        guard let purchase = purchases[transactionID] else { return Expectation(deliver: false, claimedByOther: false) }
        return presented(
            transactionID, user: user, stating: Self.isRefunded(purchase, at: signedAt) ? .refunded : .none,
            signedAt: signedAt, eitherMode: eitherMode, answered: answered)
    }

    /// A client presents `transactionID` for `user`, and the store's answer states `statement` of its refund as of
    /// `signedAt` (Google's purchase resources state none: its refunds are told by voided purchases alone).
    ///
    /// `eitherMode`: the app was switched to `confirm` so recently that a server may still answer in `once`. Where the
    /// two modes answer alike but leave the transaction delivered or offered, it is unsettled; where a transaction is
    /// unsettled, either answer is right, and `answered` (the service's `deliver`) tells which it was: `false`, it was
    /// delivered; `true` from a server in `confirm` (`eitherMode` false), it is offered.
    public mutating func presented(
        _ transactionID: String, user: String?, stating statement: Statement, signedAt: Date, eitherMode: Bool = false,
        answered: Bool = false
    ) -> Expectation {
        guard let purchase = purchases[transactionID] else { return Expectation(deliver: false, claimedByOther: false) }
        notified(transactionID, stating: statement, signedAt: signedAt)
        if let user, knowledge.claims[purchase.originalTransactionID] == nil {
            knowledge.claims[purchase.originalTransactionID] = user
        }
        if let user, let holder = knowledge.claims[purchase.originalTransactionID], holder != user {
            return Expectation(deliver: false, claimedByOther: true)
        }
        guard knowledge.revoked[transactionID] == nil, !knowledge.delivered.contains(transactionID) else {
            return Expectation(deliver: false, claimedByOther: false)
        }
        // In `once` mode a transaction an answer in `confirm` offered (or may have) was delivered by that answer: it
        // is taken as delivered, and not said again (one the switch could not settle: refunded then, reversed since).
        if !confirmsDeliveries,
            knowledge.offered.contains(transactionID) || knowledge.unsettled.contains(transactionID)
        {
            knowledge.offered.remove(transactionID)
            knowledge.unsettled.remove(transactionID)
            knowledge.delivered.insert(transactionID)
            return Expectation(deliver: false, claimedByOther: false)
        }
        if knowledge.unsettled.contains(transactionID) {
            if !answered {
                knowledge.unsettled.remove(transactionID)
                knowledge.delivered.insert(transactionID)
            } else if !eitherMode {
                knowledge.unsettled.remove(transactionID)
                knowledge.offered.insert(transactionID)
            }
            return Expectation(deliver: answered, claimedByOther: false)
        }
        if confirmsDeliveries && eitherMode {
            knowledge.offered.remove(transactionID)
            knowledge.unsettled.insert(transactionID)
        } else if confirmsDeliveries {
            knowledge.offered.insert(transactionID)
        } else {
            knowledge.delivered.insert(transactionID)
        }
        return Expectation(deliver: true, claimedByOther: false)
    }

    /// The operator switches the app's delivery mode. A switch from `confirm` to `once` takes every transaction
    /// offered and not revoked as delivered (docs/api.md: the switch never delivers again); what a server still in
    /// `confirm` offers after it is delivered by that offer, as the app is in `once` as stored, so answers follow
    /// `once` at once. A switch to `confirm` is seen by each server within its authentication cache's lifetime: the
    /// caller says which answers may still follow `once` (``presented(_:user:stating:signedAt:eitherMode:answered:)``).
    public mutating func switchDelivery(confirms: Bool) {
        if confirmsDeliveries && !confirms {
            for id in knowledge.offered.union(knowledge.unsettled) where knowledge.revoked[id] == nil {
                knowledge.delivered.insert(id)
                knowledge.offered.remove(id)
                knowledge.unsettled.remove(id)
            }
        }
        confirmsDeliveries = confirms
    }

    /// The backend confirms the delivery of `transactionIDs`. Returns, for each one the service has heard of, whether
    /// it is delivered now: a confirmation marks delivered what is not refunded (a refunded one stays undelivered, and
    /// is offered again if its refund is reversed); one the service never heard of is unknown to it (absent). A
    /// refunded transaction that is unsettled may be either (nil), and `answered` (whether the service lists it
    /// delivered) tells which.
    public mutating func confirmed(_ transactionIDs: [String], answered: [String: Bool] = [:]) -> [String: Bool?] {
        var answer: [String: Bool?] = [:]
        for id in transactionIDs where knowledge.known.contains(id) {
            if knowledge.revoked[id] == nil {
                knowledge.delivered.insert(id)
                knowledge.offered.remove(id)
                knowledge.unsettled.remove(id)
                answer[id] = true
            } else if knowledge.unsettled.contains(id) {
                knowledge.unsettled.remove(id)
                if answered[id] == true {
                    knowledge.delivered.insert(id)
                } else {
                    knowledge.offered.insert(id)
                }
                answer[id] = .some(nil)
            } else {
                answer[id] = knowledge.delivered.contains(id)
            }
        }
        return answer
    }

    // MARK: - What a user may use now

    /// One active entitlement: its name and when it ends (nil: never).
    public struct Entitlement: Sendable, Equatable, CustomStringConvertible {
        public var name: String
        public var expiresAt: Date?
        public init(name: String, expiresAt: Date?) {
            self.name = name
            self.expiresAt = expiresAt
        }
        public var description: String {
            "\(name) until \(expiresAt.map { String(Int64(($0.timeIntervalSince1970 * 1_000).rounded(.down))) } ?? "ever")"
        }
    }

    /// The entitlements active for `user` at `now` on `store`, from what the service knows of the originals `user`
    /// holds: a non-consumable while not refunded; a subscription while its latest known period has not ended and was
    /// not refunded (a refund of an older period ends nothing); consumables grant nothing.
    public func entitlements(of user: String, at now: Date, on store: Store = .appStore) -> [Entitlement] {
        var byName: [String: Entitlement] = [:]
        let held = Set(knowledge.claims.filter { $0.value == user }.map(\.key))
        let known = knowledge.known.compactMap { purchases[$0] }.filter {
            held.contains($0.originalTransactionID) && $0.store == store
        }
        for (_, periods) in Dictionary(grouping: known, by: \.originalTransactionID) {
            guard let product = products[periods[0].productID] else { continue }
            var granted: Date??
            switch product.kind {
            case .consumable:
                continue
            case .nonConsumable:
                if periods.contains(where: { knowledge.revoked[$0.transactionID] == nil }) { granted = .some(nil) }
            case .autoRenewable:
                let latest = periods.max { ($0.purchasedAt, $0.transactionID) < ($1.purchasedAt, $1.transactionID) }
                if let latest, knowledge.revoked[latest.transactionID] == nil, let end = latest.expiresAt, end > now {
                    granted = .some(end)
                }
            }
            guard let granted else { continue }
            for name in product.entitlements {
                if let current = byName[name] {
                    let merged: Date? =
                        switch (current.expiresAt, granted) {
                        case (nil, _), (_, nil): nil
                        case (let a?, let b?): max(a, b)
                        }
                    byName[name] = Entitlement(name: name, expiresAt: merged)
                } else {
                    byName[name] = Entitlement(name: name, expiresAt: granted)
                }
            }
        }
        return byName.values.sorted { $0.name < $1.name }
    }
}

/// A product of the catalog.
public struct Product: Sendable, Equatable {
    public enum Kind: Sendable, Equatable {
        case consumable
        case nonConsumable
        /// Renews every `days` days.
        case autoRenewable(days: Int)
    }
    public let id: String
    public let kind: Kind
    /// The entitlements it grants.
    public let entitlements: [String]

    public init(id: String, kind: Kind, entitlements: [String]) {
        self.id = id
        self.kind = kind
        self.entitlements = entitlements
    }

    /// The catalog entry the service is configured with (`ID=TYPE[:ENTITLEMENT,…]`).
    public var catalogEntry: String {
        let type =
            switch kind {
            case .consumable: "consumable"
            case .nonConsumable: "non_consumable"
            case .autoRenewable: "auto_renewable"
            }
        return entitlements.isEmpty ? "\(id)=\(type)" : "\(id)=\(type):\(entitlements.joined(separator: ","))"
    }
}

extension MoneyModel {
    /// A store a purchase is made on.
    public enum Store: String, Sendable, Equatable, CaseIterable {
        case appStore
        case googlePlay
    }
}

/// One store transaction: a purchase, or one period of a subscription.
public struct Purchase: Sendable, Equatable {
    /// Where it was bought.
    public let store: MoneyModel.Store
    public let transactionID: String
    public let originalTransactionID: String
    public let productID: String
    /// The backend's own id of the user who paid.
    public let buyer: String
    public let purchasedAt: Date
    /// A subscription period's end.
    public let expiresAt: Date?
    /// When the store refunded it, if it did.
    public var refundedAt: Date?
    /// When the store reversed that refund, if it did.
    public var reversedAt: Date?

    public init(
        store: MoneyModel.Store = .appStore, transactionID: String, originalTransactionID: String, productID: String,
        buyer: String, purchasedAt: Date, expiresAt: Date?, refundedAt: Date? = nil
    ) {
        self.store = store
        self.transactionID = transactionID
        self.originalTransactionID = originalTransactionID
        self.productID = productID
        self.buyer = buyer
        self.purchasedAt = purchasedAt
        self.expiresAt = expiresAt
        self.refundedAt = refundedAt
    }
}
