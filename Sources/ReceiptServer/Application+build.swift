import Hummingbird
import Logging
import ReceiptService
import ReceiptStore
import ServiceLifecycle

/// The request context of every route.
public typealias ServerContext = BasicRequestContext

/// Builds the HTTP application over a store that is already migrated and whose master key has been checked.
///
/// - Parameters:
///   - configuration: where to listen.
///   - tenancy: accounts, keys and apps.
///   - services: long-running services the application runs beside the server (a PostgreSQL pool, …).
///   - logger: the application's logger.
public func buildApplication(
    configuration: ServerConfiguration, tenancy: TenancyService, services: [any Service] = [], logger: Logger
) -> Application<RouterResponder<ServerContext>> {
    let router = Router(context: ServerContext.self)
    router.get("/healthz") { _, _ in HealthStatus(status: "ok") }
    router.get("/readyz") { _, _ -> HealthStatus in
        do {
            _ = try await tenancy.store.plans()
        } catch {
            logger.error("readiness check failed", metadata: ["error": "\(error)"])
            throw HTTPError(.serviceUnavailable, message: "database unavailable")
        }
        return HealthStatus(status: "ready")
    }
    return Application(
        router: router,
        configuration: .init(address: .hostname(configuration.hostname, port: configuration.port), serverName: nil),
        services: services,
        logger: logger)
}

/// The body of `/healthz` and `/readyz`.
struct HealthStatus: ResponseEncodable {
    let status: String
}
