import Foundation

/// The usage concern of a store: each account's standing, the daily and monthly counters of billable calls, and the
/// quota grants that share a finite quota between servers (docs/billing.md).
///
/// Every method is atomic, as ``TenancyStore``'s are.
public protocol UsageStore: StoreLifecycle {
    /// The account's standing for a call in `month`: enabled flag, current plan and the month's flushed billable
    /// calls, in one read; nil when the account does not exist.
    func standing(accountID: UUID, month: UsageMonth) async throws -> AccountStanding?
    /// Adds the counts to the daily counters and to the accounts' monthly totals, in one transaction: all of them
    /// or none. Keys are written in sorted order, so concurrent writers from several servers cannot deadlock. With
    /// `grants`, the same transaction takes each month's calls out of that server's quota grant and renews it.
    func addUsage(_ counts: [UsageKey: Int], grants: GrantRenewal?) async throws
    /// Grants calls of the claimed month (see ``QuotaClaim``) in one atomic step against every other server's live
    /// grant and the stored calls; returns the calls granted beyond the claim's holding, 0 when the month's quota is
    /// used up. Expired grants of the month are removed.
    func claimQuota(_ claim: QuotaClaim, now: Date) async throws -> Int
    /// Gives up every grant of `server` (it is stopping), so other servers may use what it did not.
    func releaseQuotaGrants(server: UUID) async throws
    /// The daily counters of `month`, optionally of one account and one app, ordered by day, account, app,
    /// endpoint and outcome.
    func usage(month: UsageMonth, accountID: UUID?, appID: UUID?) async throws -> [UsageRecord]
    /// Every account's billable calls in `month`, for accounts that made any.
    func monthlyCalls(month: UsageMonth) async throws -> [UUID: Int]
}

extension UsageStore {
    /// Adds the counts, touching no quota grant (the CLI and tests).
    public func addUsage(_ counts: [UsageKey: Int]) async throws { try await addUsage(counts, grants: nil) }
}
