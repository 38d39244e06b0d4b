import Foundation
import Logging
import NIOCore
import NIOPosix
import ReceiptCore
import ReceiptService
import SQLiteNIO

/// The tenancy concern (``TenancyStore``): plans, accounts, API keys, apps, the master key check.
extension SQLiteStore {
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
        try await run { try await self.query("SELECT * FROM plans ORDER BY name").map(StoredForm.plan) }
    }

    public func plan(named name: String) async throws -> Plan? {
        try await run {
            try await self.query("SELECT * FROM plans WHERE name = ?", [.text(name)]).first.map(StoredForm.plan)
        }
    }

    public func savePlan(_ plan: Plan) async throws {
        try await transaction {
            _ = try await self.query(
                """
                INSERT INTO plans (name, monthly_quota, rate_limit_per_second, includes_encrypted_endpoint,
                    monthly_price_cents, overage_price_per_1000_cents, max_apps, max_api_keys, max_bundle_ids,
                    max_products, max_webhook_endpoints) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (name) DO UPDATE SET monthly_quota = excluded.monthly_quota,
                    rate_limit_per_second = excluded.rate_limit_per_second,
                    includes_encrypted_endpoint = excluded.includes_encrypted_endpoint,
                    monthly_price_cents = excluded.monthly_price_cents,
                    overage_price_per_1000_cents = excluded.overage_price_per_1000_cents,
                    max_apps = excluded.max_apps, max_api_keys = excluded.max_api_keys,
                    max_bundle_ids = excluded.max_bundle_ids, max_products = excluded.max_products,
                    max_webhook_endpoints = excluded.max_webhook_endpoints
                """,
                [
                    .text(plan.name), plan.monthlyQuota.map { .integer($0) } ?? .null,
                    .integer(plan.rateLimitPerSecond),
                    .bool(plan.includesEncryptedEndpoint), .integer(plan.monthlyPriceCents),
                    .integer(plan.overagePricePer1000Cents),
                ] + PlanLimits.Field.allCases.map { .integer(plan.limits[$0]) })
        }
        announceLedgerChange()
    }

    public func insertAccount(_ account: Account) async throws {
        try await run { try await self.insert(account) }
    }

    /// Inserts an account row; the caller holds the connection (``run`` or ``transaction``).
    func insert(_ account: Account) async throws {
        _ = try await query(
            """
            INSERT INTO accounts (id, name, email, plan_name, enabled, created_at, updated_at, signed_up_with)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?)
            """,
            [
                .uuid(account.id), .text(account.name), .text(account.email), .text(account.planName),
                .bool(account.isEnabled), .millis(account.createdAt), .millis(account.updatedAt),
                .text(account.signedUpWith.rawValue),
            ])
    }

    public func updateAccount(_ account: Account) async throws -> Bool {
        let updated = try await transaction {
            let rows = try await self.query(
                "UPDATE accounts SET name = ?, plan_name = ?, enabled = ?, updated_at = ? WHERE id = ? RETURNING id",
                [
                    .text(account.name), .text(account.planName), .bool(account.isEnabled), .millis(account.updatedAt),
                    .uuid(account.id),
                ])
            return !rows.isEmpty
        }
        announceLedgerChange()
        return updated
    }

    public func accounts() async throws -> [Account] {
        try await run { try await self.query("SELECT * FROM accounts ORDER BY created_at, id").map(StoredForm.account) }
    }

    public func account(id: UUID) async throws -> Account? {
        try await run {
            try await self.query("SELECT * FROM accounts WHERE id = ?", [.uuid(id)]).first.map(StoredForm.account)
        }
    }

    public func account(email: String) async throws -> Account? {
        try await run {
            try await self.query("SELECT * FROM accounts WHERE email = ?", [.text(email)]).first.map(StoredForm.account)
        }
    }

    public func insertAPIKey(_ key: APIKey, limit: Int) async throws -> Bool {
        try await transaction {
            // The connection is the only writer: the count and the insert are one step for every other writer.
            let held = try await self.count(
                "SELECT count(*) AS n FROM api_keys WHERE account_id = ? AND revoked_at IS NULL", [.uuid(key.accountID)]
            )
            guard held < limit else { return false }
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
            return true
        }
    }

    /// The `n` of the first row `sql` answers; the caller holds the connection.
    func count(_ sql: String, _ binds: [SQLiteData]) async throws -> Int {
        try await query(sql, binds).first.map { try $0.int("n") } ?? 0
    }

    public func apiKeys(accountID: UUID) async throws -> [APIKey] {
        try await run {
            try await self.query(
                "SELECT * FROM api_keys WHERE account_id = ? ORDER BY created_at, id", [.uuid(accountID)]
            ).map(StoredForm.apiKey)
        }
    }

    public func apiKey(prefix: String) async throws -> APIKey? {
        try await run {
            try await self.query("SELECT * FROM api_keys WHERE prefix = ?", [.text(prefix)]).first.map(
                StoredForm.apiKey)
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

    public func insertApp(_ app: App, limit: Int) async throws -> Bool {
        try await transaction {
            let held = try await self.count(
                "SELECT count(*) AS n FROM apps WHERE account_id = ?", [.uuid(app.accountID)])
            guard held < limit else { return false }
            _ = try await self.query(
                """
                INSERT INTO apps (id, account_id, token, name, allowed_environments, verification_mode, shared_secret,
                    apple_issuer_id, apple_key_id, apple_private_key, result_cipher, result_key, allows_test_data,
                    enabled, claims_policy, delivery_mode, product_catalog, enrichment, id_lookups, requires_user,
                    apple_app_id, locked, test_anchors, product_terms, refund_answers, package_names,
                    google_client_email, google_key_id, google_token_uri, google_private_key, google_pubsub, google_license_key,
                    store_user_ids, created_at, updated_at)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """,
                [.uuid(app.id), .uuid(app.accountID), .text(app.token)] + Self.appColumns(app)
                    + [.millis(app.createdAt), .millis(app.updatedAt)])
            try await self.insertBundleIDs(of: app)
            return true
        }
    }

    public func updateApp(_ app: App) async throws -> Bool {
        try await transaction { try await self.updateAppRows(app) }
    }

    /// Updates the app's row and bundle IDs, inside the caller's transaction.
    func updateAppRows(_ app: App) async throws -> Bool {
        let rows = try await self.query(
            """
            UPDATE apps SET name = ?, allowed_environments = ?, verification_mode = ?, shared_secret = ?,
                apple_issuer_id = ?, apple_key_id = ?, apple_private_key = ?, result_cipher = ?, result_key = ?,
                allows_test_data = ?, enabled = ?, claims_policy = ?, delivery_mode = ?, product_catalog = ?,
                enrichment = ?, id_lookups = ?, requires_user = ?, apple_app_id = ?, locked = ?, test_anchors = ?,
                product_terms = ?, refund_answers = ?, package_names = ?, google_client_email = ?,
                google_key_id = ?, google_token_uri = ?, google_private_key = ?, google_pubsub = ?, google_license_key = ?,
                store_user_ids = ?, token = ?,
                updated_at = ?
            WHERE id = ? RETURNING id
            """,
            Self.appColumns(app) + [.text(app.token), .millis(app.updatedAt), .uuid(app.id)])
        guard !rows.isEmpty else { return false }
        _ = try await self.query("DELETE FROM app_bundle_ids WHERE app_id = ?", [.uuid(app.id)])
        try await self.insertBundleIDs(of: app)
        return true
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
            return try rows.map(StoredForm.app)
        }
    }

    public func app(id: UUID) async throws -> App? {
        try await run {
            try await self.query("SELECT \(Self.appColumns) FROM apps WHERE id = ?", [.uuid(id)]).first.map(
                StoredForm.app)
        }
    }

    public func app(token: String) async throws -> App? {
        try await run {
            guard
                let row = try await self.query(
                    "SELECT \(Self.appColumns) FROM apps WHERE token = ?", [.text(token)]
                ).first
            else { return nil }
            return try StoredForm.app(row)
        }
    }

    func insertBundleIDs(of app: App) async throws {
        for (position, bundleID) in app.bundleIDs.enumerated() {
            _ = try await query(
                "INSERT INTO app_bundle_ids (app_id, position, bundle_id) VALUES (?, ?, ?)",
                [.uuid(app.id), .integer(position), .text(bundleID.value)])
        }
    }

    /// The columns shared by insert and update, in the order both statements list them.
    static func appColumns(_ app: App) -> [SQLiteData] {
        [
            .text(app.name), .text(StoredForm.environments(app.allowedEnvironments)),
            .text(app.verificationMode.rawValue),
            .bytes(app.sharedSecret?.bytes), app.appStoreServerCredentials.map { .text($0.issuerID) } ?? .null,
            app.appStoreServerCredentials.map { .text($0.keyID) } ?? .null,
            .bytes(app.appStoreServerCredentials?.privateKey.bytes), .text(app.resultCipher.rawValue),
            .bytes(app.resultKey.bytes), .bool(app.allowsTestData), .bool(app.isEnabled),
            .text(app.claimsPolicy.rawValue), .text(app.deliveryMode.rawValue),
            app.productCatalog.map { .text(StoredForm.commaSeparated($0)) } ?? .null,
            .text(app.enrichment.rawValue), .text(app.idLookups.rawValue), .bool(app.requiresUser),
            app.appleAppID.map { .integer(Int($0)) } ?? .null, .bool(app.isLocked),
            .text(StoredForm.commaSeparated(app.testAnchors)), .text(StoredForm.productTerms(app.catalog)),
            .text(app.refundAnswers.storedForm), .text(StoredForm.commaSeparated(app.packageNames)),
            app.googlePlayCredentials.map { .text($0.clientEmail) } ?? .null,
            app.googlePlayCredentials.map { .text($0.keyID) } ?? .null,
            app.googlePlayCredentials.map { .text($0.tokenURI) } ?? .null,
            .bytes(app.googlePlayCredentials?.privateKey.bytes),
            app.googlePubSub.map { .text($0.storedForm) } ?? .null, app.googleLicenseKey.map { .text($0) } ?? .null,
            .bool(app.storeUserIDs),
        ]
    }

    /// An app's columns and its bundle IDs in position order, in one query (not one more per app).
    static let appColumns =
        "apps.*, (SELECT group_concat(bundle_id, ',' ORDER BY position) FROM app_bundle_ids WHERE app_id = apps.id) AS bundle_ids"

}
