import Foundation
import Logging
import NIOCore
import NIOPosix
import ReceiptCore
import ReceiptService
import SQLiteNIO

// `stat` for the change marker; its timestamp fields are declared in the C headers CoreFoundation exposes.
#if canImport(Glibc)
    import CoreFoundation
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The ``TenancyStore`` on an SQLite file: the zero set-up default.
///
/// One connection, in WAL mode with a busy timeout so the CLI and a running server can share the file. Every
/// operation holds an in-process lock for its duration, so a transaction never interleaves with another call.
public final class SQLiteStore: TenancyStore {
    let connection: SQLiteConnection
    /// The connection's own thread: SQLite calls block (a busy wait can last seconds), so they must not hold
    /// threads that other connections or NIO need.
    private let threadPool: NIOThreadPool
    private let lock = AsyncLock()
    private let script: MigrationScript
    /// The database's write-ahead log, whose metadata ``changeMarker()`` reads.
    private let walPath: String

    private init(connection: SQLiteConnection, threadPool: NIOThreadPool, script: MigrationScript, path: String) {
        self.connection = connection
        self.threadPool = threadPool
        self.script = script
        self.walPath = path + "-wal"
    }

    /// Opens (creating if needed) the database file at `path`.
    public static func open(path: String, logger: Logger) async throws -> SQLiteStore {
        let script = try MigrationScript(String(decoding: PackageResources.sqlite_schema_sql, as: UTF8.self))
        let isNew = !FileManager.default.fileExists(atPath: path)
        let threadPool = NIOThreadPool(numberOfThreads: 1)
        threadPool.start()
        let connection: SQLiteConnection
        do {
            connection = try await SQLiteConnection.open(
                storage: .file(path: path), threadPool: threadPool, logger: logger,
                on: MultiThreadedEventLoopGroup.singleton.any())
        } catch {
            try? await threadPool.shutdownGracefully()
            throw ServiceError(.storage, "cannot open SQLite database \(path): \(error)")
        }
        let store = SQLiteStore(connection: connection, threadPool: threadPool, script: script, path: path)
        // The file holds key hashes and sealed secrets: readable by its owner only.
        if isNew { _ = chmod(path, 0o600) }
        do {
            try await store.run {
                // The timeout waits out another process's write; WAL lets readers proceed while one writer commits.
                _ = try await connection.query("PRAGMA busy_timeout = 5000")
                _ = try await connection.query("PRAGMA journal_mode = WAL")
                _ = try await connection.query("PRAGMA foreign_keys = ON")
                _ = try await connection.query("PRAGMA synchronous = NORMAL")
            }
        } catch {
            try? await store.close()
            throw error
        }
        return store
    }

    /// Closes the connection and stops its thread.
    public func close() async throws {
        defer { threadPool.shutdownGracefully { _ in } }
        try await connection.close()
    }

    // MARK: Running statements

    private func run<T: Sendable>(_ body: @Sendable () async throws -> T) async throws -> T {
        do {
            return try await lock.withLock(body)
        } catch let error as ServiceError {
            throw error
        } catch {
            throw SQLiteStore.map(error)
        }
    }

    private func transaction<T: Sendable>(_ body: @Sendable () async throws -> T) async throws -> T {
        try await run {
            _ = try await self.connection.query("BEGIN IMMEDIATE")
            do {
                let result = try await body()
                _ = try await self.connection.query("COMMIT")
                return result
            } catch {
                _ = try? await self.connection.query("ROLLBACK")
                throw error
            }
        }
    }

    private func query(_ sql: String, _ binds: [SQLiteData] = []) async throws -> [SQLiteRow] {
        try await connection.query(sql, binds)
    }

    static func map(_ error: any Error) -> ServiceError {
        let message = String(describing: error)
        if message.contains("UNIQUE constraint failed: accounts.email") {
            return ServiceError(.duplicateEmail, "an account with this email already exists")
        }
        if message.contains("FOREIGN KEY constraint failed") {
            return ServiceError(.invalidArgument, "a referenced plan or account does not exist")
        }
        return ServiceError(.storage, "SQLite: \(message)")
    }

    // MARK: TenancyStore

    public func migrate() async throws {
        try await run {
            for statement in self.script.preamble { _ = try await self.query(statement) }
        }
        for migration in script.migrations {
            try await transaction {
                let applied = try await self.query(
                    "SELECT 1 FROM schema_migrations WHERE version = ?", [.integer(migration.version)])
                guard applied.isEmpty else { return }
                for statement in migration.statements { _ = try await self.query(statement) }
                _ = try await self.query(
                    "INSERT INTO schema_migrations (version, description, applied_at) VALUES (?, ?, ?)",
                    [.integer(migration.version), .text(migration.description), .millis(Date())])
            }
        }
    }

    public func claimMasterKeyCheck(_ value: String) async throws -> String {
        try await transaction {
            _ = try await self.query(
                "INSERT INTO settings (name, value) VALUES ('master_key_check', ?) ON CONFLICT (name) DO NOTHING",
                [.text(value)])
            let rows = try await self.query("SELECT value FROM settings WHERE name = 'master_key_check'")
            return try rows.first.require("value").requireText()
        }
    }

    public func plans() async throws -> [Plan] {
        try await run { try await self.query("SELECT * FROM plans ORDER BY name").map(Self.plan) }
    }

    public func plan(named name: String) async throws -> Plan? {
        try await run { try await self.query("SELECT * FROM plans WHERE name = ?", [.text(name)]).first.map(Self.plan) }
    }

    public func savePlan(_ plan: Plan) async throws {
        try await transaction {
            _ = try await self.query(
                """
                INSERT INTO plans (name, monthly_quota, rate_limit_per_second, includes_encrypted_endpoint,
                    monthly_price_cents, overage_price_per_1000_cents) VALUES (?, ?, ?, ?, ?, ?)
                ON CONFLICT (name) DO UPDATE SET monthly_quota = excluded.monthly_quota,
                    rate_limit_per_second = excluded.rate_limit_per_second,
                    includes_encrypted_endpoint = excluded.includes_encrypted_endpoint,
                    monthly_price_cents = excluded.monthly_price_cents,
                    overage_price_per_1000_cents = excluded.overage_price_per_1000_cents
                """,
                [
                    .text(plan.name), plan.monthlyQuota.map { .integer($0) } ?? .null,
                    .integer(plan.rateLimitPerSecond),
                    .bool(plan.includesEncryptedEndpoint), .integer(plan.monthlyPriceCents),
                    .integer(plan.overagePricePer1000Cents),
                ])
        }
    }

    public func insertAccount(_ account: Account) async throws {
        try await transaction {
            _ = try await self.query(
                """
                INSERT INTO accounts (id, name, email, plan_name, enabled, created_at, updated_at)
                VALUES (?, ?, ?, ?, ?, ?, ?)
                """,
                [
                    .uuid(account.id), .text(account.name), .text(account.email), .text(account.planName),
                    .bool(account.isEnabled), .millis(account.createdAt), .millis(account.updatedAt),
                ])
        }
    }

    public func updateAccount(_ account: Account) async throws -> Bool {
        try await transaction {
            let rows = try await self.query(
                "UPDATE accounts SET name = ?, plan_name = ?, enabled = ?, updated_at = ? WHERE id = ? RETURNING id",
                [
                    .text(account.name), .text(account.planName), .bool(account.isEnabled), .millis(account.updatedAt),
                    .uuid(account.id),
                ])
            return !rows.isEmpty
        }
    }

    public func accounts() async throws -> [Account] {
        try await run { try await self.query("SELECT * FROM accounts ORDER BY created_at, id").map(Self.account) }
    }

    public func account(id: UUID) async throws -> Account? {
        try await run {
            try await self.query("SELECT * FROM accounts WHERE id = ?", [.uuid(id)]).first.map(Self.account)
        }
    }

    public func account(email: String) async throws -> Account? {
        try await run {
            try await self.query("SELECT * FROM accounts WHERE email = ?", [.text(email)]).first.map(Self.account)
        }
    }

    public func insertAPIKey(_ key: APIKey) async throws {
        try await transaction {
            _ = try await self.query(
                """
                INSERT INTO api_keys (id, account_id, prefix, key_hash, label, created_at, last_used_at, revoked_at)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                """,
                [
                    .uuid(key.id), .uuid(key.accountID), .text(key.prefix), .bytes(key.hash),
                    key.label.map { .text($0) } ?? .null, .millis(key.createdAt), .millis(key.lastUsedAt),
                    .millis(key.revokedAt),
                ])
        }
    }

    public func apiKeys(accountID: UUID) async throws -> [APIKey] {
        try await run {
            try await self.query(
                "SELECT * FROM api_keys WHERE account_id = ? ORDER BY created_at, id", [.uuid(accountID)]
            ).map(Self.apiKey)
        }
    }

    public func apiKey(prefix: String) async throws -> APIKey? {
        try await run {
            try await self.query("SELECT * FROM api_keys WHERE prefix = ?", [.text(prefix)]).first.map(Self.apiKey)
        }
    }

    public func revokeAPIKey(id: UUID, accountID: UUID, at date: Date) async throws -> Bool {
        try await transaction {
            let rows = try await self.query(
                """
                UPDATE api_keys SET revoked_at = ? WHERE id = ? AND account_id = ? AND revoked_at IS NULL
                RETURNING id
                """, [.millis(date), .uuid(id), .uuid(accountID)])
            return !rows.isEmpty
        }
    }

    public func recordAPIKeyUse(id: UUID, at date: Date) async throws {
        try await run {
            _ = try await self.query("UPDATE api_keys SET last_used_at = ? WHERE id = ?", [.millis(date), .uuid(id)])
        }
    }

    public func insertApp(_ app: App) async throws {
        try await transaction {
            _ = try await self.query(
                """
                INSERT INTO apps (id, account_id, token, name, allowed_environments, verification_mode, shared_secret,
                    apple_issuer_id, apple_key_id, apple_private_key, result_cipher, result_key, allows_test_data,
                    enabled, created_at, updated_at)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """,
                [.uuid(app.id), .uuid(app.accountID), .text(app.token)] + Self.appColumns(app)
                    + [.millis(app.createdAt), .millis(app.updatedAt)])
            try await self.insertBundleIDs(of: app)
        }
    }

    public func updateApp(_ app: App) async throws -> Bool {
        try await transaction {
            let rows = try await self.query(
                """
                UPDATE apps SET name = ?, allowed_environments = ?, verification_mode = ?, shared_secret = ?,
                    apple_issuer_id = ?, apple_key_id = ?, apple_private_key = ?, result_cipher = ?, result_key = ?,
                    allows_test_data = ?, enabled = ?, token = ?, updated_at = ?
                WHERE id = ? RETURNING id
                """,
                Self.appColumns(app) + [.text(app.token), .millis(app.updatedAt), .uuid(app.id)])
            guard !rows.isEmpty else { return false }
            _ = try await self.query("DELETE FROM app_bundle_ids WHERE app_id = ?", [.uuid(app.id)])
            try await self.insertBundleIDs(of: app)
            return true
        }
    }

    public func deleteApp(id: UUID) async throws -> Bool {
        try await transaction {
            !(try await self.query("DELETE FROM apps WHERE id = ? RETURNING id", [.uuid(id)]).isEmpty)
        }
    }

    public func apps(accountID: UUID?) async throws -> [App] {
        try await run {
            let rows =
                if let accountID {
                    try await self.query(
                        "SELECT \(Self.appColumns) FROM apps WHERE account_id = ? ORDER BY created_at, id",
                        [.uuid(accountID)])
                } else {
                    try await self.query("SELECT \(Self.appColumns) FROM apps ORDER BY created_at, id")
                }
            return try rows.map(Self.app)
        }
    }

    public func app(token: String) async throws -> App? {
        try await run {
            guard
                let row = try await self.query(
                    "SELECT \(Self.appColumns) FROM apps WHERE token = ?", [.text(token)]
                ).first
            else { return nil }
            return try Self.app(row)
        }
    }

    /// The size, times and inode of the write-ahead log: in WAL mode every commit, from this process or another (the
    /// CLI), appends to the log, or rewrites it from the start after a checkpoint; either changes its size or its
    /// modification time. One `stat`, no query; nil when the log cannot be read (nothing is then reused).
    public func changeMarker() -> Int? {
        var info = stat()
        guard stat(walPath, &info) == 0 else { return nil }
        var hasher = Hasher()
        hasher.combine(info.st_ino)
        hasher.combine(info.st_size)
        #if os(Linux)
            hasher.combine(info.st_mtim.tv_sec)
            hasher.combine(info.st_mtim.tv_nsec)
            hasher.combine(info.st_ctim.tv_nsec)
        #else
            hasher.combine(info.st_mtimespec.tv_sec)
            hasher.combine(info.st_mtimespec.tv_nsec)
            hasher.combine(info.st_ctimespec.tv_nsec)
        #endif
        return hasher.finalize()
    }

    public func standing(accountID: UUID, month: UsageMonth) async throws -> AccountStanding? {
        try await run {
            let rows = try await self.query(
                """
                SELECT a.enabled AS account_enabled, p.*, COALESCE(m.calls, 0) AS month_calls
                FROM accounts a JOIN plans p ON p.name = a.plan_name
                LEFT JOIN usage_monthly m ON m.account_id = a.id AND m.month = ?
                WHERE a.id = ?
                """, [.text(month.description), .uuid(accountID)])
            guard let row = rows.first else { return nil }
            return AccountStanding(
                isEnabled: try row.require("account_enabled").requireBool(), plan: try Self.plan(row),
                monthCalls: try row.require("month_calls").requireInt())
        }
    }

    public func addUsage(_ counts: [UsageKey: Int], grants: GrantRenewal?) async throws {
        guard !counts.isEmpty else { return }
        try await transaction {
            let batch = UsageBatch(counts)
            for (key, calls) in batch.daily {
                _ = try await self.query(
                    """
                    INSERT INTO usage_daily (account_id, day, app_id, endpoint, outcome, calls) VALUES (?, ?, ?, ?, ?, ?)
                    ON CONFLICT (account_id, day, app_id, endpoint, outcome)
                    DO UPDATE SET calls = usage_daily.calls + excluded.calls
                    """,
                    [
                        .uuid(key.accountID), .text(key.day.description), .uuid(key.appID),
                        .text(key.endpoint.rawValue), .text(key.outcome.rawValue), .integer(calls),
                    ])
            }
            for (key, calls) in batch.monthly {
                _ = try await self.query(
                    """
                    INSERT INTO usage_monthly (account_id, month, calls) VALUES (?, ?, ?)
                    ON CONFLICT (account_id, month) DO UPDATE SET calls = usage_monthly.calls + excluded.calls
                    """, [.uuid(key.accountID), .text(key.month.description), .integer(calls)])
                if let grants {
                    // The stored calls take the place of the grant that covered them.
                    _ = try await self.query(
                        """
                        UPDATE quota_grants SET granted = MAX(granted - ?, 0), flushed = flushed + ?, expires_at = ?
                        WHERE account_id = ? AND month = ? AND server_id = ?
                        """,
                        [
                            .integer(calls), .integer(calls), .millis(grants.expiresAt), .uuid(key.accountID),
                            .text(key.month.description), .uuid(grants.server),
                        ])
                }
            }
        }
    }

    public func claimQuota(_ claim: QuotaClaim, now: Date) async throws -> Int {
        let account = SQLiteData.uuid(claim.accountMonth.accountID)
        let month = SQLiteData.text(claim.accountMonth.month.description)
        // BEGIN IMMEDIATE: one writer at a time across processes, so the read and the grant are one step.
        return try await transaction {
            let rows = try await self.query(
                """
                SELECT COALESCE((SELECT calls FROM usage_monthly WHERE account_id = ? AND month = ?), 0)
                    + COALESCE((SELECT SUM(granted) FROM quota_grants WHERE account_id = ? AND month = ?
                        AND server_id <> ? AND expires_at > ?), 0) AS used,
                    (SELECT flushed FROM quota_grants WHERE account_id = ? AND month = ? AND server_id = ?) AS flushed
                """,
                [
                    account, month, account, month, .uuid(claim.server), .millis(now), account, month,
                    .uuid(claim.server),
                ])
            let used = try rows.first?.require("used").requireInt() ?? 0
            let holding = claim.holding(storedByServer: rows.first?.column("flushed")?.integer.map { Int($0) })
            let granted = claim.grant(available: claim.quota - used - holding)
            _ = try await self.query(
                """
                INSERT INTO quota_grants (account_id, month, server_id, granted, flushed, expires_at)
                VALUES (?, ?, ?, ?, ?, ?)
                ON CONFLICT (account_id, month, server_id)
                DO UPDATE SET granted = excluded.granted, expires_at = excluded.expires_at
                """,
                [
                    account, month, .uuid(claim.server), .integer(holding + granted), .integer(claim.flushed),
                    .millis(claim.expiresAt),
                ])
            _ = try await self.query(
                "DELETE FROM quota_grants WHERE account_id = ? AND month = ? AND expires_at <= ?",
                [account, month, .millis(now)])
            return granted
        }
    }

    public func releaseQuotaGrants(server: UUID) async throws {
        try await run { _ = try await self.query("DELETE FROM quota_grants WHERE server_id = ?", [.uuid(server)]) }
    }

    public func usage(month: UsageMonth, accountID: UUID?, appID: UUID?) async throws -> [UsageRecord] {
        try await run {
            var sql = "SELECT * FROM usage_daily WHERE day >= ? AND day < ?"
            var binds: [SQLiteData] = [.text(month.firstDay.description), .text(month.next.firstDay.description)]
            if let accountID {
                sql += " AND account_id = ?"
                binds.append(.uuid(accountID))
            }
            if let appID {
                sql += " AND app_id = ?"
                binds.append(.uuid(appID))
            }
            sql += " ORDER BY day, account_id, app_id, endpoint, outcome"
            return try await self.query(sql, binds).map(Self.usageRecord)
        }
    }

    public func monthlyCalls(month: UsageMonth) async throws -> [UUID: Int] {
        try await run {
            var calls: [UUID: Int] = [:]
            for row in try await self.query(
                "SELECT account_id, calls FROM usage_monthly WHERE month = ?", [.text(month.description)])
            {
                calls[try row.require("account_id").requireUUID()] = try row.require("calls").requireInt()
            }
            return calls
        }
    }

    // MARK: Rows

    private func insertBundleIDs(of app: App) async throws {
        for (position, bundleID) in app.bundleIDs.enumerated() {
            _ = try await query(
                "INSERT INTO app_bundle_ids (app_id, position, bundle_id) VALUES (?, ?, ?)",
                [.uuid(app.id), .integer(position), .text(bundleID.value)])
        }
    }

    /// The columns shared by insert and update, in the order both statements list them.
    private static func appColumns(_ app: App) -> [SQLiteData] {
        [
            .text(app.name), .text(StoredForm.environments(app.allowedEnvironments)),
            .text(app.verificationMode.rawValue),
            .bytes(app.sharedSecret?.bytes), app.appStoreServerCredentials.map { .text($0.issuerID) } ?? .null,
            app.appStoreServerCredentials.map { .text($0.keyID) } ?? .null,
            .bytes(app.appStoreServerCredentials?.privateKey.bytes), .text(app.resultCipher.rawValue),
            .bytes(app.resultKey.bytes), .bool(app.allowsTestData), .bool(app.isEnabled),
        ]
    }

    /// An app's columns and its bundle IDs in position order, in one query (not one more per app).
    private static let appColumns =
        "apps.*, (SELECT group_concat(bundle_id, ',' ORDER BY position) FROM app_bundle_ids WHERE app_id = apps.id) AS bundle_ids"

    private static func app(_ row: SQLiteRow) throws -> App {
        let id = try row.require("id").requireUUID()
        let bundleIDs = try StoredForm.bundleIDs(row.column("bundle_ids")?.string)
        var credentials: AppStoreServerCredentials?
        if let issuer = row.column("apple_issuer_id")?.string, let keyID = row.column("apple_key_id")?.string,
            let key = row.column("apple_private_key")?.bytes
        {
            credentials = AppStoreServerCredentials(
                issuerID: issuer, keyID: keyID, privateKey: SealedSecret(bytes: key))
        }
        return App(
            id: id, accountID: try row.require("account_id").requireUUID(),
            token: try row.require("token").requireText(),
            name: try row.require("name").requireText(), bundleIDs: bundleIDs,
            allowedEnvironments: try StoredForm.environments(try row.require("allowed_environments").requireText()),
            verificationMode: try StoredForm.enumValue(try row.require("verification_mode").requireText()),
            sharedSecret: row.column("shared_secret")?.bytes.map(SealedSecret.init(bytes:)),
            appStoreServerCredentials: credentials,
            resultCipher: try StoredForm.enumValue(try row.require("result_cipher").requireText()),
            resultKey: SealedSecret(bytes: try row.require("result_key").requireBytes()),
            allowsTestData: try row.require("allows_test_data").requireBool(),
            isEnabled: try row.require("enabled").requireBool(),
            createdAt: try row.require("created_at").requireDate(),
            updatedAt: try row.require("updated_at").requireDate())
    }

    private static func plan(_ row: SQLiteRow) throws -> Plan {
        Plan(
            name: try row.require("name").requireText(),
            monthlyQuota: row.column("monthly_quota")?.integer.map { Int($0) },
            rateLimitPerSecond: try row.require("rate_limit_per_second").requireInt(),
            includesEncryptedEndpoint: try row.require("includes_encrypted_endpoint").requireBool(),
            monthlyPriceCents: try row.require("monthly_price_cents").requireInt(),
            overagePricePer1000Cents: try row.require("overage_price_per_1000_cents").requireInt())
    }

    private static func usageRecord(_ row: SQLiteRow) throws -> UsageRecord {
        UsageRecord(
            key: UsageKey(
                accountID: try row.require("account_id").requireUUID(), appID: try row.require("app_id").requireUUID(),
                endpoint: try StoredForm.enumValue(try row.require("endpoint").requireText()),
                outcome: try StoredForm.enumValue(try row.require("outcome").requireText()),
                day: try StoredForm.day(try row.require("day").requireText())),
            calls: try row.require("calls").requireInt())
    }

    private static func account(_ row: SQLiteRow) throws -> Account {
        Account(
            id: try row.require("id").requireUUID(), name: try row.require("name").requireText(),
            email: try row.require("email").requireText(), planName: try row.require("plan_name").requireText(),
            isEnabled: try row.require("enabled").requireBool(), createdAt: try row.require("created_at").requireDate(),
            updatedAt: try row.require("updated_at").requireDate())
    }

    private static func apiKey(_ row: SQLiteRow) throws -> APIKey {
        APIKey(
            id: try row.require("id").requireUUID(), accountID: try row.require("account_id").requireUUID(),
            prefix: try row.require("prefix").requireText(), hash: try row.require("key_hash").requireBytes(),
            label: row.column("label")?.string, createdAt: try row.require("created_at").requireDate(),
            lastUsedAt: row.column("last_used_at")?.integer.map { StoredForm.date(millis: Int($0)) },
            revokedAt: row.column("revoked_at")?.integer.map { StoredForm.date(millis: Int($0)) })
    }
}

extension SQLiteData {
    static func uuid(_ id: UUID) -> SQLiteData { .text(id.uuidString.lowercased()) }
    static func bool(_ value: Bool) -> SQLiteData { .integer(value ? 1 : 0) }
    static func millis(_ date: Date?) -> SQLiteData { date.map { .integer(StoredForm.millis($0)) } ?? .null }
    static func bytes(_ bytes: [UInt8]?) -> SQLiteData { bytes.map { .blob(ByteBuffer(bytes: $0)) } ?? .null }

    var bytes: [UInt8]? { blob.map { Array($0.readableBytesView) } }

    func requireText() throws -> String {
        guard case .text(let text) = self else { throw StoredForm.corrupt("expected text, found \(self)") }
        return text
    }

    func requireInt() throws -> Int {
        guard case .integer(let value) = self else { throw StoredForm.corrupt("expected an integer, found \(self)") }
        return Int(value)
    }

    func requireBool() throws -> Bool { try requireInt() != 0 }
    func requireDate() throws -> Date { StoredForm.date(millis: try requireInt()) }

    func requireBytes() throws -> [UInt8] {
        guard let bytes else { throw StoredForm.corrupt("expected a blob, found \(self)") }
        return bytes
    }

    func requireUUID() throws -> UUID {
        guard let id = UUID(uuidString: try requireText()) else { throw StoredForm.corrupt("expected a UUID") }
        return id
    }
}

extension Optional where Wrapped == SQLiteRow {
    func require(_ column: String) throws -> SQLiteData {
        guard let self else { throw StoredForm.corrupt("expected a row") }
        return try self.require(column)
    }
}

extension SQLiteRow {
    func require(_ column: String) throws -> SQLiteData {
        guard let value = self.column(column), !value.isNull else {
            throw StoredForm.corrupt("column \(column) is missing or null")
        }
        return value
    }
}
