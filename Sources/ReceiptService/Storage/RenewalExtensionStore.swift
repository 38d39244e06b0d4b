import Foundation
import ReceiptCore

/// Renewal-date extensions asked of Apple (docs/app-store-server-api.md, "Actions on a customer"), one per app and
/// request identifier: the identifier makes a repeated request answer what the first did instead of asking Apple
/// again, and a mass extension is polled under a lease by one server at a time until Apple completes it.
public protocol RenewalExtensionStore: StoreLifecycle {
    /// Takes `record`'s request identifier for the app: inserts it and returns nil, or returns the extension already
    /// held under it, unchanged, unless that one may be asked again (it failed before reaching Apple): then `record`
    /// replaces it. One whose outcome is unknown is returned as held: the caller looks at Apple before it is ever sent
    /// again (money review M6).
    func beginRenewalExtension(_ record: RenewalExtensionRecord) async throws -> RenewalExtensionRecord?
    /// Writes the extension's state and Apple's figures.
    func saveRenewalExtension(_ record: RenewalExtensionRecord) async throws
    /// The app's extensions, newest first.
    func renewalExtensions(appID: UUID, limit: Int) async throws -> [RenewalExtensionRecord]
    /// Up to `limit` mass extensions Apple has not completed whose poll is due by `now`, each leased until
    /// `now + lease` (their next poll moves past it).
    func claimRenewalExtensionPolls(dueBy now: Date, lease: Duration, limit: Int) async throws
        -> [RenewalExtensionRecord]
}

/// One renewal-date extension: a customer's subscription, or every active subscriber of a product.
public struct RenewalExtensionRecord: Sendable, Equatable {
    /// Where it stands.
    public enum State: String, Sendable, CaseIterable {
        /// Being sent to Apple.
        case sending
        /// Apple extended the customer's subscription.
        case extended
        /// Apple answered that it did not (`success: false`) or refused the request.
        case refused
        /// Not sent: the request could not leave (credentials, rate limit); it may be asked again.
        case failed
        /// Sent, and Apple's answer was lost (5xx, network): a request repeating the identifier first looks at
        /// Apple (the subscription's renewal date, or the mass extension's status) and sends it again only where
        /// Apple did not apply it.
        case unknown
        /// A mass extension Apple took and is working on.
        case requested
        /// A mass extension Apple completed.
        case complete

        /// Whether a request under the same identifier may be sent again without looking at Apple first.
        public var mayRetry: Bool { self == .failed }
    }

    public var appID: UUID
    public var requestIdentifier: String
    public var environment: StoreEnvironment
    /// The customer's subscription (one customer), or nil (mass).
    public var originalTransactionID: String?
    /// The product of a mass extension.
    public var productID: String?
    /// The storefronts a mass extension is limited to (none: all).
    public var storefronts: [String]
    public var days: Int
    public var reason: RenewalExtension.Reason
    public var state: State
    /// Apple's new expiry of the customer's subscription (milliseconds since 1970).
    public var effectiveDate: Int64?
    /// A mass extension's counts, and when Apple completed it (milliseconds since 1970).
    public var succeeded: Int?
    public var failed: Int?
    public var completeDate: Int64?
    /// Why it failed or was refused (Apple's error code in it), without any secret.
    public var error: String?
    /// Who asked: `api`, `cli` or `account EMAIL`.
    public var actor: String
    public var createdAt: Date
    public var updatedAt: Date
    /// A mass extension's next poll.
    public var nextPollAt: Date?
    /// One customer's: the subscription's renewal date (milliseconds since 1970) Apple stated just before it was
    /// sent, against which a lost answer is judged.
    public var expiresBefore: Int64?

    /// Creates a record.
    public init(
        appID: UUID, requestIdentifier: String, environment: StoreEnvironment, originalTransactionID: String?,
        productID: String?, storefronts: [String] = [], days: Int, reason: RenewalExtension.Reason, state: State,
        effectiveDate: Int64? = nil, succeeded: Int? = nil, failed: Int? = nil, completeDate: Int64? = nil,
        error: String? = nil, actor: String, createdAt: Date, updatedAt: Date, nextPollAt: Date? = nil,
        expiresBefore: Int64? = nil
    ) {
        self.expiresBefore = expiresBefore
        self.appID = appID
        self.requestIdentifier = requestIdentifier
        self.environment = environment
        self.originalTransactionID = originalTransactionID
        self.productID = productID
        self.storefronts = storefronts
        self.days = days
        self.reason = reason
        self.state = state
        self.effectiveDate = effectiveDate
        self.succeeded = succeeded
        self.failed = failed
        self.completeDate = completeDate
        self.error = error
        self.actor = actor
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.nextPollAt = nextPollAt
    }

    /// A `sending` record older than this is taken to have lost its server.
    public static let abandonedAfter: TimeInterval = 300

    /// Whether Apple may or may not have applied it, as of `now`: its answer was lost, or its server was lost while
    /// sending it.
    public func isInDoubt(at now: Date) -> Bool {
        state == .unknown || (state == .sending && now.timeIntervalSince(updatedAt) > Self.abandonedAfter)
    }

    /// The record as the API, the CLI and the account screen show it.
    public var json: JSONObject {
        var object = JSONObject(capacity: 14)
        object.append("request_identifier", .string(requestIdentifier))
        object.append("environment", .string(environment.rawValue))
        if let originalTransactionID { object.append("original_transaction_id", .string(originalTransactionID)) }
        if let productID { object.append("product_id", .string(productID)) }
        if !storefronts.isEmpty { object.append("storefront_country_codes", .array(storefronts.map { .string($0) })) }
        object.append("extend_by_days", .integer(Int64(days)))
        object.append("extend_reason_code", .integer(Int64(reason.rawValue)))
        object.append("state", .string(state.rawValue))
        if let effectiveDate {
            object.append("effective_date", .string(AppleDate.rfc3339(milliseconds: effectiveDate)))
        }
        if let succeeded { object.append("succeeded_count", .integer(Int64(succeeded))) }
        if let failed { object.append("failed_count", .integer(Int64(failed))) }
        if let completeDate { object.append("complete_date", .string(AppleDate.rfc3339(milliseconds: completeDate))) }
        if let error { object.append("error", .string(error)) }
        object.append("requested_by", .string(actor))
        object.append("created_at", .string(AppleDate.rfc3339(milliseconds: createdAt.millisecondsSince1970)))
        object.append("updated_at", .string(AppleDate.rfc3339(milliseconds: updatedAt.millisecondsSince1970)))
        return object
    }
}
