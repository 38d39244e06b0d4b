/// An error from tenancy and policy: a stable ``Code`` for programs, a ``reason`` for people and logs.
///
/// Equality compares codes only, so tests can write `#expect(throws: ServiceError(.duplicateEmail))`.
/// A reason never contains a secret (API key, result key, shared secret, private key).
public struct ServiceError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What went wrong, stable across releases.
    public enum Code: String, Sendable, CaseIterable {
        /// An argument is malformed (bad email, empty name, bad bundle ID, …); the reason names it.
        case invalidArgument = "invalid_argument"
        /// Another account already uses this email address.
        case duplicateEmail = "duplicate_email"
        /// No plan has this name.
        case unknownPlan = "unknown_plan"
        /// No account has this id or email.
        case unknownAccount = "unknown_account"
        /// No app has this token (or it belongs to another account).
        case unknownApp = "unknown_app"
        /// No API key has this id (or it belongs to another account).
        case unknownKey = "unknown_key"
        /// The master key cannot decrypt this database's secrets.
        case wrongMasterKey = "wrong_master_key"
        /// The master key is missing or malformed.
        case invalidMasterKey = "invalid_master_key"
        /// A stored secret failed to decrypt or authenticate (corruption or tampering).
        case corruptSecret = "corrupt_secret"
        /// The API key or app token is missing, unknown, revoked or disabled, or the app is another account's.
        case unauthorized = "unauthorized"
        /// The client failed to authenticate too often: what it asks would reach the database, and is refused for a
        /// while (429).
        case throttled = "throttled"
        /// Apple's servers could not be reached in time, or answered something that is not a `verifyReceipt` answer.
        case appleUnavailable = "apple_unavailable"
        /// The server is not set up for what was asked (no trust anchors for local verification, no Apple client).
        case notConfigured = "not_configured"
        /// The database did not answer in time (an outage, an overload): retryable, 503.
        case unavailable = "unavailable"
        /// The database failed or holds data this version cannot read; details are in ``ServiceError/reason``.
        case storage = "storage"
        /// A purchase belongs to another user of the app, whose claims policy refuses it (``ClaimsPolicy/refuse``):
        /// the recording was undone, 403.
        case claimedByOtherUser = "claimed_by_other_user"
        /// A browser sign-in failed: the identity provider's answer did not check out, the email is not verified,
        /// sign-up is closed, or a sign-in link is unknown, used or expired. The reason says which (for the log); the
        /// page says less.
        case signInFailed = "sign_in_failed"
        /// Too many attempts of a rate-limited action (sign-in, revealing a key) from one address or account.
        case tooManyAttempts = "too_many_attempts"
    }

    /// What went wrong.
    public let code: Code
    /// A one-line explanation for people and logs.
    public let reason: String

    /// Creates an error with a code and an optional explanation.
    public init(_ code: Code, _ reason: String = "") {
        self.code = code
        self.reason = reason
    }

    public static func == (lhs: ServiceError, rhs: ServiceError) -> Bool { lhs.code == rhs.code }

    public var description: String { reason.isEmpty ? code.rawValue : reason }
}
