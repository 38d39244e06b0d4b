import Foundation

/// A signed-in browser of an account: found by the SHA-256 of its cookie's token (the token itself is never stored).
public struct AccountSession: Sendable, Equatable {
    /// The session's id.
    public var id: UUID
    /// The account signed in.
    public var accountID: UUID
    /// SHA-256 of the cookie's token.
    public var tokenHash: [UInt8]
    /// How the browser signed in: `oidc` or `link`.
    public var method: String
    /// The client address that signed in, for the audit log.
    public var address: String?
    /// When it was created.
    public var createdAt: Date
    /// When it was last used (idle expiry counts from here).
    public var lastUsedAt: Date
    /// When it ends whatever its use (absolute expiry).
    public var expiresAt: Date

    /// Creates a session value.
    public init(
        id: UUID, accountID: UUID, tokenHash: [UInt8], method: String, address: String?, createdAt: Date,
        lastUsedAt: Date, expiresAt: Date
    ) {
        self.id = id
        self.accountID = accountID
        self.tokenHash = tokenHash
        self.method = method
        self.address = address
        self.createdAt = createdAt
        self.lastUsedAt = lastUsedAt
        self.expiresAt = expiresAt
    }
}

/// A one-time, short-lived sign-in link (`receiptverify account login-link`), found by the SHA-256 of its token.
public struct SignInLink: Sendable, Equatable {
    /// SHA-256 of the link's token.
    public var tokenHash: [UInt8]
    /// The account it signs in.
    public var accountID: UUID
    /// When it was made.
    public var createdAt: Date
    /// When it stops working.
    public var expiresAt: Date
    /// When it was used, if it was.
    public var usedAt: Date?

    /// Creates a link value.
    public init(tokenHash: [UInt8], accountID: UUID, createdAt: Date, expiresAt: Date, usedAt: Date? = nil) {
        self.tokenHash = tokenHash
        self.accountID = accountID
        self.createdAt = createdAt
        self.expiresAt = expiresAt
        self.usedAt = usedAt
    }
}

/// An OpenID Connect identity (the issuer's `iss` and `sub`) that signs in to an account.
public struct AccountIdentity: Sendable, Equatable {
    /// The identity provider's issuer URL.
    public var issuer: String
    /// The provider's stable id of the person.
    public var subject: String
    /// The account it signs in to.
    public var accountID: UUID
    /// The verified email the provider stated when the identity was linked.
    public var email: String
    /// When it was linked.
    public var createdAt: Date

    /// Creates an identity value.
    public init(issuer: String, subject: String, accountID: UUID, email: String, createdAt: Date) {
        self.issuer = issuer
        self.subject = subject
        self.accountID = accountID
        self.email = email
        self.createdAt = createdAt
    }
}

/// One change to an account, recorded: who, what, when, from which address.
public struct AuditEntry: Sendable, Equatable {
    /// The entry's id.
    public var id: UUID
    /// The account changed.
    public var accountID: UUID
    /// Who made the change: an email of the account's, or `operator` for the CLI.
    public var actor: String
    /// What was done (`key.create`, `app.update`, …).
    public var action: String
    /// Which object, and how (never a secret).
    public var detail: String
    /// The client address, for changes made from a browser.
    public var address: String?
    /// When.
    public var at: Date

    /// Creates an entry value.
    public init(
        id: UUID, accountID: UUID, actor: String, action: String, detail: String, address: String?, at: Date
    ) {
        self.id = id
        self.accountID = accountID
        self.actor = actor
        self.action = action
        self.detail = detail
        self.address = address
        self.at = at
    }
}

/// Who makes a change, as the audit log records it.
public struct AuditActor: Sendable, Equatable {
    /// The operator, at the CLI.
    public static let `operator` = AuditActor(name: "operator", address: nil)

    /// An email of the account, or `operator`.
    public var name: String
    /// The client address of a browser.
    public var address: String?

    /// Creates an actor.
    public init(name: String, address: String?) {
        self.name = name
        self.address = address
    }
}
