import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import ReceiptService
import ReceiptStore
import ServiceLifecycle

/// Builds the HTTP application over a store that is already migrated and whose master key has been checked.
///
/// - Parameters:
///   - configuration: where to listen, body limit, authentication cache.
///   - tenancy: accounts, keys and apps.
///   - verification: the local verifier and Apple client, as the apps' modes need them.
///   - services: long-running services the application runs beside the server (a PostgreSQL pool, …); the usage
///     flusher is added after them.
///   - logger: the application's logger.
public func buildApplication(
    configuration: ServerConfiguration, tenancy: TenancyService, verification: VerificationService,
    services: [any Service] = [], logger: Logger
) -> Application<RouterResponder<ServerContext>> {
    let router = Router(context: ServerContext.self)
    router.add(middleware: JSONErrorMiddleware())
    router.get("/healthz") { _, _ in HealthStatus(status: "ok") }
    router.head("/healthz") { _, _ in HTTPResponse.Status.ok }
    // Every database read a request waits for has this deadline: an outage answers 503 instead of holding requests.
    let deadline = StoreDeadline(configuration.databaseTimeout)
    let readinessCheck = ReadinessCheck(store: tenancy.store, deadline: deadline, logger: logger)
    let readiness: @Sendable (Request, ServerContext) async throws -> HealthStatus = { _, _ in
        guard await readinessCheck.isReady() else {
            throw HTTPError(.serviceUnavailable, message: "database unavailable")
        }
        return HealthStatus(status: "ready")
    }
    router.get("/readyz", use: readiness)
    router.head("/readyz") { request, context in
        _ = try await readiness(request, context)
        return HTTPResponse.Status.ok
    }

    let connections = ConnectionLimiter(maximum: configuration.maximumConnections)
    let gate = UsageGate(store: tenancy.store, deadline: deadline)
    let endpoint = VerificationEndpoint(
        authenticator: Authenticator(
            tenancy: tenancy, cacheTTL: configuration.authenticationCacheTTL, deadline: deadline),
        failedAuthentications: FailedAuthentications(perSecond: configuration.failedAuthenticationsPerSecond),
        gate: gate,
        verification: verification, maximumBodySize: configuration.maximumBodySize,
        bodies: BodyBudget(limit: configuration.maximumBodyMemory), logger: logger)
    for kind in [VerificationEndpoint.Kind.plain, .encrypted] {
        router.post(RouterPath(kind.rawValue)) { request, context in
            await endpoint.respond(to: request, context: context, kind: kind)
        }
        for method in [HTTPRequest.Method.get, .put, .patch, .delete, .head, .options] {
            router.on(RouterPath(kind.rawValue), method: method) { _, _ -> Response in
                throw HTTPError(.methodNotAllowed)
            }
        }
    }
    return Application(
        router: router,
        // Closes connections that send nothing for the timeout, between requests or in the middle of one, so idle or
        // stalled clients cannot hold connections (and their buffers) open.
        // The guard of each connection: the connection cap, the whole-request deadline, `Connection: close`.
        server: .http1(
            configuration: .init(
                additionalChannelHandlers: [
                    ConnectionGuard(
                        limiter: connections, requestTimeout: configuration.requestTimeout.map { TimeAmount($0) })
                ],
                idleTimeout: configuration.idleTimeout.map { TimeAmount($0) })),
        configuration: .init(address: .hostname(configuration.hostname, port: configuration.port), serverName: nil),
        // Services stop in reverse order after the server has finished its requests: the flusher writes the last
        // counts before the store's pool (first in `services`) closes.
        services: services + [
            UsageFlusher(
                meter: gate.meter, store: tenancy.store, grants: gate.grants,
                interval: configuration.usageFlushInterval,
                deadline: deadline, logger: logger)
        ],
        logger: logger)
}

/// The body of `/healthz` and `/readyz`.
struct HealthStatus: ResponseEncodable {
    let status: String
}
