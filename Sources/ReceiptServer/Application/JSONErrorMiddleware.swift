import Hummingbird
import ReceiptCore
import ReceiptService

/// Turns the router's own errors (unknown path, wrong method) into JSON answers shaped like every other one.
struct JSONErrorMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        do {
            return try await next(request, context)
        } catch let error as HTTPError {
            var outcome = VerificationOutcome.failure(Int(error.status.code))
            let requestID = RequestID.generate()
            outcome.body["request_id"] = .string(requestID)
            return VerificationEndpoint.response(outcome, sealed: nil, requestID: requestID)
        }
    }
}
