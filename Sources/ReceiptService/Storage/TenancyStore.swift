import Foundation

/// Durable storage of plans, accounts, API keys and apps: the tenancy concern of a store (docs/architecture.md,
/// "Storage"). A store implements every concern (``DataStore``); a change that must be atomic across concerns is one
/// method of one protocol.
///
/// Every method's writes are atomic: all of them or none (``migrate()``: each version). PostgreSQL announces a plan
/// or account change in the change's own transaction, delivered when it commits. Implementations map their constraint violations to ``ServiceError`` codes (`duplicateEmail` for
/// a taken email, `invalidArgument` for a plan or account that does not exist) and every other failure to
/// ``ServiceError/Code/storage`` with the driver's text only in the reason.
public protocol TenancyStore: StoreLifecycle {
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

    /// Stores a new API key unless its account holds `limit` unrevoked keys already (false then). Inserts under one
    /// account count one after another, on every server, so the limit holds under concurrency.
    func insertAPIKey(_ key: APIKey, limit: Int) async throws -> Bool
    /// The account's keys, oldest first, revoked ones included.
    func apiKeys(accountID: UUID) async throws -> [APIKey]
    /// The key with this lookup prefix, if any.
    func apiKey(prefix: String) async throws -> APIKey?
    /// Marks the account's key revoked at `date`; returns false when no unrevoked key of the account has this id.
    func revokeAPIKey(id: UUID, accountID: UUID, at date: Date) async throws -> Bool
    /// Records that the key authenticated a request at `date`.
    func recordAPIKeyUse(id: UUID, at date: Date) async throws

    /// Stores a new app with its bundle IDs unless its account has `limit` apps already (false then), counted as
    /// ``insertAPIKey(_:limit:)`` counts.
    func insertApp(_ app: App, limit: Int) async throws -> Bool
    /// Replaces an existing app (bundle IDs included); returns false when it does not exist.
    func updateApp(_ app: App) async throws -> Bool
    /// Deletes an app; returns false when it does not exist.
    func deleteApp(id: UUID) async throws -> Bool
    /// The apps of one account, or of all accounts when `accountID` is nil, oldest first.
    func apps(accountID: UUID?) async throws -> [App]
    /// The app with this token, if any.
    func app(token: String) async throws -> App?
    /// The app with this id, if any.
    func app(id: UUID) async throws -> App?
}

/// What every concern of a store shares: its schema and the observation of changes.
public protocol StoreLifecycle: Sendable {
    /// Applies every migration this version knows and the database has not seen; safe to run concurrently.
    func migrate() async throws

    /// A value that changes whenever a plan or an existing account may have changed, in this process or another
    /// (both stores count the changes ``savePlan(_:)``, ``updateAccount(_:)`` and changes to existing ledger rows
    /// announce: SQLite in a change file, PostgreSQL in notifications), taken without a round trip to the database so
    /// it can be checked on every request; nil while changes cannot be observed, and then nothing read from the store
    /// may be reused.
    func changeMarker() -> Int?
}

/// A store with every concern: what the server and the CLI open.
public typealias DataStore = TenancyStore & UsageStore & LedgerStore & SessionStore & AppleFinishStore
    & GoogleAcknowledgementStore & GoogleVoidedStore & GoogleNotificationStore
    & ConsumptionAnswerStore & RenewalExtensionStore
    & NotificationStore & WebhookStore & RetentionStore & ReconciliationStore & ExportStore

extension TenancyStore {
    /// Stores a new API key, whatever the account holds.
    public func insertAPIKey(_ key: APIKey) async throws { _ = try await insertAPIKey(key, limit: .max) }

    /// Stores a new app, whatever the account holds.
    public func insertApp(_ app: App) async throws { _ = try await insertApp(app, limit: .max) }
}
