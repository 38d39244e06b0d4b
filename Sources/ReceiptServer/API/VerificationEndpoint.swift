import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import ReceiptCore
import ReceiptService

/// `POST /api`, `POST /apiencrypted` and the ledger routes: read the body, authenticate, admit the call under the
/// account's plan (endpoint, rate limit, monthly quota), verify (or look up, or confirm), count the call if it was
/// billable, answer.
///
/// Every answer is JSON with `status`, `description` and `request_id` (a successful `/apiencrypted` answer is that
/// JSON sealed with the app's key). What the log line and the metrics need goes into the context's
/// ``RequestRecord``; ``RequestLogMiddleware`` and ``MetricsMiddleware`` write them.
struct VerificationEndpoint: Sendable {
    /// Which route.
    enum Kind: String, Sendable {
        case plain = "/api"
        case encrypted = "/apiencrypted"
        case transactions = "/api/transactions"
        case delivered = "/api/transactions/delivered"
        /// `POST /api/transactions/consumption`: the backend reports how much of a purchase was used.
        case consumption = "/api/transactions/consumption"
        /// `POST /api/webhooks`: the app's webhook endpoints, run by the customer's own scripts.
        case webhooks = "/api/webhooks"
        /// `POST /api/customers`: a customer's entitlements, without a receipt.
        case customers = "/api/customers"
        /// `POST /api/offers/signature`: an offer signed with the app's In-App Purchase key.
        case offers = "/api/offers/signature"
        /// `POST /api/apple`: Apple's actions on a customer.
        case apple = "/api/apple"
        /// `POST /verifyReceipt/{token}` (``VerifyReceiptDropIn``).
        case dropIn = "/verifyReceipt/:token"

        /// The endpoint the plan's gate admits the call to (a confirmation is rate limited as a look-up).
        var usageEndpoint: UsageEndpoint {
            switch self {
            case .plain, .dropIn: .api
            case .encrypted: .apiEncrypted
            case .transactions, .delivered, .consumption, .webhooks, .apple: .transactions
            case .customers: .customers
            case .offers: .offers
            }
        }

        /// Whether an answer of this route is billed (a delivery confirmation is not).
        var isBilled: Bool { self != .delivered && self != .consumption && self != .webhooks && self != .apple }
    }

    let authenticator: Authenticator
    let failedAuthentications: FailedAuthentications
    let gate: UsageGate
    let verification: VerificationService
    let ledger: Ledger
    let statuses: SubscriptionStatusView
    /// Customer views, for `customer` in answers and `/api/customers`.
    let customers: CustomerLookup
    /// The CLI's functions, for `/api/webhooks`.
    let tenancy: TenancyService
    /// How long after a mass extension Apple is asked where it stands, and between asks.
    let extensionPollSeconds: TimeInterval
    let maximumBodySize: Int
    let bodies: BodyBudget
    let logger: Logger

    func respond(to request: Request, context: ServerContext, kind: Kind) async -> Response {
        let requestID = context.requestID
        var nonce: String?
        var outcome: VerificationOutcome
        var sealed: String?
        // The body's share of the memory budget, held until the answer is made; and whether the body was read whole
        // (if not, the connection closes after the answer rather than read what is left).
        var body = BodyReading()
        defer { bodies.release(body.reserved, for: body.address) }
        var parsedRequest: VerificationRequest?
        do {
            if kind == .dropIn {
                // The drop-in's key is the header's and its app the path's: an exchange without them is a 401,
                // whatever its body (a body Apple would not read is 21002 only for a caller with a key).
                _ = try await authenticate(
                    request, VerificationRequest(token: context.parameters.get("token")), from: context)
            }
            var parsed = try await read(request, context: context, into: &body, kind: kind)
            if kind == .dropIn {
                // Apple's body alone: the app is the path's, and nothing but the receipt is looked at.
                parsed = VerificationRequest(
                    apiKey: nil, token: context.parameters.get("token"), receipt: parsed.receipt,
                    password: parsed.password, excludeOldTransactions: parsed.excludeOldTransactions)
            }
            parsedRequest = parsed
            context.record.token = parsed.token
            nonce = parsed.nonce
            let caller = try await authenticate(request, parsed, from: context)
            context.record.caller = caller
            let ticket: UsageGate.Ticket
            switch try await gate.admit(caller, to: kind.usageEndpoint) {
            case .admitted(let admitted): ticket = admitted
            case .refused(let refusal): throw refusal
            }
            // Whatever happens from here, the reservation is settled: counted if the answer is a verdict.
            var billedStatus: Int?
            defer { gate.settle(ticket, status: billedStatus) }
            var requestLogger = logger
            // Only debug lines come from below here; the metadata copy is not free at thousands per second.
            if logger.logLevel <= .debug { requestLogger[metadataKey: "request_id"] = "\(requestID)" }
            switch kind {
            case .plain, .encrypted:
                outcome = await verification.verify(parsed, for: caller, logger: requestLogger)
                try await ledger.answer(
                    &outcome, request: parsed, caller: caller, requestID: requestID, logger: logger)
                await customers.attach(
                    to: &outcome, app: caller.app, recorded: outcome.ledgerRecorded, requestID: requestID,
                    logger: logger)
            case .dropIn:
                outcome = await verification.verify(parsed, for: caller, logger: requestLogger)
                // As Apple: a receipt is read first (21002, 21003 before anything else), then the shared secret.
                if outcome.isValid, let password = parsed.password, !password.isEmpty,
                    caller.sharedSecretMatches(password) == false
                {
                    outcome = .failure(21_004, detail: "the password is not the app's shared secret")
                }
            case .transactions:
                outcome = try await lookUp(parsed, for: caller)
                outcome.nonce = parsed.nonce
            case .delivered:
                outcome = try await confirmDeliveries(parsed, for: caller)
                outcome.nonce = parsed.nonce
            case .consumption:
                outcome = try await reportConsumption(parsed, for: caller)
                outcome.nonce = parsed.nonce
            case .webhooks:
                outcome = try await manageWebhooks(parsed, for: caller, address: context.clientAddress)
                outcome.nonce = parsed.nonce
            case .customers:
                outcome = try await customer(parsed, for: caller)
                outcome.nonce = parsed.nonce
            case .offers:
                // The answer's `nonce` is the signature's own (a request's is refused there).
                outcome = try signOffer(parsed, for: caller)
            case .apple:
                outcome = try await appleAction(parsed, for: caller, address: context.clientAddress)
                outcome.nonce = parsed.nonce
            }
            outcome.requestID = requestID
            if kind == .encrypted, outcome.isValid {
                sealed = try ResultSealing.seal(outcome.encodedAnswer, for: caller)
            }
            billedStatus = kind.isBilled ? outcome.status : nil
        } catch {
            outcome = Self.outcome(for: error)
            outcome.nonce = nonce
            outcome.requestID = requestID
        }
        var response =
            if kind == .dropIn, let answer = VerifyReceiptDropIn.answer(outcome, receiptText: parsedRequest?.receipt) {
                Self.response(answer, requestID: requestID)
            } else {
                Self.response(outcome, sealed: sealed, requestID: requestID)
            }
        if !body.isComplete, Self.hasBody(request) { response.headers[.connection] = "close" }
        context.record.outcome = RequestRecord.Outcome(
            status: outcome.status, source: outcome.source, input: outcome.input?.rawValue, detail: outcome.detail)
        return response
    }

    /// How far a request's body was read.
    struct BodyReading {
        /// Bytes of the memory budget held for it.
        var reserved = 0
        /// The client address it is held for.
        var address = ""
        /// Whether it was read to its end.
        var isComplete = false
    }

    /// Reads the body within the size limit and the memory budget, after checking a bearer key (a stranger's large
    /// body is then never read), and decodes it.
    private func read(_ request: Request, context: ServerContext, into body: inout BodyReading, kind: Kind)
        async throws -> VerificationRequest
    {
        // Apple's verifyReceipt read JSON whatever the content type said; clients of the drop-in send none.
        guard let format = kind == .dropIn ? .json : RequestBody.format(contentType: request.headers[.contentType])
        else {
            throw HTTPFailure(status: ResponseStatus.unsupportedMediaType, reason: "unsupported content type")
        }
        let length = request.headers[.contentLength].flatMap(Int.init)
        if let length, length > maximumBodySize {
            throw HTTPFailure(status: ResponseStatus.payloadTooLarge, reason: "Content-Length \(length)")
        }
        if request.headers[.authorization] != nil {
            try await checkKey(try Self.bearerOrField(request, nil), from: context)
        }
        let collected = try await Self.collect(
            request, limit: maximumBodySize, bodies: bodies, address: context.clientAddress, into: &body)
        do {
            return try RequestBody.decode(collected.readableBytesView, as: format)
        } catch {
            throw HTTPFailure(status: ResponseStatus.badRequest, reason: error.reason)
        }
    }

    /// Reads a request's body within `limit` bytes, holding its share of the memory budget in `body` as it arrives
    /// (``BodyBudget``).
    static func collect(
        _ request: Request, limit maximumBodySize: Int, bodies: BodyBudget, address: String,
        into body: inout BodyReading
    ) async throws -> ByteBuffer {
        let length = request.headers[.contentLength].flatMap(Int.init)
        if let length, length > maximumBodySize {
            throw HTTPFailure(status: ResponseStatus.payloadTooLarge, reason: "Content-Length \(length)")
        }
        body.address = address
        var collected = ByteBuffer()
        do {
            for try await chunk in request.body {
                let total = collected.readableBytes + chunk.readableBytes
                guard total <= maximumBodySize else {
                    throw HTTPFailure(
                        status: ResponseStatus.payloadTooLarge, reason: "body over \(maximumBodySize) bytes")
                }
                // Held as the bytes arrive, a granule at a time (the declared length is not taken on trust).
                if total > body.reserved {
                    let granules = (total - body.reserved + BodyBudget.granule - 1) / BodyBudget.granule
                    let step = granules * BodyBudget.granule
                    guard bodies.reserve(step, holding: body.reserved, for: address) else { throw Self.overloaded }
                    body.reserved += step
                }
                collected.writeImmutableBuffer(chunk)
            }
        } catch let failure as HTTPFailure {
            throw failure
        } catch {
            // A malformed chunked body, or a client that went away or was closed for taking too long: the client's
            // doing, not a server error (and no answer may reach it).
            throw HTTPFailure(
                status: ResponseStatus.badRequest, reason: "the body could not be read: \(type(of: error))")
        }
        body.isComplete = true
        return collected
    }

    /// The answer when the memory budget for bodies is spent: come back in a second.
    static let overloaded = HTTPFailure(
        status: ResponseStatus.serviceUnavailable, reason: "the memory budget for request bodies is spent",
        retryAfter: 1)

    /// Whether the request declares a body (a length above zero, or chunked transfer).
    static func hasBody(_ request: Request) -> Bool {
        if let length = request.headers[.contentLength].flatMap(Int.init) { return length > 0 }
        return request.headers[.transferEncoding] != nil
    }

    /// Checks a bearer key before the body is read: an unknown key is refused (and counted against the address)
    /// without reading what may be megabytes.
    private func checkKey(_ apiKey: String?, from context: ServerContext) async throws {
        try await failedAuthentications.guarding(context.clientAddress) { mayQueryStore in
            try await authenticator.checkKey(apiKey, mayQueryStore: mayQueryStore, logger: logger)
        }
    }

    /// The caller that the request's key and token identify.
    private func authenticate(_ request: Request, _ parsed: VerificationRequest, from context: ServerContext)
        async throws -> Caller
    {
        let apiKey = try Self.bearerOrField(request, parsed.apiKey)
        return try await failedAuthentications.guarding(context.clientAddress) { mayQueryStore in
            try await authenticator.authenticate(
                apiKey: apiKey, token: parsed.token, mayQueryStore: mayQueryStore, logger: logger)
        }
    }

    /// The API key from `Authorization: Bearer …` (or HTTP Basic with the key as the user, for libraries that can
    /// only put it in the URL) or the `apikey` field; both present and different is refused.
    static func bearerOrField(_ request: Request, _ field: String?) throws -> String? {
        guard let header = request.headers[.authorization] else { return field }
        let parts = header.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, ["bearer", "basic"].contains(parts[0].lowercased()) else {
            throw ServiceError(.unauthorized, "Authorization header is neither a bearer token nor basic")
        }
        var bearer = parts[1].trimmingCharacters(in: .whitespaces)
        if parts[0].lowercased() == "basic" {
            // `KEY:` in base64: the key is the user; a password, if any, is ignored.
            guard bearer.utf8.count <= 4 * VerificationRequest.maximumFieldLength,
                let decoded = Data(base64Encoded: bearer), let text = String(data: decoded, encoding: .utf8),
                let user = text.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false).first
            else { throw ServiceError(.unauthorized, "Authorization basic credentials are malformed") }
            bearer = String(user)
        }
        if let field, field != bearer { throw ServiceError(.unauthorized, "apikey and bearer token differ") }
        return bearer
    }

    /// The answer for a failure outside verification, through one exhaustive mapping of error codes.
    static func outcome(for error: any Error) -> VerificationOutcome {
        switch error {
        case let failure as HTTPFailure:
            var outcome = VerificationOutcome.failure(
                failure.status, retryable: failure.retryAfter != nil, detail: failure.reason)
            if let seconds = failure.retryAfter { outcome.body["retry_after"] = .integer(Int64(seconds)) }
            if let description = failure.description { outcome.body["description"] = .string(description) }
            return outcome
        case let refusal as UsageGate.Refusal:
            return outcome(for: refusal)
        case let throttled as Throttled:
            return tooManyRequests(detail: "too many failed authentications from this address", wait: throttled.wait) {
                "Too many failed authentications from this address; retry after \($0) s"
            }
        case let error as ServiceError:
            switch error.code {
            case .unauthorized: return .failure(ResponseStatus.unauthorized, detail: error.reason)
            case .throttled: return outcome(for: Throttled(wait: .seconds(1)))
            case .appleUnavailable:
                return .failure(ResponseStatus.internalError, retryable: true, detail: error.reason)
            case .claimedByOtherUser:
                return .rejected(source: .none, reason: error.reason, description: Ledger.claimedByOtherUser)
            case .storage, .unavailable:
                // The database failed or did not answer in time: the client should come back in a moment.
                var outcome = VerificationOutcome.failure(
                    ResponseStatus.serviceUnavailable, retryable: true, detail: error.reason)
                outcome.body["retry_after"] = .integer(1)
                return outcome
            case .invalidArgument, .duplicateEmail, .unknownPlan, .unknownAccount, .unknownApp, .unknownKey,
                .wrongMasterKey, .invalidMasterKey, .corruptSecret, .notConfigured, .signInFailed, .tooManyAttempts:
                return .failure(ResponseStatus.internalError, detail: "\(error.code.rawValue): \(error.reason)")
            }
        default:
            return .failure(ResponseStatus.internalError, detail: "\(error)")
        }
    }

    /// The answer to a call the plan refused: 401, 402, or 429 with `retry_after` (seconds) and, for the quota,
    /// `quota_resets_at`; the description names the limit.
    static func outcome(for refusal: UsageGate.Refusal) -> VerificationOutcome {
        switch refusal {
        case .accountDisabled:
            return .failure(ResponseStatus.unauthorized, detail: "the account is disabled")
        case .notInPlan(let plan):
            return .failure(ResponseStatus.paymentRequired, detail: "plan '\(plan)' does not include /apiencrypted")
        case .rateLimited(let plan, let perSecond, let wait):
            return tooManyRequests(detail: "rate limit of plan '\(plan)' (\(perSecond)/s)", wait: wait) {
                "Rate limit reached: plan '\(plan)' allows \(perSecond) requests per second; retry after \($0) s"
            }
        case .quotaExhausted(let plan, let quota, let resetsAt):
            let seconds = Self.wholeSeconds(.seconds(resetsAt.timeIntervalSinceNow))
            let reset = UsageDay(containing: resetsAt).description + "T00:00:00Z"
            var outcome = VerificationOutcome.failure(
                ResponseStatus.tooManyRequests, detail: "monthly quota of plan '\(plan)' (\(quota)) used up")
            outcome.body["description"] = .string(
                "Monthly quota reached: plan '\(plan)' includes \(quota) verifications a month; it resets at \(reset)")
            outcome.body["retry_after"] = .integer(Int64(seconds))
            outcome.body["quota_resets_at"] = .string(reset)
            return outcome
        }
    }

    /// A 429: the description names the limit and the wait in whole seconds, also given as `retry_after` (and the
    /// `Retry-After` header).
    static func tooManyRequests(detail: String, wait: Duration, description: (Int) -> String) -> VerificationOutcome {
        let seconds = wholeSeconds(wait)
        var outcome = VerificationOutcome.failure(ResponseStatus.tooManyRequests, detail: detail)
        outcome.body["description"] = .string(description(seconds))
        outcome.body["retry_after"] = .integer(Int64(seconds))
        return outcome
    }

    /// A wait in whole seconds, rounded up and at least 1, as `Retry-After` wants it.
    static func wholeSeconds(_ duration: Duration) -> Int {
        let components = duration.components
        return max(1, Int(components.seconds) + (components.attoseconds > 0 ? 1 : 0))
    }

    /// The HTTP answer of the verifyReceipt drop-in: Apple's JSON, HTTP 200, as Apple answered every verdict.
    static func response(_ answer: JSONObject, requestID: String) -> Response {
        var headers = HTTPFields()
        headers[RequestID.header] = requestID
        headers[.cacheControl] = "no-store"
        headers[.contentType] = "application/json"
        return Response(
            status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: JSONValue.object(answer).encoded)))
    }

    /// The HTTP answer for `outcome`; a 405 names the `allowed` methods.
    static func response(
        _ outcome: VerificationOutcome, sealed: String?, requestID: String, allowed: String = "POST"
    ) -> Response {
        var headers = HTTPFields()
        headers[RequestID.header] = requestID
        headers[.cacheControl] = "no-store"
        let bytes: [UInt8]
        if let sealed {
            headers[.contentType] = "text/plain; charset=utf-8"
            bytes = Array(sealed.utf8)
        } else {
            headers[.contentType] = "application/json"
            bytes = outcome.encodedAnswer
        }
        if outcome.status == ResponseStatus.methodNotAllowed { headers[.allow] = allowed }
        if outcome.status == ResponseStatus.unauthorized { headers[.wwwAuthenticate] = "Bearer" }
        if case .integer(let seconds)? = outcome.body["retry_after"] { headers[.retryAfter] = "\(seconds)" }
        return Response(
            status: .init(code: ResponseStatus.httpStatus(of: outcome.status)), headers: headers,
            body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
    }

}

/// An address over its budget of failed authentications asked for a lookup the caches cannot answer.
struct Throttled: Error {
    let wait: Duration
}

/// A failure of the HTTP exchange itself (method, media type, size, unreadable body, no memory for the body).
struct HTTPFailure: Error {
    let status: Int
    let reason: String
    /// Seconds after which a retry may succeed, for failures of the moment.
    var retryAfter: Int?
    /// The answer's `description` in place of the status's fixed one: set where the reason names no input of the
    /// client's and tells the caller what to fix.
    var description: String?

    init(status: Int, reason: String, retryAfter: Int? = nil, description: String? = nil) {
        self.status = status
        self.reason = reason
        self.retryAfter = retryAfter
        self.description = description
    }

    /// A 400 whose answer says `reason` (which names no input of the client's) as its description, capitalized unless it
    /// starts with a field's name.
    static func badRequest(saying reason: String) -> HTTPFailure {
        // A sentence that starts with a field's name keeps the name as the API spells it.
        let firstWord = reason.prefix { $0 != " " }
        let keepsCase = firstWord.contains("_")
        return HTTPFailure(
            status: ResponseStatus.badRequest, reason: reason,
            description: keepsCase ? reason : reason.prefix(1).uppercased() + reason.dropFirst())
    }
}
