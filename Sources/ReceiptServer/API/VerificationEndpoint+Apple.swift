import Foundation
import ReceiptCore
import ReceiptService

/// `POST /api/apple` (docs/app-store-server-api.md, "Actions on a customer"): Apple's actions on a customer, asked
/// with the app's App Store Server API credentials. One route, an `action` per call, each through the same
/// ``AppleActions`` as the CLI's and the account screen's, audited under the key that made it. Rate limited as a
/// ledger look-up, never billed; Apple's own budget for the app paces every request to Apple.
extension VerificationEndpoint {
    /// The actions `/api/apple` takes.
    static let appleActions = [
        "set_app_account_token", "extend_renewal_date", "mass_extend_renewal_date", "renewal_extensions",
        "app_transaction_info",
    ]

    func appleAction(_ request: VerificationRequest, for caller: Caller, address: String) async throws
        -> VerificationOutcome
    {
        func refuse(_ reason: String) -> HTTPFailure { .badRequest(saying: reason) }
        guard let storeKit = verification.storeKit else {
            throw HTTPFailure(status: ResponseStatus.internalError, reason: "this server does not ask Apple")
        }
        let actions = AppleActions(
            storeKit: storeKit,
            tenancy: tenancy.acting(
                as: AuditActor(name: "API key \(caller.apiKeyID.uuidString.lowercased())", address: address)),
            requester: "api")
        let app = caller.app
        let environment = try request.namedEnvironment()
        var body = JSONObject(capacity: 8)
        body.append("status", .integer(0))
        do {
            switch request.action ?? "" {
            case "set_app_account_token":
                let original = try Self.required(request.originalTransactionID, "original_transaction_id")
                guard let token = UUID(uuidString: try Self.required(request.appAccountToken, "app_account_token"))
                else {
                    throw refuse("app_account_token must be a UUID")
                }
                let done = try await actions.setAppAccountToken(
                    app: app, originalTransactionID: original, token: token, environment: environment)
                body.append("description", .string("App account token set"))
                body.append("original_transaction_id", .string(original))
                body.append("app_account_token", .string(token.uuidString.lowercased()))
                body.append("environment", .string(done.environment.rawValue))
                body.append("claimed", .bool(done.claimed))
            case "extend_renewal_date":
                let original = try Self.required(request.originalTransactionID, "original_transaction_id")
                let record = try await actions.extendRenewalDate(
                    app: app, originalTransactionID: original, try renewalExtension(request), environment: environment)
                return Self.extensionOutcome(record, body: body)
            case "mass_extend_renewal_date":
                let product = try Self.required(request.productID, "product_id")
                let storefronts = try RenewalExtension.storefronts(request.storefrontCountryCodes ?? [])
                let record = try await actions.massExtendRenewalDate(
                    app: app, productID: product, storefronts: storefronts, try renewalExtension(request),
                    environment: environment ?? .production, pollAfter: extensionPollSeconds)
                return Self.extensionOutcome(record, body: body)
            case "renewal_extensions":
                var records = try await actions.extensions(app: app, limit: request.limit ?? Self.defaultPageSize)
                if let identifier = request.requestIdentifier, !identifier.isEmpty {
                    records = records.filter { $0.requestIdentifier == identifier }
                }
                body.append("description", .string("The app's renewal-date extensions"))
                body.append("extensions", .array(records.map { .object($0.json) }))
            case "app_transaction_info":
                let id = try Self.required(request.transactionID, "transaction_id")
                let signed = try await actions.appTransaction(app: app, transactionID: id, environment: environment)
                body.append("description", .string("The customer's app transaction"))
                body.append("environment", .string(signed.environment.rawValue))
                body.append("app_transaction", .object(signed.receipt))
            case "":
                throw refuse("action is required: one of \(Self.appleActions.joined(separator: ", "))")
            default:
                throw refuse("action must be one of \(Self.appleActions.joined(separator: ", "))")
            }
        } catch let error as ServiceError where error.code == .invalidArgument {
            throw refuse(error.reason)
        } catch let error as AppleActionError {
            return Self.appleRefusal(error)
        }
        return VerificationOutcome(status: 0, body: body, source: .local)
    }

    /// The request's extension: `extend_by_days`, `extend_reason_code` (a name or Apple's code), and
    /// `request_identifier` (a new UUID when none is given).
    func renewalExtension(_ request: VerificationRequest) throws -> RenewalExtension {
        guard let text = request.extendByDays, !text.isEmpty else {
            throw HTTPFailure.badRequest(saying: "extend_by_days is required: 1 to \(RenewalExtension.maximumDays)")
        }
        guard let days = Int(text) else {
            throw HTTPFailure.badRequest(
                saying: "extend_by_days must be a whole number from 1 to \(RenewalExtension.maximumDays)")
        }
        let names = RenewalExtension.Reason.allCases.map(\.name).joined(separator: ", ")
        guard let reasonText = request.extendReasonCode, !reasonText.isEmpty else {
            throw HTTPFailure.badRequest(saying: "extend_reason_code is required: one of \(names) (or 0-3)")
        }
        guard let reason = RenewalExtension.Reason(text: reasonText) else {
            throw HTTPFailure.badRequest(saying: "extend_reason_code must be one of \(names) (or 0-3)")
        }
        let identifier = request.requestIdentifier.flatMap { $0.isEmpty ? nil : $0 } ?? UUID().uuidString.lowercased()
        do {
            return try RenewalExtension(days: days, reason: reason, requestIdentifier: identifier)
        } catch let error as ServiceError {
            throw HTTPFailure.badRequest(saying: error.reason)
        }
    }

    /// An extension's answer: 0 when Apple extended it (or took the mass extension), 403 when Apple refused it, 500
    /// when it did not reach Apple (retryable) or Apple's answer was lost (not retryable: a repeat looks first), with
    /// the record in `extension`; 503 while another request is sending it.
    static func extensionOutcome(_ record: RenewalExtensionRecord, body: JSONObject) -> VerificationOutcome {
        var body = body
        let (status, description): (Int, String)
        switch record.state {
        case .sending:
            // Another request is sending the same extension: its outcome is for a moment later.
            var outcome = VerificationOutcome.failure(
                ResponseStatus.serviceUnavailable, retryable: true, detail: "the extension is being sent")
            outcome.body["description"] = .string("The extension is being sent by another request; ask again")
            outcome.body["retry_after"] = .integer(1)
            return outcome
        case .extended: (status, description) = (0, "Renewal date extended")
        case .requested:
            (status, description) = (0, "Extension requested; Apple works through the subscribers and it is polled")
        case .complete: (status, description) = (0, "Extension complete")
        case .refused:
            (status, description) = (ResponseStatus.rejected, "Apple did not extend: \(record.error ?? "refused")")
        case .failed:
            (status, description) = (
                ResponseStatus.internalError,
                "Not sent to Apple: \(record.error ?? "no answer"); repeat with the same request_identifier"
            )
        case .unknown:
            (status, description) = (
                ResponseStatus.internalError,
                "Apple's answer was lost: \(record.error ?? "no answer"); a repeat with the same request_identifier "
                    + "looks at Apple first and sends it again only if Apple did not apply it"
            )
        }
        body["status"] = .integer(Int64(status))
        body.append("description", .string(description))
        // A lost answer is the caller's to repeat, not an automatic retry's (money review M6).
        if record.state == .failed { body.append("retryable", .bool(true)) }
        body.append("extension", .object(record.json))
        return VerificationOutcome(status: status, body: body, source: status == 0 ? .local : .none)
    }

    /// Apple refused an action (403, with Apple's error code), or could not be asked (500, retryable).
    static func appleRefusal(_ refusal: AppleActionError) -> VerificationOutcome {
        switch refusal.error.code {
        case .refused, .notFound, .credentials:
            var outcome = VerificationOutcome.rejected(
                source: .none, reason: refusal.error.reason, description: "Apple refused: \(refusal.reason)")
            if let code = refusal.error.appleErrorCode { outcome.body["apple_error_code"] = .integer(Int64(code)) }
            return outcome
        case .unavailable, .rateLimited, .invalidResponse:
            var outcome = VerificationOutcome.failure(
                ResponseStatus.internalError, retryable: true, detail: refusal.error.reason)
            outcome.body["description"] = .string("Apple could not be asked: \(refusal.reason)")
            return outcome
        }
    }
}
