import Foundation
import PostgresNIO
import ReceiptCore
import ReceiptService
import SQLiteNIO

/// A row of either store, read by column name: what the row decoders below need, so each is written once for both
/// dialects (SQLite keeps times as integer milliseconds and flags as integers, PostgreSQL as `TIMESTAMPTZ` and
/// `BOOLEAN`; each conformance hides that). Times come back rounded to the millisecond in both.
protocol StoredRow {
    func text(_ column: String) throws -> String
    func optionalText(_ column: String) throws -> String?
    func int(_ column: String) throws -> Int
    func optionalInt(_ column: String) throws -> Int?
    func bool(_ column: String) throws -> Bool
    func optionalBool(_ column: String) throws -> Bool?
    func uuid(_ column: String) throws -> UUID
    func date(_ column: String) throws -> Date
    func optionalDate(_ column: String) throws -> Date?
    func bytes(_ column: String) throws -> [UInt8]
    func optionalBytes(_ column: String) throws -> [UInt8]?
}

extension StoredForm {
    static func plan(_ row: some StoredRow) throws -> Plan {
        Plan(
            name: try row.text("name"), monthlyQuota: try row.optionalInt("monthly_quota"),
            rateLimitPerSecond: try row.int("rate_limit_per_second"),
            includesEncryptedEndpoint: try row.bool("includes_encrypted_endpoint"),
            monthlyPriceCents: try row.int("monthly_price_cents"),
            overagePricePer1000Cents: try row.int("overage_price_per_1000_cents"),
            limits: PlanLimits(
                apps: try row.int("max_apps"), apiKeys: try row.int("max_api_keys"),
                bundleIDs: try row.int("max_bundle_ids"), products: try row.int("max_products"),
                webhookEndpoints: try row.int("max_webhook_endpoints")))
    }

    static func account(_ row: some StoredRow) throws -> Account {
        Account(
            id: try row.uuid("id"), name: try row.text("name"), email: try row.text("email"),
            planName: try row.text("plan_name"), isEnabled: try row.bool("enabled"),
            createdAt: try row.date("created_at"),
            updatedAt: try row.date("updated_at"),
            signedUpWith: try StoredForm.enumValue(try row.text("signed_up_with")))
    }

    static func apiKey(_ row: some StoredRow) throws -> APIKey {
        APIKey(
            id: try row.uuid("id"), accountID: try row.uuid("account_id"), prefix: try row.text("prefix"),
            hash: try row.bytes("key_hash"), label: try row.optionalText("label"),
            createdAt: try row.date("created_at"),
            lastUsedAt: try row.optionalDate("last_used_at"), revokedAt: try row.optionalDate("revoked_at"))
    }

    /// An app from its columns and `bundle_ids`, the bundle IDs aggregated by the same query.
    static func app(_ row: some StoredRow) throws -> App {
        var credentials: AppStoreServerCredentials?
        if let issuer = try row.optionalText("apple_issuer_id"), let keyID = try row.optionalText("apple_key_id"),
            let key = try row.optionalBytes("apple_private_key")
        {
            credentials = AppStoreServerCredentials(
                issuerID: issuer, keyID: keyID, privateKey: SealedSecret(bytes: key))
        }
        var app = App(
            id: try row.uuid("id"), accountID: try row.uuid("account_id"), token: try row.text("token"),
            name: try row.text("name"), bundleIDs: try bundleIDs(try row.optionalText("bundle_ids")),
            allowedEnvironments: try environments(try row.text("allowed_environments")),
            verificationMode: try enumValue(try row.text("verification_mode")),
            sharedSecret: try row.optionalBytes("shared_secret").map(SealedSecret.init(bytes:)),
            appStoreServerCredentials: credentials, resultCipher: try enumValue(try row.text("result_cipher")),
            resultKey: SealedSecret(bytes: try row.bytes("result_key")),
            allowsTestData: try row.bool("allows_test_data"),
            isEnabled: try row.bool("enabled"), claimsPolicy: try enumValue(try row.text("claims_policy")),
            deliveryMode: try enumValue(try row.text("delivery_mode")),
            catalog: try catalog(
                ids: try row.optionalText("product_catalog"), terms: try row.optionalText("product_terms") ?? ""),
            enrichment: try enumValue(try row.text("enrichment")), idLookups: try enumValue(try row.text("id_lookups")),
            requiresUser: try row.bool("requires_user"),
            appleAppID: try row.optionalInt("apple_app_id").map(Int64.init), isLocked: try row.bool("locked"),
            testAnchors: commaSeparated(try row.text("test_anchors")), createdAt: try row.date("created_at"),
            updatedAt: try row.date("updated_at"))
        let refunds = try row.text("refund_answers")
        guard let answers = RefundAnswers(storedForm: refunds) else {
            throw corrupt("apps.refund_answers is not a refund policy: \(refunds)")
        }
        app.refundAnswers = answers
        app.storeUserIDs = try row.bool("store_user_ids")
        app.packageNames = commaSeparated(try row.text("package_names"))
        if let email = try row.optionalText("google_client_email"), let keyID = try row.optionalText("google_key_id"),
            let tokenURI = try row.optionalText("google_token_uri"),
            let key = try row.optionalBytes("google_private_key")
        {
            app.googlePlayCredentials = GooglePlayCredentials(
                clientEmail: email, keyID: keyID, tokenURI: tokenURI, privateKey: SealedSecret(bytes: key))
        }
        if let push = try row.optionalText("google_pubsub") {
            guard let setting = GooglePubSubPush(storedForm: push) else {
                throw corrupt("apps.google_pubsub is not an audience and a service account")
            }
            app.googlePubSub = setting
        }
        app.googleLicenseKey = try row.optionalText("google_license_key")
        return app
    }

    static func session(_ row: some StoredRow) throws -> AccountSession {
        AccountSession(
            id: try row.uuid("id"), accountID: try row.uuid("account_id"), tokenHash: try row.bytes("token_hash"),
            method: try row.text("method"), address: try row.optionalText("address"),
            createdAt: try row.date("created_at"), lastUsedAt: try row.date("last_used_at"),
            expiresAt: try row.date("expires_at"))
    }

    static func auditEntry(_ row: some StoredRow) throws -> AuditEntry {
        AuditEntry(
            id: try row.uuid("id"), accountID: try row.uuid("account_id"), actor: try row.text("actor"),
            action: try row.text("action"), detail: try row.text("detail"), address: try row.optionalText("address"),
            at: try row.date("at"))
    }

    static func usageRecord(_ row: some StoredRow) throws -> UsageRecord {
        UsageRecord(
            key: UsageKey(
                accountID: try row.uuid("account_id"), appID: try row.uuid("app_id"),
                endpoint: try enumValue(try row.text("endpoint")), outcome: try enumValue(try row.text("outcome")),
                day: try day(try row.text("day"))),
            calls: try row.int("calls"))
    }
}

extension SQLiteRow: StoredRow {
    func text(_ column: String) throws -> String { try require(column).requireText() }
    func optionalText(_ column: String) throws -> String? { self.column(column)?.string }
    func int(_ column: String) throws -> Int { try require(column).requireInt() }
    func optionalInt(_ column: String) throws -> Int? { self.column(column)?.integer.map { Int($0) } }
    func bool(_ column: String) throws -> Bool { try require(column).requireBool() }
    func optionalBool(_ column: String) throws -> Bool? { self.column(column)?.integer.map { $0 != 0 } }
    func uuid(_ column: String) throws -> UUID { try require(column).requireUUID() }
    func date(_ column: String) throws -> Date { try require(column).requireDate() }
    func optionalDate(_ column: String) throws -> Date? {
        self.column(column)?.integer.map { StoredForm.date(millis: Int($0)) }
    }
    func bytes(_ column: String) throws -> [UInt8] { try require(column).requireBytes() }
    func optionalBytes(_ column: String) throws -> [UInt8]? { self.column(column)?.bytes }
}

extension PostgresRandomAccessRow: StoredRow {
    func text(_ column: String) throws -> String { try self[column].decode(String.self) }
    func optionalText(_ column: String) throws -> String? { try self[column].decode(String?.self) }
    func int(_ column: String) throws -> Int { try self[column].decode(Int.self) }
    func optionalInt(_ column: String) throws -> Int? { try self[column].decode(Int?.self) }
    func bool(_ column: String) throws -> Bool { try self[column].decode(Bool.self) }
    func optionalBool(_ column: String) throws -> Bool? { try self[column].decode(Bool?.self) }
    func uuid(_ column: String) throws -> UUID { try self[column].decode(UUID.self) }
    func date(_ column: String) throws -> Date { try self[column].decode(Date.self).roundedToMilliseconds }
    func optionalDate(_ column: String) throws -> Date? {
        try self[column].decode(Date?.self)?.roundedToMilliseconds
    }
    func bytes(_ column: String) throws -> [UInt8] { Array(try self[column].decode(Data.self)) }
    func optionalBytes(_ column: String) throws -> [UInt8]? { try self[column].decode(Data?.self).map(Array.init) }
}
