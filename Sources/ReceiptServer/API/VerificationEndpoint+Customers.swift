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
        let subject: CustomerLookup.Subject
        do {
            subject = try CustomerLookup.Subject(
                user: request.appUserID, originalTransactionID: request.originalTransactionID, app: caller.app)
        } catch let error as ServiceError {
            throw HTTPFailure(status: ResponseStatus.badRequest, reason: error.reason)
        }
        let environment = try request.namedEnvironment()
        let view = try await customers.json(of: subject, app: caller.app, environment: environment)
        var body = JSONObject(capacity: 4)
        body.append("status", .integer(0))
        body.append("description", .string(Self.customerDescription))
        body.append("customer", .object(view))
        return VerificationOutcome(status: 0, body: body, source: .local)
    }
}
