import Logging
import ReceiptCore

/// Apple's `verifyReceipt` endpoint, as the verification service needs it; `Clients` implements it over HTTP.
///
/// [Apple's documentation](https://developer.apple.com/documentation/appstorereceipts/verifyreceipt)
public protocol AppleReceiptVerifying: Sendable {
    /// Sends `receiptData` (standard base64) to Apple, production first, following 21007/21008 to the other
    /// environment and retrying what Apple says may succeed later.
    ///
    /// Throws ``ServiceError/Code/appleUnavailable`` when no `verifyReceipt` answer could be had in time.
    func verifyReceipt(
        _ receiptData: String, password: String?, excludeOldTransactions: Bool, logger: Logger
    ) async throws -> AppleReceiptAnswer
}

/// One `verifyReceipt` answer, exactly as Apple sent it.
public struct AppleReceiptAnswer: Sendable, Equatable {
    /// Apple's JSON, every field kept in Apple's order.
    public var body: JSONObject
    /// Apple's `status`.
    public var status: Int
    /// The environment whose endpoint gave the answer.
    public var answeredBy: StoreEnvironment
    /// Whether Apple said a retry may succeed (`is-retryable`, or a status Apple documents as temporary) and our
    /// own retries ran out.
    public var isRetryable: Bool

    /// Creates an answer value.
    public init(body: JSONObject, status: Int, answeredBy: StoreEnvironment, isRetryable: Bool) {
        self.body = body
        self.status = status
        self.answeredBy = answeredBy
        self.isRetryable = isRetryable
    }
}
