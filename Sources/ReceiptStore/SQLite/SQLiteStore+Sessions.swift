import Foundation
import ReceiptService
import SQLiteNIO

/// The account screen's concern (``SessionStore``): sessions, sign-in links, the audit log.
extension SQLiteStore: SessionStore {
    public func insertSession(_ session: AccountSession) async throws {
        try await run {
            _ = try await self.query(
                """
                INSERT INTO account_sessions (id, account_id, token_hash, method, address, created_at, last_used_at,
                    expires_at)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                """,
                [
                    .uuid(session.id), .uuid(session.accountID), .bytes(session.tokenHash), .text(session.method),
                    session.address.map { .text($0) } ?? .null, .millis(session.createdAt),
                    .millis(session.lastUsedAt), .millis(session.expiresAt),
                ])
        }
    }

    public func session(tokenHash: [UInt8]) async throws -> AccountSession? {
        try await run {
            try await self.query("SELECT * FROM account_sessions WHERE token_hash = ?", [.bytes(tokenHash)])
                .first.map(StoredForm.session)
        }
    }

    public func touchSession(id: UUID, at date: Date) async throws {
        try await run {
            _ = try await self.query(
                "UPDATE account_sessions SET last_used_at = ? WHERE id = ?", [.millis(date), .uuid(id)])
        }
    }

    public func deleteSession(id: UUID) async throws -> Bool {
        try await run {
            !(try await self.query("DELETE FROM account_sessions WHERE id = ? RETURNING id", [.uuid(id)]).isEmpty)
        }
    }

    public func deleteSessions(accountID: UUID) async throws -> Int {
        try await run {
            try await self.query(
                "DELETE FROM account_sessions WHERE account_id = ? RETURNING id", [.uuid(accountID)]
            ).count
        }
    }

    public func insertSignInLink(_ link: SignInLink) async throws {
        try await run {
            _ = try await self.query(
                """
                INSERT INTO sign_in_links (token_hash, account_id, created_at, expires_at, used_at)
                VALUES (?, ?, ?, ?, ?)
                """,
                [
                    .bytes(link.tokenHash), .uuid(link.accountID), .millis(link.createdAt), .millis(link.expiresAt),
                    .millis(link.usedAt),
                ])
        }
    }

    public func useSignInLink(tokenHash: [UInt8], at date: Date) async throws -> UUID? {
        try await run {
            // One statement: of concurrent uses, only the first finds the link unused.
            try await self.query(
                """
                UPDATE sign_in_links SET used_at = ?
                WHERE token_hash = ? AND used_at IS NULL AND expires_at > ? RETURNING account_id
                """, [.millis(date), .bytes(tokenHash), .millis(date)]
            ).first.map { try $0.uuid("account_id") }
        }
    }

    public func signInLinkAccount(tokenHash: [UInt8], at date: Date) async throws -> UUID? {
        try await run {
            try await self.query(
                """
                SELECT account_id FROM sign_in_links WHERE token_hash = ? AND used_at IS NULL AND expires_at > ?
                """, [.bytes(tokenHash), .millis(date)]
            ).first.map { try $0.uuid("account_id") }
        }
    }

    public func accountID(issuer: String, subject: String) async throws -> UUID? {
        try await run {
            try await self.query(
                "SELECT account_id FROM account_identities WHERE issuer = ? AND subject = ?",
                [.text(issuer), .text(subject)]
            ).first.map { try $0.uuid("account_id") }
        }
    }

    public func linkFirstIdentity(_ identity: AccountIdentity) async throws -> Bool {
        try await transaction {
            _ = try await self.query(
                """
                INSERT INTO account_identities (issuer, subject, account_id, email, created_at)
                SELECT ?, ?, ?, ?, ? WHERE NOT EXISTS (SELECT 1 FROM account_identities WHERE account_id = ?)
                ON CONFLICT (issuer, subject) DO NOTHING
                """,
                [
                    .text(identity.issuer), .text(identity.subject), .uuid(identity.accountID), .text(identity.email),
                    .millis(identity.createdAt), .uuid(identity.accountID),
                ])
            let linked = try await self.query(
                "SELECT account_id FROM account_identities WHERE issuer = ? AND subject = ?",
                [.text(identity.issuer), .text(identity.subject)])
            return try linked.first?.uuid("account_id") == identity.accountID
        }
    }

    public func signUp(_ account: Account, identity: AccountIdentity) async throws {
        try await transaction {
            try await self.insert(account)
            try await self.insert(identity)
        }
    }

    /// Inserts an identity.
    private func insert(_ identity: AccountIdentity) async throws {
        _ = try await query(
            """
            INSERT INTO account_identities (issuer, subject, account_id, email, created_at) VALUES (?, ?, ?, ?, ?)
            """,
            [
                .text(identity.issuer), .text(identity.subject), .uuid(identity.accountID), .text(identity.email),
                .millis(identity.createdAt),
            ])
    }

    public func appendAudit(_ entry: AuditEntry) async throws {
        try await run {
            _ = try await self.query(
                """
                INSERT INTO audit_log (id, account_id, actor, action, detail, address, at)
                VALUES (?, ?, ?, ?, ?, ?, ?)
                """,
                [
                    .uuid(entry.id), .uuid(entry.accountID), .text(entry.actor), .text(entry.action),
                    .text(entry.detail), entry.address.map { .text($0) } ?? .null, .millis(entry.at),
                ])
        }
    }

    public func auditEntries(accountID: UUID?, limit: Int) async throws -> [AuditEntry] {
        try await run {
            let rows =
                if let accountID {
                    try await self.query(
                        "SELECT * FROM audit_log WHERE account_id = ? ORDER BY at DESC, id DESC LIMIT ?",
                        [.uuid(accountID), .integer(limit)])
                } else {
                    try await self.query(
                        "SELECT * FROM audit_log ORDER BY at DESC, id DESC LIMIT ?", [.integer(limit)])
                }
            return try rows.map(StoredForm.auditEntry)
        }
    }
}
