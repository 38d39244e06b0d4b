import Foundation
import Logging
import PostgresNIO
import ReceiptCore
import ReceiptService
import ServiceLifecycle
import Synchronization

/// The tenancy concern (``TenancyStore``): plans, accounts, API keys, apps, the master key check.
extension PostgresStore {
    /// Announces a change to listening servers in the change's own transaction: PostgreSQL delivers the notification
    /// when the transaction commits, so a write is announced exactly when it is committed, and the call cannot fail
    /// after its write committed.
    func announceChange(on connection: PostgresConnection) async throws {
        try await rows("SELECT pg_notify(\(Self.changeChannel), '')", on: connection)
    }

    /// Announces recordings that inserted rows or recorded for a user (``customerChangeMarker()``), delivered when the
    /// transaction commits.
    func announceCustomerChange(on connection: PostgresConnection) async throws {
        try await rows("SELECT pg_notify(\(Self.changeChannel), \(Self.customerChange))", on: connection)
    }

    /// Announces status writes (``statusChangeMarker()``), delivered when the transaction commits.
    func announceStatusChange(on connection: PostgresConnection) async throws {
        try await rows("SELECT pg_notify(\(Self.changeChannel), \(Self.statusChange))", on: connection)
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
        try await run { try await rows("SELECT * FROM plans ORDER BY name").map(StoredForm.plan) }
    }

    public func plan(named name: String) async throws -> Plan? {
        try await run { try await rows("SELECT * FROM plans WHERE name = \(name)").first.map(StoredForm.plan) }
    }

    public func savePlan(_ plan: Plan) async throws {
        try await transaction { connection in
            try await self.rows(
                """
                INSERT INTO plans (name, monthly_quota, rate_limit_per_second, includes_encrypted_endpoint,
                    monthly_price_cents, overage_price_per_1000_cents, max_apps, max_api_keys, max_bundle_ids,
                    max_products, max_webhook_endpoints)
                VALUES (\(plan.name), \(plan.monthlyQuota), \(plan.rateLimitPerSecond),
                    \(plan.includesEncryptedEndpoint), \(plan.monthlyPriceCents), \(plan.overagePricePer1000Cents),
                    \(plan.limits.apps), \(plan.limits.apiKeys), \(plan.limits.bundleIDs), \(plan.limits.products),
                    \(plan.limits.webhookEndpoints))
                ON CONFLICT (name) DO UPDATE SET monthly_quota = excluded.monthly_quota,
                    rate_limit_per_second = excluded.rate_limit_per_second,
                    includes_encrypted_endpoint = excluded.includes_encrypted_endpoint,
                    monthly_price_cents = excluded.monthly_price_cents,
                    overage_price_per_1000_cents = excluded.overage_price_per_1000_cents,
                    max_apps = excluded.max_apps, max_api_keys = excluded.max_api_keys,
                    max_bundle_ids = excluded.max_bundle_ids, max_products = excluded.max_products,
                    max_webhook_endpoints = excluded.max_webhook_endpoints
                """, on: connection)
            try await self.announceChange(on: connection)
        }
    }

    public func insertAccount(_ account: Account) async throws {
        try await run { try await insert(account, on: nil) }
    }

    /// Inserts an account row, on a transaction's connection or the pool.
    func insert(_ account: Account, on connection: PostgresConnection?) async throws {
        try await rows(
            """
            INSERT INTO accounts (id, name, email, plan_name, enabled, created_at, updated_at, signed_up_with)
            VALUES (\(account.id), \(account.name), \(account.email), \(account.planName), \(account.isEnabled),
                \(account.createdAt), \(account.updatedAt), \(account.signedUpWith.rawValue))
            """, on: connection)
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
        try await run { try await rows("SELECT * FROM accounts ORDER BY created_at, id").map(StoredForm.account) }
    }

    public func account(id: UUID) async throws -> Account? {
        try await run { try await rows("SELECT * FROM accounts WHERE id = \(id)").first.map(StoredForm.account) }
    }

    public func account(email: String) async throws -> Account? {
        try await run { try await rows("SELECT * FROM accounts WHERE email = \(email)").first.map(StoredForm.account) }
    }

    public func insertAPIKey(_ key: APIKey, limit: Int) async throws -> Bool {
        try await transaction { connection in
            let held = try await self.lockAndCount(
                "SELECT id FROM accounts WHERE id = \(key.accountID) FOR UPDATE",
                "SELECT count(*)::int8 AS n FROM api_keys WHERE account_id = \(key.accountID) AND revoked_at IS NULL",
                on: connection)
            guard held < limit else { return false }
            try await self.rows(
                """
                INSERT INTO api_keys (id, account_id, prefix, key_hash, label, created_at, last_used_at, revoked_at)
                VALUES (\(key.id), \(key.accountID), \(key.prefix), \(Data(key.hash)), \(key.label), \(key.createdAt),
                    \(key.lastUsedAt), \(key.revokedAt))
                """, on: connection)
            return true
        }
    }

    /// Locks a parent row until the transaction ends (`lock`, a `SELECT … FOR UPDATE`), then counts its children
    /// (`count`, a row with `n`): inserts that check a limit under one parent so count one after another, on every
    /// server, each seeing what the one before committed.
    func lockAndCount(_ lock: PostgresQuery, _ count: PostgresQuery, on connection: PostgresConnection) async throws
        -> Int
    {
        try await rows(lock, on: connection)
        return try await rows(count, on: connection).first.map { try $0.int("n") } ?? 0
    }

    public func apiKeys(accountID: UUID) async throws -> [APIKey] {
        try await run {
            try await rows("SELECT * FROM api_keys WHERE account_id = \(accountID) ORDER BY created_at, id").map(
                StoredForm.apiKey)
        }
    }

    public func apiKey(prefix: String) async throws -> APIKey? {
        try await run { try await rows("SELECT * FROM api_keys WHERE prefix = \(prefix)").first.map(StoredForm.apiKey) }
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

    public func insertApp(_ app: App, limit: Int) async throws -> Bool {
        let columns = StoredApp(app)
        return try await transaction { connection in
            let held = try await self.lockAndCount(
                "SELECT id FROM accounts WHERE id = \(app.accountID) FOR UPDATE",
                "SELECT count(*)::int8 AS n FROM apps WHERE account_id = \(app.accountID)", on: connection)
            guard held < limit else { return false }
            try await self.rows(
                """
                INSERT INTO apps (id, account_id, token, name, allowed_environments, verification_mode, shared_secret,
                    apple_issuer_id, apple_key_id, apple_private_key, result_cipher, result_key, allows_test_data,
                    enabled, claims_policy, delivery_mode, product_catalog, enrichment, id_lookups, requires_user,
                    apple_app_id, locked, test_anchors, product_terms, refund_answers, package_names,
                    google_client_email, google_key_id, google_token_uri, google_private_key, google_pubsub, google_license_key,
                    store_user_ids, created_at, updated_at)
                VALUES (\(app.id), \(app.accountID), \(app.token), \(app.name), \(columns.environments),
                    \(app.verificationMode.rawValue), \(columns.sharedSecret), \(columns.issuerID), \(columns.keyID),
                    \(columns.privateKey), \(app.resultCipher.rawValue), \(columns.resultKey), \(app.allowsTestData),
                    \(app.isEnabled), \(app.claimsPolicy.rawValue), \(app.deliveryMode.rawValue),
                    \(columns.productCatalog), \(app.enrichment.rawValue), \(app.idLookups.rawValue),
                    \(app.requiresUser), \(app.appleAppID), \(app.isLocked), \(columns.testAnchors),
                    \(columns.productTerms), \(app.refundAnswers.storedForm), \(columns.packageNames),
                    \(app.googlePlayCredentials?.clientEmail), \(app.googlePlayCredentials?.keyID),
                    \(app.googlePlayCredentials?.tokenURI), \(columns.googleKey), \(app.googlePubSub?.storedForm),
                    \(app.googleLicenseKey), \(app.storeUserIDs), \(app.createdAt), \(app.updatedAt))
                """, on: connection)
            try await self.insertBundleIDs(of: app, on: connection)
            return true
        }
    }

    public func updateApp(_ app: App) async throws -> Bool {
        try await transaction { connection in try await self.updateApp(app, on: connection) }
    }

    /// Updates the app's row and bundle IDs on `connection`, inside the caller's transaction.
    func updateApp(_ app: App, on connection: PostgresConnection) async throws -> Bool {
        let columns = StoredApp(app)
        let updated = try await self.rows(
            """
            UPDATE apps SET token = \(app.token), name = \(app.name), allowed_environments = \(columns.environments),
                verification_mode = \(app.verificationMode.rawValue), shared_secret = \(columns.sharedSecret),
                apple_issuer_id = \(columns.issuerID), apple_key_id = \(columns.keyID),
                apple_private_key = \(columns.privateKey), result_cipher = \(app.resultCipher.rawValue),
                result_key = \(columns.resultKey), allows_test_data = \(app.allowsTestData),
                enabled = \(app.isEnabled), claims_policy = \(app.claimsPolicy.rawValue),
                delivery_mode = \(app.deliveryMode.rawValue), product_catalog = \(columns.productCatalog),
                enrichment = \(app.enrichment.rawValue), id_lookups = \(app.idLookups.rawValue),
                requires_user = \(app.requiresUser), apple_app_id = \(app.appleAppID), locked = \(app.isLocked),
                test_anchors = \(columns.testAnchors), product_terms = \(columns.productTerms),
                refund_answers = \(app.refundAnswers.storedForm), package_names = \(columns.packageNames),
                google_client_email = \(app.googlePlayCredentials?.clientEmail),
                google_key_id = \(app.googlePlayCredentials?.keyID),
                google_token_uri = \(app.googlePlayCredentials?.tokenURI), google_private_key = \(columns.googleKey),
                google_pubsub = \(app.googlePubSub?.storedForm), google_license_key = \(app.googleLicenseKey),
                store_user_ids = \(app.storeUserIDs), updated_at = \(app.updatedAt)
            WHERE id = \(app.id) RETURNING id
            """, on: connection)
        guard !updated.isEmpty else { return false }
        try await self.rows("DELETE FROM app_bundle_ids WHERE app_id = \(app.id)", on: connection)
        try await self.insertBundleIDs(of: app, on: connection)
        return true
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
            return try appRows.map(StoredForm.app)
        }
    }

    public func app(id: UUID) async throws -> App? {
        try await run {
            try await rows("SELECT \(unescaped: Self.appColumns) FROM apps WHERE id = \(id)").first.map(StoredForm.app)
        }
    }

    public func app(token: String) async throws -> App? {
        try await run {
            guard
                let row = try await rows("SELECT \(unescaped: Self.appColumns) FROM apps WHERE token = \(token)").first
            else { return nil }
            return try StoredForm.app(row)
        }
    }

    func insertBundleIDs(of app: App, on connection: PostgresConnection) async throws {
        for (position, bundleID) in app.bundleIDs.enumerated() {
            try await rows(
                "INSERT INTO app_bundle_ids (app_id, position, bundle_id) VALUES (\(app.id), \(position), \(bundleID.value))",
                on: connection)
        }
    }

    /// An app's columns and its bundle IDs in position order, in one query (not one more per app).
    static let appColumns =
        "apps.*, (SELECT string_agg(bundle_id, ',' ORDER BY position) FROM app_bundle_ids WHERE app_id = apps.id) AS bundle_ids"

}

/// An app's columns that PostgreSQL cannot bind directly, converted once for insert and update.
private struct StoredApp {
    let environments: String
    let sharedSecret: Data?
    let issuerID: String?
    let keyID: String?
    let privateKey: Data?
    let resultKey: Data
    let productCatalog: String?
    let testAnchors: String
    let productTerms: String
    let packageNames: String
    let googleKey: Data?

    init(_ app: App) {
        environments = StoredForm.environments(app.allowedEnvironments)
        sharedSecret = app.sharedSecret.map { Data($0.bytes) }
        issuerID = app.appStoreServerCredentials?.issuerID
        keyID = app.appStoreServerCredentials?.keyID
        privateKey = app.appStoreServerCredentials.map { Data($0.privateKey.bytes) }
        resultKey = Data(app.resultKey.bytes)
        productCatalog = app.productCatalog.map(StoredForm.commaSeparated)
        testAnchors = StoredForm.commaSeparated(app.testAnchors)
        productTerms = StoredForm.productTerms(app.catalog)
        packageNames = StoredForm.commaSeparated(app.packageNames)
        googleKey = app.googlePlayCredentials.map { Data($0.privateKey.bytes) }
    }
}
