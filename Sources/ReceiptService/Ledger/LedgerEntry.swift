import Foundation
import ReceiptCore

/// One row of an app's ledger: a transaction as first recorded, with its claim, revocation and delivery
/// (docs/api.md, "Transactions"). The receipt itself is never stored.
public struct LedgerEntry: Sendable, Equatable {
    /// The app whose ledger holds it.
    public var appID: UUID
    /// The store the transaction was made in.
    public var store: Store
    /// The environment the transaction was made in.
    public var environment: StoreEnvironment
    /// The transaction; its revocation is the first one any input stated.
    public var transaction: PurchaseTransaction
    /// The app's user that claimed the transaction's original transaction, if any.
    public var claimant: String?
    /// When the ledger first recorded it.
    public var firstSeenAt: Date
    /// When a request last saw it, to within ``LedgerRecording/lastSeenPrecision`` (a request answered from the
    /// in-memory view writes nothing).
    public var lastSeenAt: Date
    /// The id of the request that first recorded it.
    public var firstRequestID: String
    /// When it was delivered: the first answer's time in `once` mode, the backend's confirmation in `confirm` mode.
    public var deliveredAt: Date?
    /// Apple's Finish Transaction of a confirmed delivery, for apps with App Store Server API credentials.
    public var appleFinish: AppleFinishStatus?
    /// Google Play's acknowledgement of a delivered purchase (its state, attempts and error, as Apple's finish's;
    /// `finished` is acknowledged, by us or already by Google).
    public var googleAcknowledgement: AppleFinishStatus?
    /// The signed date (milliseconds since 1970) of the statement that last set or cleared the revocation; an older
    /// statement changes it no more.
    public var revocationAsOf: Int64?
    /// When an answer in `confirm` mode first said `deliver: true` for it (money review M3): what a switch to `once`
    /// takes as delivered, and what a `once` answer never offers again.
    public var offeredAt: Date?

    /// Creates an entry.
    public init(
        appID: UUID, store: Store = .appStore, environment: StoreEnvironment, transaction: PurchaseTransaction,
        claimant: String?, firstSeenAt: Date, lastSeenAt: Date, firstRequestID: String, deliveredAt: Date?,
        appleFinish: AppleFinishStatus? = nil, revocationAsOf: Int64? = nil
    ) {
        self.store = store
        self.appleFinish = appleFinish
        self.revocationAsOf = revocationAsOf
        self.appID = appID
        self.environment = environment
        self.transaction = transaction
        self.claimant = claimant
        self.firstSeenAt = firstSeenAt
        self.lastSeenAt = lastSeenAt
        self.firstRequestID = firstRequestID
        self.deliveredAt = deliveredAt
    }

    /// Whether Apple revoked it (refund or family revoke).
    public var isRevoked: Bool { transaction.revocationDate != nil }
}

/// The transactions of one verified input, to be recorded in one atomic step (``LedgerStore/record(_:)``).
public struct LedgerRecording: Sendable {
    /// The app.
    public var appID: UUID
    /// The input's store.
    public var store: Store
    /// The input's environment.
    public var environment: StoreEnvironment
    /// The input's distinct transactions.
    public var transactions: [PurchaseTransaction]
    /// The user presenting them, when claims are made; nil makes no claim.
    public var user: String?
    /// Whether another user's claim moves to ``user`` (``ClaimsPolicy/transfer``).
    public var movesClaims: Bool
    /// Whether a new transaction that is not revoked and not another user's is delivered by this answer
    /// (``DeliveryMode/once``).
    public var deliversNew: Bool
    /// Whether the answer says `deliver: true` for each transaction that may be delivered and is not yet
    /// (``DeliveryMode/confirm``): each is recorded as offered, once (money review M3).
    public var offers = false
    /// Whether a transaction already in the ledger and not yet delivered is delivered by this recording (when
    /// ``deliversNew``). A customer import delivers only what it inserts: a row the service recorded before (a
    /// purchase notified while the import ran) stays to be delivered by the backend's own answer (money review M4).
    public var deliversExisting = true
    /// Whether a purchase of another user undoes the whole recording (``ClaimsPolicy/refuse``): the store then
    /// throws ``ServiceError/Code/claimedByOtherUser`` and writes nothing.
    public var refusesOtherUsers: Bool = false
    /// The request's id.
    public var requestID: String
    /// The request's time.
    public var now: Date
    /// The app's catalog, whose entitlements the recording may change (``CustomerChanges``); nil: none.
    public var catalog: [CatalogProduct]?
    /// Subscriptions' statuses that Apple's renewal infos state beside the transactions (an enriched answer's), written
    /// in the recording's transaction where no status signed later is stored (``SubscriptionStatus/merge(_:with:)``).
    public var statuses: [SubscriptionStatus] = []
    /// Decides between the caller and the store whether the recording is written (``CommitClaim``): set for an
    /// answer's recording, which may mark deliveries (in `confirm` mode too, where the app is in `once` as stored), so
    /// that only the answer that says `deliver: true` marks one.
    public var commitClaim: CommitClaim?

    /// Creates a recording.
    public init(
        appID: UUID, store: Store = .appStore, environment: StoreEnvironment, transactions: [PurchaseTransaction],
        user: String?, movesClaims: Bool, deliversNew: Bool, requestID: String, now: Date
    ) {
        self.appID = appID
        self.store = store
        self.environment = environment
        self.transactions = transactions
        self.user = user
        self.movesClaims = movesClaims
        self.deliversNew = deliversNew
        self.requestID = requestID
        self.now = now.roundedToMilliseconds
    }

    /// How precisely `last_seen_at` is kept, in seconds: a recording within this time of the last one does not write
    /// it again.
    public static let lastSeenPrecision: TimeInterval = 600

    /// The entry a new transaction gets, its claimant already decided: delivered now when ``deliversNew`` and
    /// ``mayDeliver(_:)``.
    public func newEntry(_ transaction: PurchaseTransaction, claimant: String?) -> LedgerEntry {
        var entry = LedgerEntry(
            appID: appID, store: store, environment: environment, transaction: transaction, claimant: claimant,
            firstSeenAt: now, lastSeenAt: now, firstRequestID: requestID, deliveredAt: nil)
        // A row born revoked is stamped with the statement's signed date, as a revocation of a known row is: an older
        // statement arriving later (a SUBSCRIBED or DID_RENEW Apple retried, a status) cannot restore it. The simulator
        // found a refunded subscription's entitlement restored by its late SUBSCRIBED notification (seed 94).
        if transaction.revocationDate != nil { entry.revocationAsOf = transaction.signedDate }
        if deliversNew && mayDeliver(entry) { entry.deliveredAt = now }
        if offers && mayDeliver(entry) { entry.offeredAt = now }
        if store == .googlePlay, transaction.purchaseToken != nil {
            // Google's own acknowledgement stands; else one is asked once the purchase is delivered.
            if transaction.isAcknowledged == true {
                entry.googleAcknowledgement = AppleFinishStatus(
                    state: .finished, attempts: 0, lastError: nil, finishedAt: nil)
            } else if entry.deliveredAt != nil {
                entry.googleAcknowledgement = AppleFinishStatus(
                    state: .pending, attempts: 0, lastError: nil, finishedAt: nil)
            }
        }
        return entry
    }

    /// Whether `entry` may be delivered to this recording's user: not revoked, and not another user's (without a
    /// user, claims are not checked).
    public func mayDeliver(_ entry: LedgerEntry) -> Bool {
        guard !entry.isRevoked else { return false }
        guard let user, let holder = entry.claimant else { return true }
        return holder == user
    }

    /// Whether `entry`, not yet delivered, is delivered by this recording (``DeliveryMode/once``: the first answer
    /// in which it may be delivered, as when a renewal first presented by another user reaches its claimant). One an
    /// answer in `confirm` mode offered was the backend's to deliver then: it is not offered again.
    public func deliversNow(_ entry: LedgerEntry) -> Bool {
        marksDelivered(entry) && entry.offeredAt == nil
    }

    /// Whether `entry` is recorded as offered by this recording (``offers``): not offered, not delivered, deliverable.
    public func offersNow(_ entry: LedgerEntry) -> Bool {
        offers && entry.offeredAt == nil && entry.deliveredAt == nil && mayDeliver(entry)
    }

    /// Records as `once` mode does what this recording in `confirm` mode would offer: the app is in `once` as stored
    /// (``LedgerWriting/deliversOnceAsStored()``: this server still holds it in `confirm`, within its authentication
    /// cache, after the switch), so the answer's `deliver: true` is the delivery, made by exactly one answer, and an
    /// earlier offer is taken as delivered (``settlesNow(_:)``). Before, the offer was recorded and then settled:
    /// two answers recorded in one group both said `deliver: true`, and the settle, not waited for past the database
    /// deadline, could commit behind its 503 (found by the simulator with switches).
    public mutating func deliverAsStored() {
        offers = false
        deliversNew = true
    }

    /// Whether `entry`, offered by an answer in `confirm` mode and never confirmed, is taken as delivered by this
    /// recording (``DeliveryMode/once``), without saying `deliver: true` again: an answer from a server that still held
    /// the app in `confirm` mode after the switch, which the switch's settle could not see.
    public func settlesNow(_ entry: LedgerEntry) -> Bool {
        marksDelivered(entry) && entry.offeredAt != nil
    }

    /// Whether `entry`, not yet delivered, is marked delivered by this recording (``DeliveryMode/once``), said
    /// (``deliversNow(_:)``) or not (``settlesNow(_:)``).
    private func marksDelivered(_ entry: LedgerEntry) -> Bool {
        deliversNew && deliversExisting && entry.deliveredAt == nil && mayDeliver(entry)
    }

    /// Whether recording `entry` writes to the store (a delivery, an offer or a settle), which the in-memory view
    /// cannot answer.
    public func writes(_ entry: LedgerEntry) -> Bool {
        deliversNow(entry) || offersNow(entry) || settlesNow(entry)
    }

    /// The input's original transaction ids, each once, in first-seen order.
    public var originalTransactionIDs: [String] {
        var seen = Set<String>()
        return transactions.map(\.originalTransactionID).filter { seen.insert($0).inserted }
    }
}

/// What recording did to one transaction.
public struct LedgerRecorded: Sendable, Equatable {
    /// The entry as stored after the recording.
    public var entry: LedgerEntry
    /// Whether this recording inserted it.
    public var isNew: Bool
    /// The user whose claim moved to the recording's user, if one did.
    public var transferredFrom: String?
    /// Whether this recording marked it delivered (``DeliveryMode/once``): the answer says `deliver: true`.
    public var deliveredNow: Bool
    /// Whether this recording recorded its revocation (the ledger knew it unrevoked).
    public var revokedNow: Bool

    /// Creates a result.
    public init(
        entry: LedgerEntry, isNew: Bool, transferredFrom: String?, deliveredNow: Bool = false, revokedNow: Bool = false
    ) {
        self.entry = entry
        self.isNew = isNew
        self.transferredFrom = transferredFrom
        self.deliveredNow = deliveredNow
        self.revokedNow = revokedNow
    }
}

/// Which ledger rows a look-up wants, one page at a time.
public struct LedgerQuery: Sendable, Equatable {
    /// The app.
    public var appID: UUID
    /// Only transactions whose original transaction this user claimed.
    public var user: String?
    /// Only this original transaction's.
    public var originalTransactionID: String?
    /// Only the purchase of this token (Google Play).
    public var purchaseToken: String?
    /// Only those first seen at or after this time.
    public var since: Date?
    /// Only those first seen before this time.
    public var until: Date?
    /// Only those after this position (the last row of the previous page).
    public var after: LedgerPosition?
    /// At most this many.
    public var limit: Int

    /// Creates a query.
    public init(
        appID: UUID, user: String? = nil, originalTransactionID: String? = nil, purchaseToken: String? = nil,
        since: Date? = nil, until: Date? = nil, after: LedgerPosition? = nil, limit: Int
    ) {
        self.appID = appID
        self.user = user
        self.originalTransactionID = originalTransactionID
        self.purchaseToken = purchaseToken
        self.since = since
        self.until = until
        self.after = after
        self.limit = limit
    }
}

extension LedgerQuery {
    /// The rows the query selects (its own `after` and `limit` aside), up to `limit`, read by `page` in pages of at
    /// most `pageSize` in the ledger's order, so that one read never holds a long transaction.
    public func read(
        upTo limit: Int, pageSize: Int = 1_000, page: (LedgerQuery) async throws -> [LedgerEntry]
    ) async throws -> [LedgerEntry] {
        var entries: [LedgerEntry] = []
        var query = self
        while entries.count < limit {
            query.limit = min(pageSize, limit - entries.count)
            let rows = try await page(query)
            entries += rows
            guard rows.count == query.limit, let last = rows.last else { break }
            query.after = LedgerPosition(of: last)
        }
        return entries
    }
}

/// A row's place in the ledger's order: first seen, then environment, then transaction id.
public struct LedgerPosition: Sendable, Equatable {
    /// `first_seen_at` in milliseconds since 1970.
    public var firstSeen: Int64
    /// The environment's stored name.
    public var environment: String
    /// The transaction id.
    public var transactionID: String

    /// Creates a position.
    public init(firstSeen: Int64, environment: String, transactionID: String) {
        self.firstSeen = firstSeen
        self.environment = environment
        self.transactionID = transactionID
    }

    /// The position of `entry`.
    public init(of entry: LedgerEntry) {
        self.init(
            firstSeen: entry.firstSeenAt.millisecondsSince1970, environment: entry.environment.rawValue,
            transactionID: entry.transaction.transactionID)
    }
}
