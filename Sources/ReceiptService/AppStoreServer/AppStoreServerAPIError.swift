/// An App Store Server API call that did not give an answer: a stable ``Code`` and a reason for the log.
public struct AppStoreServerAPIError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What went wrong.
    public enum Code: String, Sendable {
        /// Apple refused the app's credentials (401), or they are unusable: a problem of that app's settings.
        case credentials
        /// Apple does not know the id (4040010 and the like), in either environment, after the retries.
        case notFound = "not_found"
        /// Apple's rate limit (429) or our own budget leaves no request within the call's time.
        case rateLimited = "rate_limited"
        /// Apple could not be reached or failed (5xx, network, timeout) within the call's time: retryable.
        case unavailable
        /// Apple answered something this client cannot read, or a signed value that does not verify.
        case invalidResponse = "invalid_response"
        /// Apple refused the request itself (4xx other than the above), with its `errorCode`.
        case refused
    }

    /// What went wrong.
    public let code: Code
    /// Apple's `errorCode`, when it gave one.
    public let appleErrorCode: Int?
    /// A one-line explanation.
    public let reason: String

    /// Creates an error.
    public init(_ code: Code, _ reason: String, appleErrorCode: Int? = nil) {
        self.code = code
        self.reason = reason
        self.appleErrorCode = appleErrorCode
    }

    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.code == rhs.code }

    public var description: String { reason }
}
