import Clients
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
///   - configuration: where to listen, limits, the authentication cache, where metrics are served.
///   - tenancy: accounts, keys and apps.
///   - verification: the local verifier and Apple client, as the apps' modes need them.
///   - metrics: the application's metrics (the Apple client and the store record into the same registry).
///   - services: long-running services the application runs beside the server (a PostgreSQL pool, …); the usage
///     flusher, Apple's Finish Transaction of confirmed deliveries (with an App Store Server API client) and the
///     metrics listener (if it has its own port) are added after them.
///   - openID: the OpenID Connect client of the account screen's sign-in, when an issuer is configured.
///   - logger: the application's logger.
public func buildApplication(
    configuration: ServerConfiguration, tenancy: TenancyService, verification: VerificationService,
    metrics: ServerMetrics = ServerMetrics(), services: [any Service] = [], openID: OpenIDClient? = nil,
    logger: Logger
) throws -> Application<RouterResponder<ServerContext>> {
    let components = ServerComponents(configuration: configuration, store: tenancy.store, metrics: metrics)
    let router = try buildRouter(
        configuration: configuration, tenancy: tenancy, verification: verification, components: components,
        openID: openID, logger: logger)
    var extraServices: [any Service] = [
        UsageFlusher(
            meter: components.gate.meter, store: tenancy.store, grants: components.gate.grants,
            interval: configuration.usageFlushInterval, deadline: components.deadline, status: components.flushes,
            logger: logger)
    ]
    if let storeKit = verification.storeKit, let verifier = verification.verifier,
        let interval = configuration.notificationReconcileInterval
    {
        extraServices.append(
            NotificationReconciliation(
                store: tenancy.store,
                reconciler: NotificationReconciler(
                    intake: NotificationIntake(
                        verifier: verifier, store: tenancy.store, deadline: components.deadline,
                        kept: configuration.retention.notifications),
                    storeKit: storeKit, tenancy: tenancy),
                interval: interval, metrics: metrics.factory, logger: logger))
    }
    if let storeKit = verification.storeKit {
        extraServices.append(
            AppleFinisher(
                store: tenancy.store, tenancy: tenancy, storeKit: storeKit,
                policy: RetryPolicy(first: configuration.appleFinishFirstRetry),
                callTimeout: configuration.storeKit.totalTimeout, deadline: components.deadline,
                metrics: metrics.factory, logger: logger))
        extraServices.append(
            ConsumptionAnswerer(
                store: tenancy.store, tenancy: tenancy, storeKit: storeKit,
                policy: RetryPolicy(first: configuration.appleFinishFirstRetry, giveUpAfter: .seconds(11 * 3_600)),
                callTimeout: configuration.storeKit.totalTimeout, deadline: components.deadline,
                metrics: metrics.factory, logger: logger))
        extraServices.append(
            RenewalExtensionPoller(
                store: tenancy.store, tenancy: tenancy, storeKit: storeKit,
                pollAfter: configuration.renewalExtensionPollInterval,
                callTimeout: configuration.storeKit.totalTimeout, deadline: components.deadline, logger: logger))
    }
    if let googlePlay = verification.googlePlay {
        extraServices.append(
            GoogleAcknowledger(
                store: tenancy.store, tenancy: tenancy, googlePlay: googlePlay,
                policy: RetryPolicy(first: configuration.googleAcknowledgeFirstRetry, longestWait: 3_600),
                callTimeout: configuration.googlePlay.timeout, deadline: components.deadline,
                metrics: metrics.factory, logger: logger))
        extraServices.append(
            GoogleVoidedReconciler(
                store: tenancy.store, tenancy: tenancy, googlePlay: googlePlay,
                interval: configuration.googleVoidedInterval, deadline: components.deadline,
                metrics: metrics.factory, logger: logger))
    }
    extraServices.append(
        WebhookDeliverer(
            store: tenancy.store, tenancy: tenancy,
            client: WebhookClient(
                timeout: configuration.webhookTimeout, allowsPrivateAddresses: configuration.webhookPrivateURLs,
                logger: logger),
            policy: configuration.webhookRetry, perSecond: configuration.webhookDeliveriesPerSecond,
            breaker: WebhookCircuitBreaker(firstPause: configuration.webhookRetry.first),
            deadline: components.deadline, metrics: metrics.factory, logger: logger))
    extraServices.append(
        Purger(
            store: tenancy.store, policy: configuration.retention, deadline: components.deadline,
            metrics: metrics.factory, logger: logger))
    if let directory = configuration.exportDirectory {
        extraServices.append(
            DailyExporter(
                exports: DailyExports(
                    directory: directory, store: tenancy.store,
                    exporter: Exporter(store: tenancy.store, customers: components.customers)),
                interval: configuration.exportCheckInterval, metrics: metrics.factory, logger: logger))
    }
    extraServices.append(
        SubscriptionExpirer(
            store: tenancy.store, deadline: components.deadline, metrics: metrics.factory, logger: logger))
    if let port = configuration.metricsPort {
        extraServices.append(
            buildMetricsApplication(
                hostname: configuration.metricsHostname, port: port, components: components, logger: logger))
    }
    return Application(
        router: router,
        // The guard of each connection: the connection cap, the whole-request deadline, `Connection: close`; and the
        // idle timeout, which closes connections that send nothing, between requests or in the middle of one.
        server: .http1(
            configuration: .init(
                additionalChannelHandlers: [
                    ConnectionGuard(
                        limiter: components.connections,
                        requestTimeout: configuration.requestTimeout.map { TimeAmount($0) })
                ],
                idleTimeout: configuration.idleTimeout.map { TimeAmount($0) })),
        configuration: .init(address: .hostname(configuration.hostname, port: configuration.port), serverName: nil),
        // Services stop in reverse order after the server has finished its requests: the flusher writes the last
        // counts before the store's pool (first in `services`) closes.
        services: services + extraServices,
        logger: logger)
}

/// What the routes share with each other and with the services beside the server.
struct ServerComponents: Sendable {
    /// Every database read a request waits for has this deadline: an outage answers 503 instead of holding requests.
    let deadline: StoreDeadline
    let gate: UsageGate
    let connections: ConnectionLimiter
    let metrics: ServerMetrics
    let flushes: FlushStatus
    let ledger: Ledger
    let statuses: SubscriptionStatusView
    /// Customer views, for `customer` in answers and `/api/customers`.
    let customers: CustomerLookup
    /// Exports each account may have streaming at once on this server.
    let exportSlots = ExportSlots()

    init(configuration: ServerConfiguration, store: any DataStore, metrics: ServerMetrics) {
        deadline = StoreDeadline(configuration.databaseTimeout, metrics: metrics.factory)
        gate = UsageGate(store: store, deadline: deadline)
        connections = ConnectionLimiter(maximum: configuration.maximumConnections)
        self.metrics = metrics
        flushes = FlushStatus(metrics: metrics.factory)
        statuses = SubscriptionStatusView(store: store, deadline: deadline)
        ledger = Ledger(store: store, deadline: deadline, statuses: statuses, metrics: metrics.factory)
        customers = CustomerLookup(ledger: ledger, statuses: statuses, marker: { store.customerChangeMarker() })
        metrics.setPoolSize(configuration.store.poolSize)
    }

    /// The metrics in Prometheus text format, with the figures read at scrape time brought up to date.
    func renderMetrics() -> Response {
        let text = metrics.render(
            pendingCalls: gate.meter.unflushedCalls, sinceLastFlush: flushes.sinceLastSuccess,
            connections: connections.open)
        return Response(
            status: .ok,
            headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8", .cacheControl: "no-store"],
            body: .init(byteBuffer: ByteBuffer(bytes: text)))
    }
}

/// The routes: the verification API, health and readiness, the API's contract, and metrics unless they have a port of
/// their own. Every route answers errors in the API's JSON shape, and a known path asked with another method (any)
/// gets 405 with `Allow`.
func buildRouter(
    configuration: ServerConfiguration, tenancy: TenancyService, verification: VerificationService,
    components: ServerComponents, openID: OpenIDClient? = nil, routes: KnownRoutes = KnownRoutes(), logger: Logger
) throws -> Router<ServerContext> {
    // The paths routed below and their methods (`routes`), read off the router once they are added: any other method
    // on these paths is answered 405 (the account screen's pages, added after, keep their 404).
    let router = Router(context: ServerContext.self)
    // Outermost first: the client's address, then the log line and the metrics, which see every answer, errors turned
    // into JSON included.
    if !configuration.trustedProxies.isEmpty {
        router.add(middleware: ClientAddressMiddleware(proxies: configuration.trustedProxies))
    }
    router.add(middleware: RequestLogMiddleware(logger: logger))
    router.add(middleware: MetricsMiddleware(metrics: components.metrics))
    router.add(middleware: JSONErrorMiddleware(routes: routes))

    // Operations.
    router.get("/healthz") { _, _ in HealthStatus.ok.response }
    router.head("/healthz") { _, _ in HTTPResponse.Status.ok }
    let readinessCheck = ReadinessCheck(store: tenancy.store, deadline: components.deadline, logger: logger)
    let readiness: @Sendable (Request, ServerContext) async throws -> Response = { _, _ in
        guard await readinessCheck.isReady() else {
            throw HTTPError(.serviceUnavailable, message: "database unavailable")
        }
        return HealthStatus.ready.response
    }
    router.get("/readyz", use: readiness)
    router.head("/readyz") { request, context in
        _ = try await readiness(request, context)
        return HTTPResponse.Status.ok
    }
    router.get("/openapi.json") { _, _ in OpenAPIDocument.response() }
    if configuration.metricsPort == nil {
        // Only to this machine's own scrapers unless the operator made them public: a request from loopback that no
        // proxy forwarded (a proxy on this machine adds its forwarding headers).
        let isPublic = configuration.publicMetrics
        router.get("/metrics") { request, context in
            guard isPublic || isLocal(request, context) else { throw NotServed() }
            return components.renderMetrics()
        }
    }

    // The verification API.
    let authenticator = Authenticator(
        tenancy: tenancy, cacheTTL: configuration.authenticationCacheTTL, deadline: components.deadline)
    let failedAuthentications = FailedAuthentications(perSecond: configuration.failedAuthenticationsPerSecond)
    let bodies = BodyBudget(limit: configuration.maximumBodyMemory, maximumBody: configuration.maximumBodySize)
    let endpoint = VerificationEndpoint(
        authenticator: authenticator, failedAuthentications: failedAuthentications, gate: components.gate,
        verification: verification, ledger: components.ledger, statuses: components.statuses,
        customers: components.customers, tenancy: tenancy,
        extensionPollSeconds: configuration.renewalExtensionPollInterval,
        maximumBodySize: configuration.maximumBodySize, bodies: bodies, logger: logger)
    for kind in [
        VerificationEndpoint.Kind.plain, .encrypted, .transactions, .delivered, .consumption, .webhooks, .customers,
        .offers, .apple, .dropIn,
    ] {
        router.post(RouterPath(kind.rawValue)) { request, context in
            await endpoint.respond(to: request, context: context, kind: kind)
        }
    }

    // Exports of the app's data, streamed.
    let export = ExportEndpoint(
        authenticator: authenticator, failedAuthentications: failedAuthentications, gate: components.gate,
        exporter: Exporter(store: tenancy.store, customers: components.customers), slots: components.exportSlots,
        logger: logger)
    router.get("/api/export") { request, context in await export.respond(to: request, context: context) }

    // App Store Server Notifications (Notifications/), verified with the local verifier's trust anchors.
    if let verifier = verification.verifier {
        let notifications = NotificationEndpoint(
            intake: NotificationIntake(
                verifier: verifier, store: tenancy.store, deadline: components.deadline,
                kept: configuration.retention.notifications),
            authenticator: authenticator, failedAuthentications: failedAuthentications,
            failedNotifications: FailedNotifications(perSecond: configuration.failedAuthenticationsPerSecond),
            bodies: bodies,
            metrics: components.metrics.factory, logger: logger)
        router.post("/notifications/:token") { request, context in
            await notifications.respond(to: request, context: context)
        }
    }

    // Google Play's Real-time Developer Notifications, pushed by Cloud Pub/Sub.
    if let googlePlay = verification.googlePlay {
        let google = GoogleNotificationEndpoint(
            intake: GoogleNotificationIntake(
                store: tenancy.store, googlePlay: googlePlay, deadline: components.deadline),
            googlePlay: googlePlay, tenancy: tenancy, authenticator: authenticator,
            failedAuthentications: failedAuthentications,
            failedNotifications: FailedNotifications(perSecond: configuration.failedAuthenticationsPerSecond),
            bodies: bodies, metrics: components.metrics.factory, logger: logger)
        router.post("/notifications/google/:token") { request, context in
            await google.respond(to: request, context: context)
        }
    }

    routes.record(router)

    // The account screen (Web/): HTML pages for customers, with Apple's side of notifications when Apple is reachable.
    var customers = CustomerService(tenancy: tenancy, settings: configuration.customers)
    if let storeKit = verification.storeKit, let verifier = verification.verifier {
        customers.notificationSetup = NotificationSetup(
            storeKit: storeKit,
            reconciler: NotificationReconciler(
                intake: NotificationIntake(verifier: verifier, store: tenancy.store, deadline: components.deadline),
                storeKit: storeKit, tenancy: tenancy))
    }
    addWebRoutes(
        to: router,
        site: WebSite(
            customers: customers, openID: openID,
            templates: try PageTemplates(), deadline: components.deadline, plans: PlanList(),
            publicURL: configuration.effectivePublicURL, publicURLIsSet: configuration.publicURL != nil,
            logger: logger, exporter: Exporter(store: tenancy.store, customers: components.customers),
            exportSlots: components.exportSlots))
    return router
}

/// A route that exists but is not served to this client: 404, as if it did not exist (not the 405 of a known path).
struct NotServed: HTTPResponseError {
    var status: HTTPResponse.Status { .notFound }

    func response(from request: Request, context: some RequestContext) throws -> Response { Response(status: status) }
}

/// Whether a request came from this machine directly: a loopback peer, and no proxy's forwarding header.
func isLocal(_ request: Request, _ context: ServerContext) -> Bool {
    guard let peer = context.remoteAddress?.ipAddress, let bytes = IPAddressText.parse(peer) else { return false }
    let loopback = bytes.count == 4 ? bytes[0] == 127 : bytes == [UInt8](repeating: 0, count: 15) + [1]
    return loopback && request.headers[.forwarded] == nil && request.headers[.xForwardedFor] == nil
}

/// The metrics listener on its own port: `/metrics` and nothing else (JSON 404 for the rest).
func buildMetricsApplication(hostname: String, port: Int, components: ServerComponents, logger: Logger)
    -> Application<RouterResponder<ServerContext>>
{
    let router = Router(context: ServerContext.self)
    let routes = KnownRoutes()
    router.add(middleware: JSONErrorMiddleware(routes: routes))
    router.get("/metrics") { _, _ in components.renderMetrics() }
    routes.record(router)
    // Its own start line, so that "listening on" in the log is the API's port alone.
    var quiet = logger
    quiet.logLevel = max(logger.logLevel, .warning)
    var app = Application(
        router: router, configuration: .init(address: .hostname(hostname, port: port), serverName: nil),
        logger: quiet)
    app.beforeServerStarts { logger.info("metrics served", metadata: ["metrics.address": "\(hostname):\(port)"]) }
    return app
}

/// The answers of `/healthz` and `/readyz`, made once: a load balancer asks thousands of times.
enum HealthStatus {
    case ok, ready

    private static let okBody = ByteBuffer(string: #"{"status":"ok"}"#)
    private static let readyBody = ByteBuffer(string: #"{"status":"ready"}"#)

    var response: Response {
        Response(
            status: .ok, headers: [.contentType: "application/json; charset=utf-8", .cacheControl: "no-store"],
            body: .init(byteBuffer: self == .ok ? Self.okBody : Self.readyBody))
    }
}
