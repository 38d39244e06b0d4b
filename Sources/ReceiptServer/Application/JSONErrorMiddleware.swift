import HTTPTypes
import Hummingbird
import ReceiptCore
import ReceiptService
import Synchronization

/// Turns every error a route throws (unknown path, wrong method, an unready database, anything unexpected) into a
/// JSON answer shaped like every other one: `status`, `description`, `request_id`; never Hummingbird's plain text.
///
/// A path the router knows, asked with a method it does not take (any method: `TRACE`, `QUERY`, one made up), is
/// answered 405 with `Allow` rather than the router's 404.
struct JSONErrorMiddleware: RouterMiddleware {
    typealias Context = ServerContext
    /// The methods each known path takes, read off the router.
    let routes: KnownRoutes

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

    /// The methods `path` takes: its own entry, or that of a pattern whose `{name}` segments match any one segment.
    func allowed(on path: String) -> [HTTPRequest.Method]? {
        let methods = routes.methods
        if let exact = methods[path] { return exact }
        let segments = path.split(separator: "/", omittingEmptySubsequences: false)
        return methods.first { pattern, _ in
            let parts = pattern.split(separator: "/", omittingEmptySubsequences: false)
            return pattern.contains("{") && parts.count == segments.count
                && zip(parts, segments).allSatisfy { KnownRoutes.isCapture($0) ? !$1.isEmpty : $0 == $1 }
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

/// The paths a router serves and the methods each takes, in the router's spelling (`/notifications/{token}`, as the
/// OpenAPI document spells it), read off the router once its routes are added: the 405 table is what was routed,
/// not a list kept beside the routes. Empty until `record(_:)`.
final class KnownRoutes: Sendable {
    private let table = Mutex<[String: [HTTPRequest.Method]]>([:])

    /// Takes the router's routes as they are now (routes added later are not known).
    func record(_ router: Router<ServerContext>) {
        let routes = Dictionary(grouping: router.routes) { $0.path.description }.mapValues { $0.map(\.method) }
        table.withLock { $0 = routes }
    }

    /// The methods of each known path.
    var methods: [String: [HTTPRequest.Method]] { table.withLock { $0 } }

    /// Whether a path segment is a capture (`{token}`).
    static func isCapture(_ segment: Substring) -> Bool { segment.hasPrefix("{") && segment.hasSuffix("}") }
}
