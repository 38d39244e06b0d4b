import Foundation

/// Durable storage of plans, accounts, API keys, apps and usage counters.
///
/// Every method's writes are atomic: all of them or none (``migrate()``: each version). PostgreSQL announces a plan
/// or account change in the change's own transaction, delivered when it commits. Implementations map their constraint violations to ``ServiceError`` codes (`duplicateEmail` for
/// a taken email, `invalidArgument` for a plan or account that does not exist) and every other failure to
/// ``ServiceError/Code/storage`` with the driver's text only in the reason.
public protocol TenancyStore: Sendable {
    /// Applies every migration this version knows and the database has not seen; safe to run concurrently.
    func migrate() async throws

    /// Stores `value` as the master key's check value if none is stored yet, and returns the stored one.
    func claimMasterKeyCheck(_ value: String) async throws -> String

    /// Every plan, by name.
    func plans() async throws -> [Plan]
    /// The plan with this name, if any.
    func plan(named name: String) async throws -> Plan?
    /// Creates the plan or replaces the one with its name.
    func savePlan(_ plan: Plan) async throws

    /// Stores a new account.
    func insertAccount(_ account: Account) async throws
    /// Replaces an existing account's name, plan and enabled flag; returns false when it does not exist.
    func updateAccount(_ account: Account) async throws -> Bool
    /// Every account, oldest first.
    func accounts() async throws -> [Account]
    /// The account with this id, if any.
    func account(id: UUID) async throws -> Account?
    /// The account with this email (lowercase), if any.
    func account(email: String) async throws -> Account?

    /// Stores a new API key.
    func insertAPIKey(_ key: APIKey) async throws
    /// The account's keys, oldest first, revoked ones included.
    func apiKeys(accountID: UUID) async throws -> [APIKey]
    /// The key with this lookup prefix, if any.
    func apiKey(prefix: String) async throws -> APIKey?
    /// Marks the account's key revoked at `date`; returns false when no unrevoked key of the account has this id.
    func revokeAPIKey(id: UUID, accountID: UUID, at date: Date) async throws -> Bool
    /// Records that the key authenticated a request at `date`.
    func recordAPIKeyUse(id: UUID, at date: Date) async throws

    /// Stores a new app with its bundle IDs.
    func insertApp(_ app: App) async throws
    /// Replaces an existing app (bundle IDs included); returns false when it does not exist.
    func updateApp(_ app: App) async throws -> Bool
    /// Deletes an app; returns false when it does not exist.
    func deleteApp(id: UUID) async throws -> Bool
    /// The apps of one account, or of all accounts when `accountID` is nil, oldest first.
    func apps(accountID: UUID?) async throws -> [App]
    /// The app with this token, if any.
    func app(token: String) async throws -> App?

    /// A value that changes whenever a plan or an existing account may have changed, in this process or another
    /// (SQLite: any commit; PostgreSQL: a notification from ``savePlan(_:)`` or ``updateAccount(_:)``), taken without
    /// a round trip to the database so it can be checked on every request; nil while changes cannot be observed, and
    /// then nothing read from the store may be reused.
    func changeMarker() -> Int?

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

extension TenancyStore {
    /// Adds the counts, touching no quota grant (the CLI and tests).
    public func addUsage(_ counts: [UsageKey: Int]) async throws { try await addUsage(counts, grants: nil) }
}
