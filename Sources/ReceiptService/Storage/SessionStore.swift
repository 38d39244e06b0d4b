import Foundation

/// The customer-facing concern of a store (issue 19, the account screen): browser sessions, one-time sign-in links and
/// the audit log of account changes.
///
/// Every method is atomic, as ``TenancyStore``'s are. Secrets are never stored: a session and a sign-in link are
/// found by the SHA-256 of their token.
public protocol SessionStore: StoreLifecycle {
    /// Stores a new session.
    func insertSession(_ session: AccountSession) async throws
    /// The session whose token has this hash, if any (expired ones included: the caller judges).
    func session(tokenHash: [UInt8]) async throws -> AccountSession?
    /// Records that the session was used at `date`.
    func touchSession(id: UUID, at date: Date) async throws
    /// Deletes one session (sign-out); returns false when it did not exist.
    func deleteSession(id: UUID) async throws -> Bool
    /// Deletes every session of the account; returns how many there were.
    func deleteSessions(accountID: UUID) async throws -> Int

    /// Stores a new sign-in link.
    func insertSignInLink(_ link: SignInLink) async throws
    /// Uses the link whose token has this hash: if it exists, is unused and has not expired at `date`, marks it used
    /// and returns its account; else nil. Of concurrent uses, exactly one gets the account.
    func useSignInLink(tokenHash: [UInt8], at date: Date) async throws -> UUID?
    /// The account of the link whose token has this hash, when it is unused and has not expired at `date`; the link
    /// stays unused (the page that shows whom a link signs in as).
    func signInLinkAccount(tokenHash: [UInt8], at date: Date) async throws -> UUID?

    /// The account an OpenID identity (issuer and subject) signs in to, if it is known.
    func accountID(issuer: String, subject: String) async throws -> UUID?
    /// Links an OpenID identity to an existing account that has none yet (an email proves the address, not that the
    /// account is its holder's when another identity already signs in to it); returns whether the identity is
    /// linked to the account now (a concurrent sign-in of the same identity may have linked it).
    func linkFirstIdentity(_ identity: AccountIdentity) async throws -> Bool
    /// Creates an account and the identity that signs in to it, both or neither (a taken email throws
    /// ``ServiceError/Code/duplicateEmail``).
    func signUp(_ account: Account, identity: AccountIdentity) async throws

    /// Appends an entry to the audit log.
    func appendAudit(_ entry: AuditEntry) async throws
    /// The newest entries of the audit log, of one account or of all, newest first; at most `limit`.
    func auditEntries(accountID: UUID?, limit: Int) async throws -> [AuditEntry]
}
