import HTTPTypes
import Hummingbird
import ReceiptCore
import ReceiptService

/// Turns every error a route throws (unknown path, wrong method, an unready database, anything unexpected) into a
/// JSON answer shaped like every other one: `status`, `description`, `request_id`; never Hummingbird's plain text.
///
/// A path the router knows, asked with a method it does not take (any method: `TRACE`, `QUERY`, one made up), is
/// answered 405 with `Allow` rather than the router's 404.
struct JSONErrorMiddleware: RouterMiddleware {
    typealias Context = ServerContext
    /// The methods each known path takes.
    let methods: [String: [HTTPRequest.Method]]

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        do {
            return try await next(request, context)
        } catch let error as HTTPError where error.status == .notFound && allowed(on: request.uri.path) != nil {
            return answer(MethodNotAllowed(allowed: allowed(on: request.uri.path) ?? []), context: context)
        } catch {
            return answer(error, context: context)
        }
    }

    /// The methods `path` takes: its own entry, or that of a pattern whose `:name` segments match any one segment.
    func allowed(on path: String) -> [HTTPRequest.Method]? {
        if let exact = methods[path] { return exact }
        let segments = path.split(separator: "/", omittingEmptySubsequences: false)
        return methods.first { pattern, _ in
            let parts = pattern.split(separator: "/", omittingEmptySubsequences: false)
            return pattern.contains(":") && parts.count == segments.count
                && zip(parts, segments).allSatisfy { $0.hasPrefix(":") ? !$1.isEmpty : $0 == $1 }
        }?.value
    }

    private func answer(_ error: any Error, context: Context) -> Response {
        let status = (error as? any HTTPResponseError).map { Int($0.status.code) } ?? ResponseStatus.internalError
        let unavailable = status == ResponseStatus.serviceUnavailable
        var outcome = VerificationOutcome.failure(status, retryable: unavailable)
        if unavailable { outcome.body["retry_after"] = .integer(1) }
        outcome.requestID = context.requestID
        return VerificationEndpoint.response(
            outcome, sealed: nil, requestID: context.requestID,
            allowed: (error as? MethodNotAllowed)?.allowed.map(\.rawValue).joined(separator: ", ") ?? "POST")
    }
}

/// A known path asked with a method it does not take: 405 with `Allow` naming the ones it does.
struct MethodNotAllowed: HTTPResponseError {
    let allowed: [HTTPRequest.Method]

    var status: HTTPResponse.Status { .methodNotAllowed }

    func response(from request: Request, context: some RequestContext) throws -> Response {
        Response(status: status, headers: [.allow: allowed.map(\.rawValue).joined(separator: ", ")])
    }
}
