import Foundation
import ReceiptCore
import ReceiptService

/// `POST /api/customers` (docs/api.md, "Customers and entitlements"): what a customer may use now, without a
/// receipt. Authenticated and admitted as `/api` is, metered as an endpoint of its own.
extension VerificationEndpoint {
    /// The description of the answer.
    static let customerDescription = "The customer's entitlements"

    /// The view of the request's `app_user_id`, or of its `original_transaction_id` when no user is given, in its
    /// `environment` (nil: the customer's production facts, else sandbox).
    func customer(_ request: VerificationRequest, for caller: Caller) async throws -> VerificationOutcome {
        let user = request.appUserID.flatMap { $0.isEmpty ? nil : $0 }
        let original = request.originalTransactionID.flatMap { $0.isEmpty ? nil : $0 }
        let subject: CustomerLookup.Subject
        if let user {
            guard caller.app.claimsPolicy != .off else {
                throw HTTPFailure(
                    status: ResponseStatus.badRequest,
                    reason: "the app makes no claims (claims off), so no purchase is a user's: ask by "
                        + "original_transaction_id")
            }
            subject = .user(user)
        } else if let original {
            subject = .originals([original])
        } else {
            throw HTTPFailure(
                status: ResponseStatus.badRequest,
                reason: "a customer look-up needs app_user_id or original_transaction_id")
        }
        var environment: AppStoreEnvironment?
        if let name = request.environment, !name.isEmpty {
            guard let named = AppStoreEnvironment(configurationName: name) else {
                throw HTTPFailure(
                    status: ResponseStatus.badRequest, reason: "environment must be Production, Sandbox or Xcode")
            }
            environment = named
        }
        let view = try await customers.json(of: subject, app: caller.app, environment: environment)
        var body = JSONObject(capacity: 4)
        body.append("status", .integer(0))
        body.append("description", .string(Self.customerDescription))
        body.append("customer", .object(view))
        return VerificationOutcome(status: 0, body: body, source: .local)
    }
}
