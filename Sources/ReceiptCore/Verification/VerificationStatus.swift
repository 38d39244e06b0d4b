/// The `status` of a verification answer, with Apple's codes where Apple defines them (docs/api.md, "Status codes").
public enum VerificationStatus: Int, Sendable, CaseIterable {
    /// The receipt is valid.
    case valid = 0
    /// Apple's 21002: the receipt data was malformed.
    case malformed = 21002
    /// Apple's 21003: the receipt could not be authenticated.
    case notAuthentic = 21003
    /// Authentic, but it fails the app's checks (bundle ID, environment, test data, …).
    case rejected = 403

    /// A fixed human sentence per status; details go to logs, never into the answer.
    public var description: String {
        switch self {
        case .valid: return "Receipt valid"
        case .malformed: return "The receipt data is malformed or missing"
        case .notAuthentic: return "The receipt could not be authenticated"
        case .rejected: return "The receipt is authentic but does not pass this app's checks"
        }
    }

    /// The status a verification failure maps to: unreadable input is 21002, test data where it is not allowed
    /// is 403, every other failed check is 21003.
    public init(_ error: ReceiptError) {
        if error.isMalformed {
            self = .malformed
        } else if error.code == .testDataNotAllowed {
            self = .rejected
        } else {
            self = .notAuthentic
        }
    }
}
