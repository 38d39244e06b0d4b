/// Why a request to Google did not give an answer.
public struct GooglePlayError: Error, Sendable, CustomStringConvertible {
    /// The kinds of failure.
    public enum Code: String, Sendable {
        /// Google refused the app's service account key (or the key cannot sign): the app's credentials are wrong.
        case credentials
        /// The service account may not act for the package (a 401 or 403 on a resource).
        case permission
        /// Google does not know the purchase or package (404), or said it is invalid (400, 410).
        case notFound
        /// Google's rate limit (429).
        case rateLimited
        /// Google failed, timed out or could not be reached.
        case unavailable
        /// Google answered something that is not its documented shape.
        case invalidResponse
    }

    /// The kind of failure.
    public let code: Code
    /// What happened, without secrets.
    public let reason: String
    /// Google's HTTP status, when it answered.
    public let status: Int?

    /// Creates an error.
    public init(_ code: Code, _ reason: String, status: Int? = nil) {
        self.code = code
        self.reason = reason
        self.status = status
    }

    public var description: String { reason }
}
