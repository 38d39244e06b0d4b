import ReceiptCore

/// The answer to one verification: its `status` and the JSON body a client reads, plus what the log needs.
///
/// The body is rendered in one place, ``answer``: Apple's shape as the verdict made it (`status`, `description`,
/// `environment`, `receipt`, `latest_receipt_info`, … or a failure's `status`, `description`, `retryable`, …), then
/// our fields in a fixed order: `assurance`, `repairs`, `transactions`, `subscriptions`, `nonce`, `request_id`.
public struct VerificationOutcome: Sendable {
    /// Where the verdict came from.
    public enum Source: String, Sendable {
        /// Our own verifier.
        case local
        /// Apple's `verifyReceipt`.
        case apple
        /// The Google Play Developer API.
        case googlePlay = "google_play"
        /// Neither: the request was refused before verification.
        case none
    }

    /// Our `status` (0, one of Apple's codes, or an HTTP-like code).
    public var status: Int
    /// Apple's part of the answer (or a failure's), before our fields are added by ``answer``.
    public var body: JSONObject
    /// Where the verdict came from.
    public var source: Source
    /// Why it failed, for the log only (never in the body).
    public var detail: String?
    /// The kind of input that was judged; nil when no receipt could be read.
    public var input: ReceiptInput.Kind?
    /// What was repaired in the client's text (valid answers only).
    public var repairs: JSONValue?
    /// The delivery decision per transaction (valid answers only).
    public var transactions: [JSONValue]?
    /// The stored statuses of the input's subscriptions, kept current by Apple's notifications (valid answers only).
    public var subscriptions: [JSONValue]?
    /// The customer the answer's user is (``CustomerView/json``; valid answers with a user only).
    public var customer: JSONObject?
    /// Whether the ledger wrote this answer's recording (it was not answered from memory).
    public var ledgerRecorded = false
    /// The user the answer is for: the request's `app_user_id`, else the one the input names (set by the ledger).
    public var user: String?
    /// The verdict's transactions, for the ledger (valid answers only).
    public var purchases: [PurchaseTransaction] = []
    /// The user the input itself names: a lone StoreKit 2 transaction's `appAccountToken`, taken before Apple's
    /// history is merged into ``purchases`` (the user of every purchase merged).
    public var inputUser: String?
    /// Purchases Apple's history added that name another app account than the input's (the Apple ID is shared by two
    /// of the app's users): recorded for the ledger, never claimed for or delivered to the presenter (money review M13).
    public var otherAccounts: [PurchaseTransaction] = []
    /// Apple's verified renewal infos of the customer's subscriptions (an enriched answer's), whose statuses the
    /// ledger writes.
    public var renewals: [JSONObject] = []
    /// The verdict's environment, for the ledger (valid answers only).
    public var environment: StoreEnvironment?
    /// The store whose purchases the verdict holds, for the ledger.
    public var store: Store = .appStore
    /// Subscriptions' statuses the store stated beside the purchases (Google Play's), written with the recording.
    public var statedStatuses: [SubscriptionStatus] = []
    /// Reads from the store the token of the purchase that the purchase of a token replaced (Google Play's
    /// `linkedPurchaseToken` of the linked purchase), nil when it states none or cannot be read: the ledger follows
    /// a chain of replacements through purchases it never recorded (money review M16).
    public var earlierLinkedPurchaseToken: (@Sendable (String) async -> String?)?
    /// The receipt's environment, when a 403 is for an environment the app does not allow (the verifyReceipt
    /// drop-in answers 21007 or 21008 then).
    public var disallowedEnvironment: StoreEnvironment?
    /// How the purchase was proven (valid answers only).
    public var assurance: Assurance?
    /// The client's `nonce`, echoed.
    public var nonce: String?
    /// The request's id.
    public var requestID: String?

    /// Creates an outcome.
    public init(status: Int, body: JSONObject, source: Source, detail: String? = nil) {
        self.status = status
        self.body = body
        self.source = source
        self.detail = detail
    }

    /// A failure answer: `status`, its fixed `description`, and `retryable: true` when a retry may succeed.
    public static func failure(
        _ status: Int, source: Source = .none, retryable: Bool = false, detail: String? = nil
    ) -> VerificationOutcome {
        var body = JSONObject(capacity: 4)
        body.append("status", .integer(Int64(status)))
        body.append("description", .string(ResponseStatus.description(of: status)))
        if retryable { body.append("retryable", .bool(true)) }
        return VerificationOutcome(status: status, body: body, source: source, detail: detail)
    }

    /// A 403: the receipt is authentic but fails the app's checks; `description` replaces the fixed one where given.
    public static func rejected(source: Source, reason: String, description: String? = nil) -> VerificationOutcome {
        var outcome = failure(ResponseStatus.rejected, source: source, detail: reason)
        if let description { outcome.body["description"] = .string(description) }
        return outcome
    }

    /// A 403 for an app's check that failed.
    static func rejected(_ rejection: TenantChecks.Rejection, source: Source) -> VerificationOutcome {
        var outcome = rejected(source: source, reason: rejection.reason, description: rejection.description)
        outcome.disallowedEnvironment = rejection.environment
        return outcome
    }

    /// Our fields of the answer, in their order: `assurance` (valid answers), `repairs`, `transactions`,
    /// `subscriptions`, `customer`, `nonce`, `request_id`, each where set.
    private var ownFields: [(key: String, value: JSONValue)] {
        var fields: [(key: String, value: JSONValue)] = []
        fields.reserveCapacity(7)
        if isValid, let assurance { fields.append(("assurance", .string(assurance.rawValue))) }
        if let repairs { fields.append(("repairs", repairs)) }
        if let transactions { fields.append(("transactions", .array(transactions))) }
        if let subscriptions { fields.append(("subscriptions", .array(subscriptions))) }
        if let customer { fields.append(("customer", .object(customer))) }
        if let nonce { fields.append(("nonce", .string(nonce))) }
        if let requestID { fields.append(("request_id", .string(requestID))) }
        return fields
    }

    /// The JSON body a client reads: the body with our fields assigned.
    public var answer: JSONObject {
        var answer = body
        for field in ownFields { answer[field.key] = field.value }
        return answer
    }

    /// ``answer``'s JSON text, written directly: the body's members, then ours, with no object built for the whole
    /// (the same bytes as `JSONValue.object(answer).encoded`; `AnswerWritingTests`).
    public var encodedAnswer: [UInt8] {
        // One of ours the body already has takes that member's place, as assigning it does.
        let ours = ownFields
        var placed = [Bool](repeating: false, count: ours.count)
        var writer = JSONObjectWriter(capacity: 16_384)
        for member in body.members {
            if let index = ours.firstIndex(where: { $0.key == member.key }), !placed[index] {
                writer.write(member.key, ours[index].value)
                placed[index] = true
            } else {
                writer.write(member.key, member.value)
            }
        }
        for (index, member) in ours.enumerated() where !placed[index] { writer.write(member.key, member.value) }
        return writer.finish()
    }

    /// How a valid answer's purchase was proven.
    public enum Assurance: String, Sendable {
        /// A receipt signed by Apple (a unified receipt, or an iOS 6 transaction receipt), verified here or by Apple.
        case signedReceipt = "signed-receipt"
        /// A StoreKit 2 JWS signed by Apple.
        case signedJWS = "signed-jws"
        /// An id alone, resolved through the App Store Server API: Apple vouches for the purchase, but nothing proves
        /// the caller holds it.
        case idLookup = "id-lookup"
        /// A Google Play purchase token, whose purchase the Google Play Developer API stated: Google vouches for the
        /// purchase, and the token (given to the buyer's device only) for its holder.
        case playDeveloperAPI = "google-play-api"
    }

    /// Whether the receipt was found valid.
    public var isValid: Bool { status == 0 }
}
