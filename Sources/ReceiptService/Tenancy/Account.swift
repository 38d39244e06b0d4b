import Foundation

/// A customer: holds API keys and apps, and is billed according to its plan.
public struct Account: Sendable, Hashable, Codable {
    /// The account's unique id.
    public var id: UUID
    /// A display name.
    public var name: String
    /// The contact email, unique across accounts, stored in lowercase.
    public var email: String
    /// The name of the account's ``Plan``.
    public var planName: String
    /// Whether the account may call the API; a disabled account gets 401.
    public var isEnabled: Bool
    /// When the account was created.
    public var createdAt: Date
    /// When the account was last changed.
    public var updatedAt: Date
    /// How the account came to be: by an operator (the CLI) or by self sign-up through the identity provider.
    public var signedUpWith: SignUpMethod

    /// Creates an account value.
    public init(
        id: UUID, name: String, email: String, planName: String, isEnabled: Bool, createdAt: Date, updatedAt: Date,
        signedUpWith: SignUpMethod = .operator
    ) {
        self.id = id
        self.name = name
        self.email = email
        self.planName = planName
        self.isEnabled = isEnabled
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.signedUpWith = signedUpWith
    }
}

/// How an account came to be.
public enum SignUpMethod: String, Sendable, Hashable, Codable {
    /// An operator created it with the CLI.
    case `operator`
    /// Its owner signed up through the OpenID Connect provider.
    case oidc
}
