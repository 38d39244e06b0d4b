import Foundation

/// How customers sign up and stay signed in to the account screen; built by the executable from `serve`'s flags.
public struct CustomerSettings: Sendable {
    /// Whether a first sign-in with a verified email creates an account (on ``signUpPlan``); off, only accounts an
    /// operator made (or linked) may sign in.
    public var allowsSelfSignUp: Bool
    /// The plan of a self-made account.
    public var signUpPlan: String
    /// How long a session may go unused before it ends.
    public var sessionIdleTimeout: TimeInterval
    /// How long a session lasts however much it is used.
    public var sessionLifetime: TimeInterval
    /// How long a sign-in link from `receiptverify account login-link` works.
    public var signInLinkLifetime: TimeInterval
    /// Sign-in attempts (starts, callbacks, links) one client address may make per minute.
    public var signInAttemptsPerMinute: Int
    /// Result keys one account may reveal per hour.
    public var keyRevealsPerHour: Int

    /// Creates settings; the defaults suit a hosted service.
    public init(
        allowsSelfSignUp: Bool = true, signUpPlan: String = "free", sessionIdleTimeout: TimeInterval = 2 * 3_600,
        sessionLifetime: TimeInterval = 7 * 86_400, signInLinkLifetime: TimeInterval = 15 * 60,
        signInAttemptsPerMinute: Int = 30, keyRevealsPerHour: Int = 10
    ) {
        self.allowsSelfSignUp = allowsSelfSignUp
        self.signUpPlan = signUpPlan
        self.sessionIdleTimeout = sessionIdleTimeout
        self.sessionLifetime = sessionLifetime
        self.signInLinkLifetime = signInLinkLifetime
        self.signInAttemptsPerMinute = signInAttemptsPerMinute
        self.keyRevealsPerHour = keyRevealsPerHour
    }
}
