/// How an app's receipts are verified.
public enum VerificationMode: String, Sendable, Hashable, CaseIterable, Codable {
    /// Locally, against the configured Apple roots (the default; no call to Apple).
    case local
    /// By Apple's `verifyReceipt` endpoint.
    case apple
    /// Locally, falling back to Apple's `verifyReceipt` when no local verdict can be reached.
    case localThenApple = "local-then-apple"
}
