import Hummingbird
import Logging
import ReceiptService

/// The request id on every answer (`X-Request-ID`), and one log line per answer, never with the receipt, a key or a
/// secret: `info` for the verification routes (`error`
/// for a 5xx answer), `debug` for the others (health checks and metrics scrapes would drown the log), with the
/// request id, route template, HTTP status, our `status`, the app token, who judged, the latency, the client's address
/// (the one a trusted proxy forwarded) and, for a failure, the reason.
struct RequestLogMiddleware: RouterMiddleware {
    typealias Context = ServerContext
    let logger: Logger

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        let started = ContinuousClock.now
        var response = try await next(request, context)
        // Every answer carries its id, the operations routes' too.
        if response.headers[RequestID.header] == nil { response.headers[RequestID.header] = context.requestID }
        let outcome = context.record.outcome
        let httpStatus = Int(response.status.code)
        let level: Logger.Level = httpStatus >= 500 ? .error : outcome != nil ? .info : .debug
        guard logger.logLevel <= level else { return response }
        let microseconds = started.duration(to: .now).nanoseconds / 1000
        var metadata: Logger.Metadata = [
            "request_id": "\(context.requestID)", "http.route": "\(context.endpointPath ?? "NotFound")",
            "http.method": "\(request.method)", "http.status": "\(httpStatus)",
            "latency_ms": "\(Double(microseconds) / 1000)", "client.address": "\(context.clientAddress)",
        ]
        if let outcome {
            metadata["status"] = "\(outcome.status)"
            metadata["app.token"] = "\(context.record.token ?? "-")"
            metadata["verification.source"] = "\(outcome.source.rawValue)"
            if let input = outcome.input { metadata["verification.input"] = "\(input)" }
            if let detail = outcome.detail { metadata["reason"] = "\(detail)" }
        }
        logger.log(level: level, httpStatus >= 500 ? "request failed" : "request", metadata: metadata)
        return response
    }
}

/// Counts every answer by route template, method and status, with its duration, and every verification outcome
/// (``ServerMetrics``).
struct MetricsMiddleware: RouterMiddleware {
    typealias Context = ServerContext
    let metrics: ServerMetrics

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        let started = ContinuousClock.now
        let response = try await next(request, context)
        metrics.recordRequest(
            route: context.endpointPath ?? "NotFound", method: request.method.rawValue,
            status: Int(response.status.code), duration: started.duration(to: .now))
        if let outcome = context.record.outcome {
            metrics.recordVerification(
                input: outcome.input ?? "none", source: outcome.source.rawValue, status: outcome.status)
        }
        return response
    }
}

/// Sets the client's address from a trusted proxy's forwarding headers (``TrustedProxies``), before anything else
/// reads it: the log line, and every per-address budget (failed authentications, sign-in attempts, notifications).
struct ClientAddressMiddleware: RouterMiddleware {
    typealias Context = ServerContext
    let proxies: TrustedProxies

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        var context = context
        context.forwardedClient = proxies.client(peer: context.remoteAddress?.ipAddress, headers: request.headers)
        return try await next(request, context)
    }
}
