import Crypto
import Foundation
import ReceiptCore

/// The account screen's use cases that are not about one account's objects: sign-up and sign-in, browser sessions,
/// one-time sign-in links and the audit log. Changes to keys and apps go through ``CustomerScope``, over the same
/// ``TenancyService`` functions the CLI calls.
public struct CustomerService: Sendable {
    /// Accounts, keys and apps (and the store, which is also a ``SessionStore``).
    public let tenancy: TenancyService
    /// Sign-up, session and rate-limit settings.
    public let settings: CustomerSettings
    /// Apple's side of notifications (test, recovery), when the server has an App Store Server API client.
    public var notificationSetup: NotificationSetup?
    /// Sign-in attempts per client address.
    let signInAttempts: AttemptBudget<String>
    /// Result-key reveals per account.
    let keyReveals: AttemptBudget<UUID>
    /// What an account's pages make happen outside: test events sent to its receivers, test notifications asked of
    /// Apple, recoveries from Apple's history (each an outbound call or rows kept for a month).
    let integrationActions = AttemptBudget<UUID>(limit: CustomerService.integrationActionsPerHour, window: 3_600)
    /// The most such actions one account may take in an hour.
    public static let integrationActionsPerHour = 60
    /// Signs the tokens of sessions and sign-in links, so a made-up one is refused without a database read.
    let tokens: BrowserTokens

    /// Creates the service.
    public init(tenancy: TenancyService, settings: CustomerSettings) {
        self.tenancy = tenancy
        self.settings = settings
        signInAttempts = AttemptBudget(limit: settings.signInAttemptsPerMinute, window: 60)
        keyReveals = AttemptBudget(limit: settings.keyRevealsPerHour, window: 3_600)
        tokens = BrowserTokens(key: tenancy.masterKey.derivedKey(purpose: "browser tokens"))
    }

    var store: any DataStore { tenancy.store }
    var now: Date { tenancy.now() }

    // MARK: Signing in

    /// Spends one sign-in attempt of `address`; throws ``ServiceError/Code/tooManyAttempts`` when they are used up.
    public func spendSignInAttempt(address: String) throws {
        guard signInAttempts.spend(address, at: now) else {
            throw ServiceError(.tooManyAttempts, "too many sign-in attempts from \(address); wait a minute")
        }
    }

    /// The account a verified identity signs in to: the one it is linked to; else the enabled account with its
    /// (verified) email when that account has no identity yet, which it is then linked to (an account another identity
    /// signs in to refuses); else, when self sign-up is on, a new account on the sign-up plan.
    public func account(signingIn identity: VerifiedIdentity, address: String?) async throws -> Account {
        do {
            return try await findOrCreateAccount(signingIn: identity, address: address)
        } catch let error as ServiceError where error.code == .duplicateEmail {
            // A concurrent first sign-in of the same person made the account first: it is found now.
            return try await findOrCreateAccount(signingIn: identity, address: address)
        }
    }

    private func findOrCreateAccount(signingIn identity: VerifiedIdentity, address: String?) async throws -> Account {
        guard let email = identity.email, identity.emailVerified else {
            throw ServiceError(.signInFailed, "the identity provider did not state a verified email")
        }
        // Emails are matched byte for byte: one outside ASCII could fold into another account's.
        guard email.utf8.allSatisfy({ $0 < 0x80 }) else {
            throw ServiceError(.signInFailed, "the email is not ASCII")
        }
        if let id = try await store.accountID(issuer: identity.issuer, subject: identity.subject),
            let account = try await store.account(id: id)
        {
            return account
        }
        let date = now
        if let account = try await store.account(email: email) {
            guard account.isEnabled else { throw ServiceError(.signInFailed, "account \(email) is disabled") }
            // An email links a new identity only to an account that has none: a recycled address (a former
            // employee's, an expired domain registered again) must not take over an account someone signs in to.
            let linked = try await store.linkFirstIdentity(
                AccountIdentity(
                    issuer: identity.issuer, subject: identity.subject, accountID: account.id, email: email,
                    createdAt: date))
            guard linked else {
                try await audit(
                    account.id, actor: email, "identity.link_refused", "issuer \(identity.issuer)", address: address)
                throw ServiceError(
                    .signInFailed,
                    "account \(email) signs in with another identity; use it, or ask the operator to link this one")
            }
            try await audit(account.id, actor: email, "identity.link", "issuer \(identity.issuer)", address: address)
            return account
        }
        guard settings.allowsSelfSignUp else {
            throw ServiceError(.signInFailed, "self sign-up is off and no account has the email \(email)")
        }
        let name = (try? Validation.displayName(identity.name ?? "", what: "name")) ?? email
        let account = Account(
            id: UUID(), name: name, email: try Validation.email(email), planName: settings.signUpPlan,
            isEnabled: true, createdAt: date, updatedAt: date, signedUpWith: .oidc)
        _ = try await tenancy.plan(named: settings.signUpPlan)
        try await store.signUp(
            account,
            identity: AccountIdentity(
                issuer: identity.issuer, subject: identity.subject, accountID: account.id, email: email,
                createdAt: date))
        try await audit(account.id, actor: email, "account.sign_up", "plan \(account.planName)", address: address)
        return account
    }

    /// Starts a session of `account` (which must be enabled); returns the cookie's token, shown to no one else.
    public func startSession(of account: Account, method: String, address: String?) async throws -> String {
        guard account.isEnabled else { throw ServiceError(.signInFailed, "account \(account.email) is disabled") }
        let token = tokens.make(purpose: "session")
        let date = now
        try await store.insertSession(
            AccountSession(
                id: UUID(), accountID: account.id, tokenHash: Self.hash(token), method: method, address: address,
                createdAt: date, lastUsedAt: date, expiresAt: date.addingTimeInterval(settings.sessionLifetime)))
        try await audit(account.id, actor: account.email, "session.start", "by \(method)", address: address)
        return token
    }

    /// The signed-in account of a session cookie's token; nil when the session is unknown, has gone unused past the
    /// idle timeout, has reached its lifetime, or its account is disabled (an ended session's row is deleted).
    public func signedIn(token: String, address: String?) async throws -> SignedIn? {
        // A token we did not make costs no database read.
        guard tokens.isAuthentic(token, purpose: "session"),
            let session = try await store.session(tokenHash: Self.hash(token))
        else { return nil }
        let date = now
        guard date < session.expiresAt, date.timeIntervalSince(session.lastUsedAt) < settings.sessionIdleTimeout else {
            _ = try await store.deleteSession(id: session.id)
            return nil
        }
        guard let account = try await store.account(id: session.accountID), account.isEnabled else { return nil }
        // One write a minute at most: idle expiry does not need the exact last use.
        if date.timeIntervalSince(session.lastUsedAt) >= 60 { try await store.touchSession(id: session.id, at: date) }
        return SignedIn(account: account, session: session, csrfToken: Self.csrfToken(sessionToken: token))
    }

    /// Ends a session (sign-out).
    public func endSession(_ signedIn: SignedIn, address: String?) async throws {
        _ = try await store.deleteSession(id: signedIn.session.id)
        try await audit(signedIn.account.id, actor: signedIn.account.email, "session.end", "sign-out", address: address)
    }

    /// Ends every session of an account (the CLI); returns how many there were.
    public func endSessions(account reference: String) async throws -> Int {
        let account = try await tenancy.account(reference)
        let count = try await store.deleteSessions(accountID: account.id)
        try await tenancy.audit(account.id, "session.end_all", "\(count) sessions")
        return count
    }

    /// The CSRF token of a session: an HMAC of its cookie's token, so it needs no storage and dies with the session.
    public static func csrfToken(sessionToken: String) -> String {
        let mac = HMAC<SHA256>.authenticationCode(
            for: Array("receiptverify csrf".utf8), using: SymmetricKey(data: Array(sessionToken.utf8)))
        return Base64URL.encode(mac)
    }

    static func hash(_ token: String) -> [UInt8] { Array(SHA256.hash(data: Array(token.utf8))) }

    // MARK: Sign-in links

    /// Makes a one-time sign-in link's token for an account (the CLI); it works once, for
    /// ``CustomerSettings/signInLinkLifetime``.
    public func makeSignInLink(account reference: String) async throws -> (token: String, expiresAt: Date) {
        let account = try await tenancy.account(reference)
        guard account.isEnabled else { throw ServiceError(.invalidArgument, "account \(account.email) is disabled") }
        let token = tokens.make(purpose: "link")
        let date = now
        let expiresAt = date.addingTimeInterval(settings.signInLinkLifetime)
        try await store.insertSignInLink(
            SignInLink(tokenHash: Self.hash(token), accountID: account.id, createdAt: date, expiresAt: expiresAt))
        try await tenancy.audit(account.id, "link.create", "expires \(expiresAt.ISO8601Format())")
        return (token, expiresAt)
    }

    /// The account a sign-in link's token signs in to, using the link up.
    /// The account a sign-in link would sign in to, without using it; nil for a link that is not one of ours, or is
    /// unknown, used or expired (a made-up link costs no database read).
    public func account(ofSignInLink token: String) async throws -> Account? {
        guard tokens.isAuthentic(token, purpose: "link"),
            let id = try await store.signInLinkAccount(tokenHash: Self.hash(token), at: now)
        else { return nil }
        return try await store.account(id: id)
    }

    public func account(usingSignInLink token: String) async throws -> Account {
        guard tokens.isAuthentic(token, purpose: "link"),
            let id = try await store.useSignInLink(tokenHash: Self.hash(token), at: now),
            let account = try await store.account(id: id)
        else { throw ServiceError(.signInFailed, "the sign-in link is unknown, used or expired") }
        return account
    }

    // MARK: Audit

    /// Records a change to an account as made by `actor` (a customer from a browser), through the tenancy log.
    func audit(_ accountID: UUID, actor: String, _ action: String, _ detail: String, address: String?) async throws {
        try await tenancy.acting(as: AuditActor(name: actor, address: address)).audit(accountID, action, detail)
    }

    /// The newest audit entries, of one account (id or email) or all; at most `limit` (1-10000).
    public func auditEntries(account reference: String?, limit: Int) async throws -> [AuditEntry] {
        guard (1...10_000).contains(limit) else {
            throw ServiceError(.invalidArgument, "the limit must be from 1 to 10000")
        }
        var accountID: UUID?
        if let reference { accountID = try await tenancy.account(reference).id }
        return try await store.auditEntries(accountID: accountID, limit: limit)
    }

    /// The scope of a signed-in account: its own keys, apps, usage and ledger, and nothing else.
    public func scope(of signedIn: SignedIn, address: String?) -> CustomerScope {
        CustomerScope(service: self, account: signedIn.account, address: address)
    }
}

/// A browser's signed-in account: the account, its session, and the session's CSRF token for the forms.
public struct SignedIn: Sendable {
    /// The account.
    public let account: Account
    /// The session.
    public let session: AccountSession
    /// The token every form of the session carries.
    public let csrfToken: String
}

/// The tokens of browser sessions and sign-in links: 32 random bytes and a 16-byte HMAC of them (under a key derived
/// from the master key, per purpose), base64url. Only the SHA-256 of a token is stored; the HMAC lets a token we did
/// not make be refused before any database read, so made-up cookies and links cost a stranger's request nothing.
struct BrowserTokens: Sendable {
    let key: SymmetricKey

    /// The length of a token's text.
    static let length = 64

    func make(purpose: String) -> String {
        let random = SecureRandom.bytes(32)
        return Base64URL.encode(random + mac(random, purpose: purpose))
    }

    func isAuthentic(_ token: String, purpose: String) -> Bool {
        guard token.utf8.count == Self.length, let bytes = Base64URL.decode(token), bytes.count == 48 else {
            return false
        }
        return ConstantTime.equals(Array(bytes[32...]), mac(Array(bytes[..<32]), purpose: purpose))
    }

    private func mac(_ random: [UInt8], purpose: String) -> [UInt8] {
        Array(HMAC<SHA256>.authenticationCode(for: Array(purpose.utf8) + [0] + random, using: key).prefix(16))
    }
}
