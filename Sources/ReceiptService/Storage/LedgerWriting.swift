import Foundation
import ReceiptCore

/// The steps a store takes inside one transaction to record an input's transactions, for one app and environment:
/// what differs between the dialects. ``LedgerRecorder`` orders them, once for both stores.
public protocol LedgerWriting {
    /// The users holding the claims of these original transactions (sorted, distinct), by original transaction id;
    /// unclaimed ones are absent.
    func claimants(of originalTransactionIDs: [String]) async throws -> [String: String]
    /// Gives the original transaction's claim to `user`.
    func moveClaim(of originalTransactionID: String, to user: String, at date: Date) async throws
    /// Inserts each entry (sorted by transaction id) whose transaction is not yet in the ledger; returns the ids of
    /// those it inserted.
    func insertIfAbsent(_ entries: [LedgerEntry]) async throws -> Set<String>
    /// The stored entries of these transactions, by transaction id (claimants not filled in).
    func entries(transactionIDs: [String]) async throws -> [String: LedgerEntry]
    /// The original transactions (each once, with a product of theirs and their latest expiry) of the rows bought with
    /// these purchase tokens (Google Play's), sorted.
    func originals(ofPurchaseTokens tokens: [String]) async throws -> [(
        original: String, productID: String, expires: Int64?
    )]
    /// Claims each original transaction of `claims` that has no claimant for its user (the first pair of an original
    /// wins), then returns the claimants of `originals` (sorted, distinct); unclaimed ones are absent.
    func claims(_ claims: [(original: String, user: String)], reading originals: [String], at date: Date)
        async throws -> [String: String]
    /// Marks the transaction delivered at `date` unless it already is, or was revoked meanwhile (by another server's
    /// commit since it was read); returns whether it did.
    func markDelivered(_ transactionID: String, at date: Date) async throws -> Bool
    /// Records that an answer in `confirm` mode offered the transaction at `date`, unless one did before or it is
    /// delivered or revoked (money review M3).
    func markOffered(_ transactionID: String, at date: Date) async throws
    /// Whether the app's delivery mode as stored is `once`, read under a lock held until the transaction ends that a
    /// switch's update of the app waits for (or that waits for the switch): taken before the recording writes a row,
    /// so that the two cannot deadlock. A recording in `confirm` mode of an app in `once` as stored (a server still
    /// holding the app in `confirm` after the switch, within its authentication cache) is then recorded as `once`
    /// records (``LedgerRecording/deliverAsStored()``): its answer's `deliver: true` is the delivery, and the switch's
    /// settle could not see it.
    func deliversOnceAsStored() async throws -> Bool
    /// Sets `last_seen_at`, and the revocation of `revocation` when given, stamped with its signed date (only where no
    /// statement signed later set or cleared the revocation); returns whether this call revoked a row that was not
    /// revoked, decided on the row as it is when written (two servers recording one refund: one says so, money review
    /// M12).
    @discardableResult
    func touch(_ transactionID: String, at date: Date, revocation: PurchaseTransaction?) async throws -> Bool
    /// Inserts the events of ledger changes that some endpoint of their app takes, each with its deliveries (the
    /// others are not kept: without a receiver, the ledger itself is the record).
    func insertLedgerEvents(_ events: [WebhookEvent]) async throws
    /// The stored statuses of these subscriptions, by original transaction ID, locked until the transaction ends
    /// where the store can.
    func subscriptionStatuses(of originalTransactionIDs: [String]) async throws -> [String: SubscriptionStatus]
    /// Inserts or replaces the subscriptions' statuses (one each), unless a stored one was signed later.
    func saveSubscriptionStatuses(_ statuses: [SubscriptionStatus]) async throws
    /// The rows of the original transactions `user` claims (at most `limit`) and their subscriptions' statuses.
    func customerFacts(of user: String, limit: Int) async throws -> (
        entries: [LedgerEntry], statuses: [SubscriptionStatus]
    )
    /// The entitlements last told of `user` (``CustomerChanges``' text; nil when none was), locked until the
    /// transaction ends (created empty if absent, so that two servers telling of one user wait for each other).
    func lockCustomerSnapshot(of user: String, at date: Date) async throws -> String?
    /// Keeps what was told of `user` now, and when the same facts next give another view; a `changed` view takes the
    /// user's next sequence number. Returns the user's sequence number after it (the lock taken by
    /// ``lockCustomerSnapshot(of:at:)`` orders them: each change told gets a higher one, money review M10).
    func saveCustomerSnapshot(
        of user: String, entitlements: String, nextChangeAt: Int64?, changed: Bool, at date: Date
    ) async throws -> Int64
    /// Leaves these users due no more (their app's catalog grants no entitlement now).
    func clearCustomerDue(of users: [String]) async throws
    /// What the store said was voided of these transactions before or after the ledger recorded them (Google Play's
    /// voided purchases, kept as read: money review M8), by transaction id; none for a store that states its
    /// refunds on the transaction itself.
    func voids(of transactionIDs: [String]) async throws -> [String: PurchaseVoid]
}

extension LedgerWriting {
    /// None: a writer of a store whose refunds are stated on the transaction.
    public func voids(of transactionIDs: [String]) async throws -> [String: PurchaseVoid] { [:] }

    /// The claimants of `originals` after claiming each that had none for `user` (`user` nil: read only).
    public func claimants(of originals: [String], claimingFor user: String?, at date: Date) async throws -> [String:
        String]
    {
        try await claims(user.map { user in originals.map { ($0, user) } } ?? [], reading: originals, at: date)
    }
}

/// A purchase the store voided (refunded, charged back, cancelled) as the store's list of voided purchases states it,
/// whether or not the ledger held the purchase then (money review M8): a row recorded after the void is born revoked,
/// and quantity-based partial refunds of one purchase add up.
public struct PurchaseVoid: Sendable, Equatable {
    /// The latest void's time (milliseconds since 1970).
    public var voidedAt: Int64
    /// The latest void's reason, as the store numbers it.
    public var reason: Int?
    /// The quantity voided in all (each partial refund once); nil: the whole purchase.
    public var quantity: Int?

    /// Creates a void.
    public init(voidedAt: Int64, reason: Int?, quantity: Int?) {
        self.voidedAt = voidedAt
        self.reason = reason
        self.quantity = quantity
    }

    /// The voids of one purchase taken together: the latest's time and reason, the quantities summed (the whole
    /// purchase when any void was of the whole); nil when there is none.
    public static func combined(_ voids: [PurchaseVoid]) -> PurchaseVoid? {
        guard let latest = voids.max(by: { $0.voidedAt < $1.voidedAt }) else { return nil }
        let whole = voids.contains { $0.quantity == nil }
        return PurchaseVoid(
            voidedAt: latest.voidedAt, reason: latest.reason,
            quantity: whole ? nil : voids.reduce(0) { $0 + ($1.quantity ?? 0) })
    }

    /// `transaction` revoked by this void: wholly (`VOIDED`), or for a part of its quantity (`VOIDED_QUANTITY`, with
    /// `revocationPercentage` in thousandths of a percent, as Apple's prorated refunds); nil when the transaction
    /// already states as much.
    public func revoking(_ transaction: PurchaseTransaction) -> PurchaseTransaction? {
        let percentage = quantity.flatMap { voided -> Int? in
            guard voided < transaction.quantity else { return nil }
            return Int(Int64(max(voided, 0)) * 100_000 / Int64(max(transaction.quantity, 1)))
        }
        if transaction.revocationDate != nil {
            guard let held = transaction.revocationPercentage, (percentage ?? 100_000) > held else { return nil }
        }
        var revoked = transaction
        revoked.revocationDate = voidedAt
        revoked.revocationReason = reason
        revoked.revocationType = percentage == nil ? "VOIDED" : "VOIDED_QUANTITY"
        revoked.revocationPercentage = percentage
        revoked.signedDate = voidedAt
        return revoked
    }
}
