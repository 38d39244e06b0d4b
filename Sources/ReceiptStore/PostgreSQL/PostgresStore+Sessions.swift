import Foundation
import PostgresNIO
import ReceiptService

/// The account screen's concern (``SessionStore``): sessions, sign-in links, the audit log.
extension PostgresStore: SessionStore {
    public func insertSession(_ session: AccountSession) async throws {
        try await run {
            try await rows(
                """
                INSERT INTO account_sessions (id, account_id, token_hash, method, address, created_at, last_used_at,
                    expires_at)
                VALUES (\(session.id), \(session.accountID), \(Data(session.tokenHash)), \(session.method),
                    \(session.address), \(session.createdAt), \(session.lastUsedAt), \(session.expiresAt))
                """)
        }
    }

    public func session(tokenHash: [UInt8]) async throws -> AccountSession? {
        try await run {
            try await rows("SELECT * FROM account_sessions WHERE token_hash = \(Data(tokenHash))")
                .first.map(StoredForm.session)
        }
    }

    public func touchSession(id: UUID, at date: Date) async throws {
        try await run { try await rows("UPDATE account_sessions SET last_used_at = \(date) WHERE id = \(id)") }
    }

    public func deleteSession(id: UUID) async throws -> Bool {
        try await run { !(try await rows("DELETE FROM account_sessions WHERE id = \(id) RETURNING id").isEmpty) }
    }

    public func deleteSessions(accountID: UUID) async throws -> Int {
        try await run {
            try await rows("DELETE FROM account_sessions WHERE account_id = \(accountID) RETURNING id").count
        }
    }

    public func insertSignInLink(_ link: SignInLink) async throws {
        try await run {
            try await rows(
                """
                INSERT INTO sign_in_links (token_hash, account_id, created_at, expires_at, used_at)
                VALUES (\(Data(link.tokenHash)), \(link.accountID), \(link.createdAt), \(link.expiresAt),
                    \(link.usedAt))
                """)
        }
    }

    public func useSignInLink(tokenHash: [UInt8], at date: Date) async throws -> UUID? {
        try await run {
            // One statement: of concurrent uses, only the first finds the link unused (the row lock orders them).
            try await rows(
                """
                UPDATE sign_in_links SET used_at = \(date)
                WHERE token_hash = \(Data(tokenHash)) AND used_at IS NULL AND expires_at > \(date)
                RETURNING account_id
                """
            ).first.map { try $0.uuid("account_id") }
        }
    }

    public func signInLinkAccount(tokenHash: [UInt8], at date: Date) async throws -> UUID? {
        try await run {
            try await rows(
                """
                SELECT account_id FROM sign_in_links
                WHERE token_hash = \(Data(tokenHash)) AND used_at IS NULL AND expires_at > \(date)
                """
            ).first.map { try $0.uuid("account_id") }
        }
    }

    public func accountID(issuer: String, subject: String) async throws -> UUID? {
        try await run {
            try await rows(
                "SELECT account_id FROM account_identities WHERE issuer = \(issuer) AND subject = \(subject)"
            ).first.map { try $0.uuid("account_id") }
        }
    }

    public func linkFirstIdentity(_ identity: AccountIdentity) async throws -> Bool {
        try await transaction { connection in
            // The account's row is locked: two identities linking at once are taken one after the other.
            try await self.rows("SELECT 1 FROM accounts WHERE id = \(identity.accountID) FOR UPDATE", on: connection)
            try await self.rows(
                """
                INSERT INTO account_identities (issuer, subject, account_id, email, created_at)
                SELECT \(identity.issuer), \(identity.subject), \(identity.accountID), \(identity.email),
                    \(identity.createdAt)
                WHERE NOT EXISTS (SELECT 1 FROM account_identities WHERE account_id = \(identity.accountID))
                ON CONFLICT (issuer, subject) DO NOTHING
                """, on: connection)
            let linked = try await self.rows(
                """
                SELECT account_id FROM account_identities
                WHERE issuer = \(identity.issuer) AND subject = \(identity.subject)
                """, on: connection)
            return try linked.first?.uuid("account_id") == identity.accountID
        }
    }

    public func signUp(_ account: Account, identity: AccountIdentity) async throws {
        try await transaction { connection in
            try await insert(account, on: connection)
            try await insert(identity, on: connection)
        }
    }

    private func insert(_ identity: AccountIdentity, on connection: PostgresConnection?) async throws {
        try await rows(
            """
            INSERT INTO account_identities (issuer, subject, account_id, email, created_at)
            VALUES (\(identity.issuer), \(identity.subject), \(identity.accountID), \(identity.email),
                \(identity.createdAt))
            """, on: connection)
    }

    public func appendAudit(_ entry: AuditEntry) async throws {
        try await run {
            try await rows(
                """
                INSERT INTO audit_log (id, account_id, actor, action, detail, address, at)
                VALUES (\(entry.id), \(entry.accountID), \(entry.actor), \(entry.action), \(entry.detail),
                    \(entry.address), \(entry.at))
                """)
        }
    }

    public func auditEntries(accountID: UUID?, limit: Int) async throws -> [AuditEntry] {
        try await run {
            try await rows(
                """
                SELECT * FROM audit_log WHERE (\(accountID)::uuid IS NULL OR account_id = \(accountID))
                ORDER BY at DESC, id DESC LIMIT \(limit)
                """
            ).map(StoredForm.auditEntry)
        }
    }
}
