import ReceiptCore

/// The `status` codes of our answers (docs/api.md, "Status codes") and the fixed sentence that goes with each.
///
/// Apple's own codes (21000-21010, 21100-21199) keep Apple's meaning; the others mirror an HTTP status.
public enum ResponseStatus {
    /// A Google Play purchase awaiting payment: nothing may be delivered yet.
    public static let pending = 202
    /// The request body is not readable form or JSON, or a field has the wrong type.
    public static let badRequest = 400
    /// Missing or wrong API key or app token, or a disabled account or app.
    public static let unauthorized = 401
    /// The account's plan does not include the endpoint.
    public static let paymentRequired = 402
    /// Authentic, but it fails the app's checks.
    public static let rejected = VerificationStatus.rejected.rawValue
    /// No such route.
    public static let notFound = 404
    /// The route takes POST only.
    public static let methodNotAllowed = 405
    /// The body is over the configured limit.
    public static let payloadTooLarge = 413
    /// The body is neither form-urlencoded nor JSON.
    public static let unsupportedMediaType = 415
    /// A plan quota or rate limit was reached.
    public static let tooManyRequests = 429
    /// Apple could not be reached or answered nonsense, or we failed.
    public static let internalError = 500
    /// The database did not answer in time, or failed: retry shortly (`Retry-After`).
    public static let serviceUnavailable = 503

    /// The fixed human sentence for `status`; the details of a failure go to the log, never into the answer.
    public static func description(of status: Int) -> String {
        if let known = VerificationStatus(rawValue: status) { return known.description }
        switch status {
        case pending: return "The purchase is pending: the customer has not paid yet"
        case badRequest: return "The request body could not be read"
        case unauthorized: return "The API key or app token is not valid"
        case paymentRequired: return "The account's plan does not include this endpoint"
        case notFound: return "No such endpoint"
        case methodNotAllowed: return "This method is not accepted here; the Allow header names the ones that are"
        case payloadTooLarge: return "The request body is too large"
        case unsupportedMediaType: return "The body must be application/json or application/x-www-form-urlencoded"
        case tooManyRequests: return "Too many requests; slow down or raise the plan's limits"
        case internalError: return "The receipt could not be verified right now"
        case serviceUnavailable: return "The service is temporarily unavailable; retry shortly"
        // Apple's verifyReceipt codes, in Apple's words.
        case 21000: return "The request to the App Store was not made using the HTTP POST request method"
        case 21001: return "This status code is no longer sent by the App Store"
        case 21004: return "The shared secret does not match the shared secret on file for the account"
        case 21005: return "The receipt server was temporarily unable to provide the receipt; try again"
        case 21006: return "This receipt is valid but the subscription has expired"
        case 21007: return "This receipt is from the test environment but was sent to the production environment"
        case 21008: return "This receipt is from the production environment but was sent to the test environment"
        case 21009: return "Internal data access error; try again later"
        case 21010: return "The user account cannot be found or has been deleted"
        case 21100...21199: return "Internal data access error"
        default: return "Unknown status"
        }
    }

    /// The HTTP status of an answer with `status`: 200 for 0 and Apple's codes, the same number otherwise.
    public static func httpStatus(of status: Int) -> Int {
        switch status {
        case 0, 21000...21199: return 200
        case pending, 400...599: return status
        default: return 500
        }
    }
}
