import Foundation
import Logging
import PostgresNIO
import ReceiptCore
import ReceiptService
import ServiceLifecycle
import Synchronization

/// The ``TenancyStore`` on PostgreSQL: pooled, async, safe with many servers on one database.
///
/// The pool runs as a ServiceLifecycle service: call ``run()`` in a long-running task (the server's service group,
/// or ``StoreLocation/withStore(logger:_:)`` for one-off commands) before using the store.
public final class PostgresStore: TenancyStore, Service {
    let client: PostgresClient
    private let logger: Logger
    private let script: MigrationScript

    /// Whether ``run()`` keeps a connection listening for changes (a server does; a one-off CLI command need not).
    private let listensForChanges: Bool

    /// Creates a store for the database at `url` (`postgres://user:password@host:port/database?sslmode=…`);
    /// `listensForChanges` makes ``changeMarker()`` work, at the cost of one pooled connection.
    public init(url: String, logger: Logger, listensForChanges: Bool = false) throws {
        self.listensForChanges = listensForChanges
        self.client = PostgresClient(configuration: try PostgresURL.configuration(from: url), backgroundLogger: logger)
        self.logger = logger
        self.script = try MigrationScript(String(decoding: PackageResources.schema_sql, as: UTF8.self))
    }

    /// Runs the connection pool until the task is cancelled or a graceful shutdown begins; with `listensForChanges`,
    /// keeps one of its connections listening on ``changeChannel``.
    public func run() async throws {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.client.run() }
            if listensForChanges { group.addTask { await self.listenForChanges() } }
            // The pool ends on cancellation or graceful shutdown; the listener goes with it.
            await group.next()
            group.cancelAll()
        }
    }

    // MARK: Change notifications

    /// The channel plan and account changes are announced on (`pg_notify` in the change's transaction). New
    /// accounts and changes to keys and apps are not announced: servers see keys and apps when their authentication
    /// cache entries expire.
    static let changeChannel = "receiptverify_changes"

    /// Notifications received, and whether a connection is listening now.
    private let changes = Mutex<(count: Int, listening: Bool)>((0, false))

    /// Counts notifications on ``changeChannel`` while a connection listens; nil (reuse nothing) while none does,
    /// so a lost connection can never leave a server trusting a stale cache.
    public func changeMarker() -> Int? {
        changes.withLock { $0.listening ? $0.count : nil }
    }

    private func listenForChanges() async {
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            do {
                try await client.withConnection { connection in
                    try await connection.listen(on: Self.changeChannel) { notifications in
                        self.changes.withLock { $0 = ($0.count + 1, true) }
                        for try await _ in notifications { self.changes.withLock { $0.count += 1 } }
                    }
                }
            } catch {
                if !Task.isCancelled { logger.warning("not listening for changes", metadata: ["error": "\(error)"]) }
            }
            changes.withLock { $0 = ($0.count + 1, false) }
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: .seconds(1)) }
        }
    }

    /// Announces a change to listening servers in the change's own transaction: PostgreSQL delivers the notification
    /// when the transaction commits, so a write is announced exactly when it is committed, and the call cannot fail
    /// after its write committed.
    private func announceChange(on connection: PostgresConnection) async throws {
        try await rows("SELECT pg_notify(\(Self.changeChannel), '')", on: connection)
    }

    // MARK: Running statements

    private func run<T>(_ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let error as ServiceError {
            throw error
        } catch {
            throw Self.map(error)
        }
    }

    private func transaction<T: Sendable>(_ body: (PostgresConnection) async throws -> T) async throws -> T {
        try await run {
            try await client.withTransaction(logger: logger) { connection in try await body(connection) }
        }
    }

    @discardableResult
    private func rows(_ query: PostgresQuery, on connection: PostgresConnection? = nil) async throws
        -> [PostgresRandomAccessRow]
    {
        let sequence =
            if let connection {
                try await connection.query(query, logger: logger)
            } else {
                try await client.query(query, logger: logger)
            }
        var rows: [PostgresRandomAccessRow] = []
        for try await row in sequence { rows.append(row.makeRandomAccess()) }
        return rows
    }

    static func map(_ error: any Error) -> ServiceError {
        if let error = error as? PSQLError, let state = error.serverInfo?[.sqlState] {
            let constraint = error.serverInfo?[.constraintName] ?? ""
            switch (state, constraint) {
            case ("23505", "accounts_email_key"):
                return ServiceError(.duplicateEmail, "an account with this email already exists")
            case ("23503", _):
                return ServiceError(.invalidArgument, "a referenced plan or account does not exist")
            default:
                let message = error.serverInfo?[.message] ?? ""
                return ServiceError(.storage, "PostgreSQL \(state): \(message)")
            }
        }
        return ServiceError(.storage, "PostgreSQL: \(String(reflecting: error))")
    }

    /// A key for `pg_advisory_xact_lock` that serializes migrations across servers.
    private static let migrationLockKey = 0x5256_4D49_4752  // "RVMIGR"

    // MARK: TenancyStore

    public func migrate() async throws {
        try await transaction { connection in
            try await self.rows("SELECT pg_advisory_xact_lock(\(Self.migrationLockKey))", on: connection)
            for statement in self.script.preamble {
                try await self.rows(PostgresQuery(unsafeSQL: statement), on: connection)
            }
        }
        for migration in script.migrations {
            try await transaction { connection in
                try await self.rows("SELECT pg_advisory_xact_lock(\(Self.migrationLockKey))", on: connection)
                let applied = try await self.rows(
                    "SELECT 1 FROM schema_migrations WHERE version = \(migration.version)", on: connection)
                guard applied.isEmpty else { return }
                for statement in migration.statements {
                    try await self.rows(PostgresQuery(unsafeSQL: statement), on: connection)
                }
                try await self.rows(
                    "INSERT INTO schema_migrations (version, description) VALUES (\(migration.version), \(migration.description))",
                    on: connection)
            }
        }
    }

    public func claimMasterKeyCheck(_ value: String) async throws -> String {
        try await transaction { connection in
            try await self.rows(
                """
                INSERT INTO settings (name, value) VALUES ('master_key_check', \(value)) ON CONFLICT (name) DO NOTHING
                """, on: connection)
            let rows = try await self.rows("SELECT value FROM settings WHERE name = 'master_key_check'", on: connection)
            guard let row = rows.first else { throw StoredForm.corrupt("master key check missing") }
            return try row["value"].decode(String.self)
        }
    }

    public func plans() async throws -> [Plan] {
        try await run { try await rows("SELECT * FROM plans ORDER BY name").map(Self.plan) }
    }

    public func plan(named name: String) async throws -> Plan? {
        try await run { try await rows("SELECT * FROM plans WHERE name = \(name)").first.map(Self.plan) }
    }

    public func savePlan(_ plan: Plan) async throws {
        try await transaction { connection in
            try await self.rows(
                """
                INSERT INTO plans (name, monthly_quota, rate_limit_per_second, includes_encrypted_endpoint,
                    monthly_price_cents, overage_price_per_1000_cents)
                VALUES (\(plan.name), \(plan.monthlyQuota), \(plan.rateLimitPerSecond),
                    \(plan.includesEncryptedEndpoint), \(plan.monthlyPriceCents), \(plan.overagePricePer1000Cents))
                ON CONFLICT (name) DO UPDATE SET monthly_quota = excluded.monthly_quota,
                    rate_limit_per_second = excluded.rate_limit_per_second,
                    includes_encrypted_endpoint = excluded.includes_encrypted_endpoint,
                    monthly_price_cents = excluded.monthly_price_cents,
                    overage_price_per_1000_cents = excluded.overage_price_per_1000_cents
                """, on: connection)
            try await self.announceChange(on: connection)
        }
    }

    public func insertAccount(_ account: Account) async throws {
        try await run {
            try await rows(
                """
                INSERT INTO accounts (id, name, email, plan_name, enabled, created_at, updated_at)
                VALUES (\(account.id), \(account.name), \(account.email), \(account.planName), \(account.isEnabled),
                    \(account.createdAt), \(account.updatedAt))
                """)
        }
    }

    public func updateAccount(_ account: Account) async throws -> Bool {
        try await transaction { connection in
            let updated =
                !(try await self.rows(
                    """
                    UPDATE accounts SET name = \(account.name), plan_name = \(account.planName),
                        enabled = \(account.isEnabled), updated_at = \(account.updatedAt)
                    WHERE id = \(account.id) RETURNING id
                    """, on: connection
                ).isEmpty)
            try await self.announceChange(on: connection)
            return updated
        }
    }

    public func accounts() async throws -> [Account] {
        try await run { try await rows("SELECT * FROM accounts ORDER BY created_at, id").map(Self.account) }
    }

    public func account(id: UUID) async throws -> Account? {
        try await run { try await rows("SELECT * FROM accounts WHERE id = \(id)").first.map(Self.account) }
    }

    public func account(email: String) async throws -> Account? {
        try await run { try await rows("SELECT * FROM accounts WHERE email = \(email)").first.map(Self.account) }
    }

    public func insertAPIKey(_ key: APIKey) async throws {
        try await run {
            try await rows(
                """
                INSERT INTO api_keys (id, account_id, prefix, key_hash, label, created_at, last_used_at, revoked_at)
                VALUES (\(key.id), \(key.accountID), \(key.prefix), \(Data(key.hash)), \(key.label), \(key.createdAt),
                    \(key.lastUsedAt), \(key.revokedAt))
                """)
        }
    }

    public func apiKeys(accountID: UUID) async throws -> [APIKey] {
        try await run {
            try await rows("SELECT * FROM api_keys WHERE account_id = \(accountID) ORDER BY created_at, id").map(
                Self.apiKey)
        }
    }

    public func apiKey(prefix: String) async throws -> APIKey? {
        try await run { try await rows("SELECT * FROM api_keys WHERE prefix = \(prefix)").first.map(Self.apiKey) }
    }

    public func revokeAPIKey(id: UUID, accountID: UUID, at date: Date) async throws -> Bool {
        try await run {
            !(try await rows(
                """
                UPDATE api_keys SET revoked_at = \(date)
                WHERE id = \(id) AND account_id = \(accountID) AND revoked_at IS NULL RETURNING id
                """
            ).isEmpty)
        }
    }

    public func recordAPIKeyUse(id: UUID, at date: Date) async throws {
        try await run { try await rows("UPDATE api_keys SET last_used_at = \(date) WHERE id = \(id)") }
    }

    public func insertApp(_ app: App) async throws {
        let columns = StoredApp(app)
        try await transaction { connection in
            try await self.rows(
                """
                INSERT INTO apps (id, account_id, token, name, allowed_environments, verification_mode, shared_secret,
                    apple_issuer_id, apple_key_id, apple_private_key, result_cipher, result_key, allows_test_data,
                    enabled, created_at, updated_at)
                VALUES (\(app.id), \(app.accountID), \(app.token), \(app.name), \(columns.environments),
                    \(app.verificationMode.rawValue), \(columns.sharedSecret), \(columns.issuerID), \(columns.keyID),
                    \(columns.privateKey), \(app.resultCipher.rawValue), \(columns.resultKey), \(app.allowsTestData),
                    \(app.isEnabled), \(app.createdAt), \(app.updatedAt))
                """, on: connection)
            try await self.insertBundleIDs(of: app, on: connection)
        }
    }

    public func updateApp(_ app: App) async throws -> Bool {
        let columns = StoredApp(app)
        return try await transaction { connection in
            let updated = try await self.rows(
                """
                UPDATE apps SET token = \(app.token), name = \(app.name), allowed_environments = \(columns.environments),
                    verification_mode = \(app.verificationMode.rawValue), shared_secret = \(columns.sharedSecret),
                    apple_issuer_id = \(columns.issuerID), apple_key_id = \(columns.keyID),
                    apple_private_key = \(columns.privateKey), result_cipher = \(app.resultCipher.rawValue),
                    result_key = \(columns.resultKey), allows_test_data = \(app.allowsTestData),
                    enabled = \(app.isEnabled), updated_at = \(app.updatedAt)
                WHERE id = \(app.id) RETURNING id
                """, on: connection)
            guard !updated.isEmpty else { return false }
            try await self.rows("DELETE FROM app_bundle_ids WHERE app_id = \(app.id)", on: connection)
            try await self.insertBundleIDs(of: app, on: connection)
            return true
        }
    }

    public func deleteApp(id: UUID) async throws -> Bool {
        try await run { !(try await rows("DELETE FROM apps WHERE id = \(id) RETURNING id").isEmpty) }
    }

    public func apps(accountID: UUID?) async throws -> [App] {
        try await run {
            let appRows =
                if let accountID {
                    try await rows(
                        "SELECT \(unescaped: Self.appColumns) FROM apps WHERE account_id = \(accountID) ORDER BY created_at, id"
                    )
                } else {
                    try await rows("SELECT \(unescaped: Self.appColumns) FROM apps ORDER BY created_at, id")
                }
            return try appRows.map(Self.app)
        }
    }

    public func app(token: String) async throws -> App? {
        try await run {
            guard
                let row = try await rows("SELECT \(unescaped: Self.appColumns) FROM apps WHERE token = \(token)").first
            else { return nil }
            return try Self.app(row)
        }
    }

    public func standing(accountID: UUID, month: UsageMonth) async throws -> AccountStanding? {
        try await run {
            guard
                let row = try await rows(
                    """
                    SELECT a.enabled AS account_enabled, p.*, COALESCE(m.calls, 0) AS month_calls
                    FROM accounts a JOIN plans p ON p.name = a.plan_name
                    LEFT JOIN usage_monthly m ON m.account_id = a.id AND m.month = \(month.description)
                    WHERE a.id = \(accountID)
                    """
                ).first
            else { return nil }
            return AccountStanding(
                isEnabled: try row["account_enabled"].decode(Bool.self), plan: try Self.plan(row),
                monthCalls: try row["month_calls"].decode(Int.self))
        }
    }

    public func addUsage(_ counts: [UsageKey: Int], grants: GrantRenewal?) async throws {
        let batch = UsageBatch(counts)
        guard !batch.daily.isEmpty else { return }
        try await transaction { connection in
            for (key, calls) in batch.daily {
                try await self.rows(
                    """
                    INSERT INTO usage_daily (account_id, day, app_id, endpoint, outcome, calls)
                    VALUES (\(key.accountID), \(key.day.description), \(key.appID), \(key.endpoint.rawValue),
                        \(key.outcome.rawValue), \(calls))
                    ON CONFLICT (account_id, day, app_id, endpoint, outcome)
                    DO UPDATE SET calls = usage_daily.calls + excluded.calls
                    """, on: connection)
            }
            for (key, calls) in batch.monthly {
                try await self.rows(
                    """
                    INSERT INTO usage_monthly (account_id, month, calls)
                    VALUES (\(key.accountID), \(key.month.description), \(calls))
                    ON CONFLICT (account_id, month) DO UPDATE SET calls = usage_monthly.calls + excluded.calls
                    """, on: connection)
                if let grants {
                    // The stored calls take the place of the grant that covered them.
                    try await self.rows(
                        """
                        UPDATE quota_grants SET granted = GREATEST(granted - \(calls), 0), flushed = flushed + \(calls),
                            expires_at = \(grants.expiresAt)
                        WHERE account_id = \(key.accountID) AND month = \(key.month.description)
                            AND server_id = \(grants.server)
                        """, on: connection)
                }
            }
        }
    }

    public func claimQuota(_ claim: QuotaClaim, now: Date) async throws -> Int {
        let account = claim.accountMonth.accountID
        let month = claim.accountMonth.month.description
        return try await transaction { connection in
            // One claim of a month at a time, across servers; flushes need no lock (they only move calls from a
            // grant into the stored count), and one statement reads both in a single snapshot.
            try await self.rows(
                "SELECT pg_advisory_xact_lock(hashtextextended(\("quota:\(account):\(month)"), 0))", on: connection)
            let row = try await self.rows(
                """
                SELECT (COALESCE((SELECT calls FROM usage_monthly WHERE account_id = \(account) AND month = \(month)), 0)
                    + COALESCE((SELECT SUM(granted) FROM quota_grants WHERE account_id = \(account)
                        AND month = \(month) AND server_id <> \(claim.server) AND expires_at > \(now)), 0))::BIGINT
                    AS used,
                    (SELECT flushed FROM quota_grants WHERE account_id = \(account) AND month = \(month)
                        AND server_id = \(claim.server)) AS flushed
                """, on: connection
            ).first
            let used = try row.map { try $0["used"].decode(Int.self) } ?? 0
            let holding = claim.holding(storedByServer: try row?["flushed"].decode(Int?.self))
            let granted = claim.grant(available: claim.quota - used - holding)
            try await self.rows(
                """
                INSERT INTO quota_grants (account_id, month, server_id, granted, flushed, expires_at)
                VALUES (\(account), \(month), \(claim.server), \(holding + granted), \(claim.flushed),
                    \(claim.expiresAt))
                ON CONFLICT (account_id, month, server_id)
                DO UPDATE SET granted = excluded.granted, expires_at = excluded.expires_at
                """, on: connection)
            try await self.rows(
                """
                DELETE FROM quota_grants WHERE account_id = \(account) AND month = \(month) AND expires_at <= \(now)
                """, on: connection)
            return granted
        }
    }

    public func releaseQuotaGrants(server: UUID) async throws {
        try await run { try await rows("DELETE FROM quota_grants WHERE server_id = \(server)") }
    }

    public func usage(month: UsageMonth, accountID: UUID?, appID: UUID?) async throws -> [UsageRecord] {
        var query: PostgresQuery =
            "SELECT * FROM usage_daily WHERE day >= \(month.firstDay.description) AND day < \(month.next.firstDay.description)"
        if let accountID {
            query.binds.append(accountID)
            query.sql += " AND account_id = $\(query.binds.count)"
        }
        if let appID {
            query.binds.append(appID)
            query.sql += " AND app_id = $\(query.binds.count)"
        }
        query.sql += " ORDER BY day, account_id, app_id, endpoint, outcome"
        return try await run {
            try await rows(query).map { row in
                UsageRecord(
                    key: UsageKey(
                        accountID: try row["account_id"].decode(UUID.self), appID: try row["app_id"].decode(UUID.self),
                        endpoint: try StoredForm.enumValue(try row["endpoint"].decode(String.self)),
                        outcome: try StoredForm.enumValue(try row["outcome"].decode(String.self)),
                        day: try StoredForm.day(try row["day"].decode(String.self))),
                    calls: try row["calls"].decode(Int.self))
            }
        }
    }

    public func monthlyCalls(month: UsageMonth) async throws -> [UUID: Int] {
        try await run {
            var calls: [UUID: Int] = [:]
            for row in try await rows("SELECT account_id, calls FROM usage_monthly WHERE month = \(month.description)")
            {
                calls[try row["account_id"].decode(UUID.self)] = try row["calls"].decode(Int.self)
            }
            return calls
        }
    }

    // MARK: Rows

    private func insertBundleIDs(of app: App, on connection: PostgresConnection) async throws {
        for (position, bundleID) in app.bundleIDs.enumerated() {
            try await rows(
                "INSERT INTO app_bundle_ids (app_id, position, bundle_id) VALUES (\(app.id), \(position), \(bundleID.value))",
                on: connection)
        }
    }

    /// An app's columns and its bundle IDs in position order, in one query (not one more per app).
    private static let appColumns =
        "apps.*, (SELECT string_agg(bundle_id, ',' ORDER BY position) FROM app_bundle_ids WHERE app_id = apps.id) AS bundle_ids"

    private static func app(_ row: PostgresRandomAccessRow) throws -> App {
        let id = try row["id"].decode(UUID.self)
        let bundleIDs = try StoredForm.bundleIDs(try row["bundle_ids"].decode(String?.self))
        var credentials: AppStoreServerCredentials?
        if let issuer = try row["apple_issuer_id"].decode(String?.self),
            let keyID = try row["apple_key_id"].decode(String?.self),
            let key = try row["apple_private_key"].decode(Data?.self)
        {
            credentials = AppStoreServerCredentials(
                issuerID: issuer, keyID: keyID, privateKey: SealedSecret(bytes: Array(key)))
        }
        return App(
            id: id, accountID: try row["account_id"].decode(UUID.self), token: try row["token"].decode(String.self),
            name: try row["name"].decode(String.self), bundleIDs: bundleIDs,
            allowedEnvironments: try StoredForm.environments(try row["allowed_environments"].decode(String.self)),
            verificationMode: try StoredForm.enumValue(try row["verification_mode"].decode(String.self)),
            sharedSecret: try row["shared_secret"].decode(Data?.self).map { SealedSecret(bytes: Array($0)) },
            appStoreServerCredentials: credentials,
            resultCipher: try StoredForm.enumValue(try row["result_cipher"].decode(String.self)),
            resultKey: SealedSecret(bytes: Array(try row["result_key"].decode(Data.self))),
            allowsTestData: try row["allows_test_data"].decode(Bool.self),
            isEnabled: try row["enabled"].decode(Bool.self),
            createdAt: try row["created_at"].decode(Date.self).roundedToMilliseconds,
            updatedAt: try row["updated_at"].decode(Date.self).roundedToMilliseconds)
    }

    private static func plan(_ row: PostgresRandomAccessRow) throws -> Plan {
        Plan(
            name: try row["name"].decode(String.self), monthlyQuota: try row["monthly_quota"].decode(Int?.self),
            rateLimitPerSecond: try row["rate_limit_per_second"].decode(Int.self),
            includesEncryptedEndpoint: try row["includes_encrypted_endpoint"].decode(Bool.self),
            monthlyPriceCents: try row["monthly_price_cents"].decode(Int.self),
            overagePricePer1000Cents: try row["overage_price_per_1000_cents"].decode(Int.self))
    }

    private static func account(_ row: PostgresRandomAccessRow) throws -> Account {
        Account(
            id: try row["id"].decode(UUID.self), name: try row["name"].decode(String.self),
            email: try row["email"].decode(String.self), planName: try row["plan_name"].decode(String.self),
            isEnabled: try row["enabled"].decode(Bool.self),
            createdAt: try row["created_at"].decode(Date.self).roundedToMilliseconds,
            updatedAt: try row["updated_at"].decode(Date.self).roundedToMilliseconds)
    }

    private static func apiKey(_ row: PostgresRandomAccessRow) throws -> APIKey {
        APIKey(
            id: try row["id"].decode(UUID.self), accountID: try row["account_id"].decode(UUID.self),
            prefix: try row["prefix"].decode(String.self), hash: Array(try row["key_hash"].decode(Data.self)),
            label: try row["label"].decode(String?.self),
            createdAt: try row["created_at"].decode(Date.self).roundedToMilliseconds,
            lastUsedAt: try row["last_used_at"].decode(Date?.self)?.roundedToMilliseconds,
            revokedAt: try row["revoked_at"].decode(Date?.self)?.roundedToMilliseconds)
    }
}

/// An app's columns that PostgreSQL cannot bind directly, converted once for insert and update.
private struct StoredApp {
    let environments: String
    let sharedSecret: Data?
    let issuerID: String?
    let keyID: String?
    let privateKey: Data?
    let resultKey: Data

    init(_ app: App) {
        environments = StoredForm.environments(app.allowedEnvironments)
        sharedSecret = app.sharedSecret.map { Data($0.bytes) }
        issuerID = app.appStoreServerCredentials?.issuerID
        keyID = app.appStoreServerCredentials?.keyID
        privateKey = app.appStoreServerCredentials.map { Data($0.privateKey.bytes) }
        resultKey = Data(app.resultKey.bytes)
    }
}
