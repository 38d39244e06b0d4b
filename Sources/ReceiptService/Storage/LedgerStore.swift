import Foundation
import ReceiptCore

/// The ledger concern of a store: every verified transaction once per app and environment, the claims of original
/// transactions by the app's users, and deliveries (docs/api.md, "Transactions").
///
/// Every method is atomic, as ``TenancyStore``'s are. Exactly once: a transaction is inserted if absent under the
/// table's primary key, never read first and written after, so of any number of concurrent recordings (on one server
/// or many on one database) exactly one reports it new. A change to a claim, a revocation or a delivery of an
/// existing transaction is announced as ``StoreLifecycle/changeMarker()`` describes, so every server's in-memory view
/// of the ledger sees it on its next call.
public protocol LedgerStore: StoreLifecycle {
    /// Records one input's transactions: claims each original transaction for the recording's user if it has no
    /// claimant (or moves another user's claim, with ``LedgerRecording/movesClaims``), inserts each transaction not yet
    /// in the ledger, records a revocation the ledger did not know, and updates `last_seen_at` of the others. Returns
    /// one result per transaction, in the recording's order.
    func record(_ recording: LedgerRecording) async throws -> [LedgerRecorded]
    /// Marks the app's transactions with these ids (in `environment`, or in every one when nil) delivered at `date`
    /// where not yet delivered and not revoked, and with `finishingWithApple` their Apple finish pending, due at once
    /// (``AppleFinishStore``), in the same statement (Xcode's test transactions excepted: Apple's servers never saw
    /// them); returns every one of them found, delivered then or before (a revoked one as it is).
    func confirmDelivery(
        appID: UUID, environment: StoreEnvironment?, transactionIDs: [String], at date: Date,
        finishingWithApple: Bool
    ) async throws -> [LedgerEntry]
    /// Saves `app` (as ``TenancyStore/updateApp(_:)``: false for an unknown app) and, in the same transaction, marks
    /// delivered at `date` every transaction of it that an answer in `confirm` mode offered and the backend never
    /// confirmed (offered, not delivered, not revoked), a Google Play purchase's acknowledgement then due. Called when
    /// the app switches to `once`, whose next answer would otherwise deliver them again (money review M3).
    func updateApp(_ app: App, settlingOffersAt date: Date) async throws -> Bool
    /// One page of the app's ledger in its order (first seen, environment, transaction id).
    func ledgerEntries(_ query: LedgerQuery) async throws -> [LedgerEntry]
    /// Gives the original transaction's claim (in every environment it was seen) to `user`, or releases it when
    /// `user` is nil; returns false when the app's ledger holds no such original transaction.
    func setClaim(appID: UUID, originalTransactionID: String, user: String?, at date: Date) async throws -> Bool
    /// A value that changes whenever an existing ledger row's claim, revocation or delivery may have changed, in this
    /// process or another, once that change is committed; taken without a round trip, for every request. New rows and
    /// first claims do not move it (a server that does not know a row asks the store). Nil while changes cannot be
    /// observed: nothing read from the ledger may then be reused.
    func ledgerChangeMarker() -> Int?
    /// The users whose entitlements the same facts give otherwise at or before `now` (an expiry, a grace period's
    /// end: ``CustomerChanges``), soonest first, at most `limit`.
    func dueCustomers(dueBy now: Date, limit: Int) async throws -> [DueCustomer]
    /// Recomputes the entitlements of `users` of the app in `environment` at `now` under `catalog`, in one transaction
    /// that keeps what it told and inserts a `customer.entitlements_changed` event for each user whose entitlements
    /// changed (a catalog that grants none leaves them due no more); returns the events.
    func tellCustomers(
        appID: UUID, environment: StoreEnvironment, users: [String], catalog: [CatalogProduct]?, at now: Date
    ) async throws -> [WebhookEvent]
}

/// A user whose entitlements are due to be told again (``LedgerStore/dueCustomers(dueBy:limit:)``).
public struct DueCustomer: Sendable, Hashable {
    /// The app.
    public var appID: UUID
    /// The environment.
    public var environment: StoreEnvironment
    /// The app's user.
    public var user: String

    /// Creates one.
    public init(appID: UUID, environment: StoreEnvironment, user: String) {
        self.appID = appID
        self.environment = environment
        self.user = user
    }
}
