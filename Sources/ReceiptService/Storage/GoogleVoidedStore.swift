import Foundation

/// Where each app's reading of Google Play's voided purchases stands (docs/google-play.md, "Refunds"): one cursor per
/// app and package, claimed under a lease so that one server at a time reads it, and moved as pages are read.
public protocol GoogleVoidedStore: StoreLifecycle {
    /// Adds a cursor, due at `now`, for each app and package that has none.
    func ensureVoidedCursors(_ packages: [(appID: UUID, packageName: String)], at now: Date) async throws
    /// Up to `limit` cursors due by `now`, each leased until `now + lease`.
    func claimVoidedCursors(dueBy now: Date, lease: Duration, limit: Int) async throws -> [VoidedCursor]
    /// Keeps where a read stopped and when the next one is due.
    func saveVoidedCursor(_ cursor: VoidedCursor, nextRunAt: Date, at now: Date) async throws
    /// Keeps one voided purchase as Google listed it (once per order and voided time, whether or not the ledger holds
    /// the order: money review M8); a void kept already is left as it was.
    func keepVoidedPurchase(appID: UUID, orderID: String, void: PurchaseVoid, at now: Date) async throws
    /// The orders (distinct, at most `limit`) of the app's voided purchases kept since `date`.
    func voidedOrders(appID: UUID, keptSince date: Date, limit: Int) async throws -> [String]
}

/// One app's and package's reading of voided purchases.
public struct VoidedCursor: Sendable, Equatable {
    public var appID: UUID
    public var packageName: String
    /// The oldest voided time (milliseconds since 1970) the next read asks for; nil: Google's default (30 days).
    public var startTime: Int64?
    /// The page a read stopped before, to go on from.
    public var pageToken: String?

    /// Creates a cursor.
    public init(appID: UUID, packageName: String, startTime: Int64?, pageToken: String?) {
        self.appID = appID
        self.packageName = packageName
        self.startTime = startTime
        self.pageToken = pageToken
    }
}
