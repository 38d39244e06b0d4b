import Clients
import Dispatch
import Foundation
import Hummingbird
import Logging
import ReceiptCore
import ReceiptService
import ReceiptStore
import ServiceLifecycle
import UnixSignals

/// Runs the service until SIGTERM or SIGINT: loads the trust anchors, opens and migrates the store, checks the master
/// key, serves HTTP, and on a signal finishes in-flight requests before returning.
public func runServer(configuration: ServerConfiguration, masterKey: MasterKey, logger: Logger) async throws {
    logger.info(
        "starting receiptverify",
        metadata: [
            "database": "\(configuration.store.redacted)", "address": "\(configuration.hostname):\(configuration.port)",
            "http.max_connections": "\(configuration.maximumConnections)",
        ])
    let anchors = try TrustAnchorDirectory.anchors(
        directory: configuration.trustAnchorDirectory, replacingBuiltIn: configuration.replacesBuiltInRoots)
    logger.info(
        "trust anchors loaded",
        metadata: [
            "trust.anchors": "\(anchors.anchors.count)",
            "trust.apple_anchors": "\(anchors.anchors.filter(\.isApple).count)",
            "trust.directory": "\(configuration.trustAnchorDirectory ?? "-")",
            "trust.built_in": "\(!configuration.replacesBuiltInRoots)",
        ])
    let verifier = ReceiptVerifier(anchors: anchors)
    let metrics = ServerMetrics()
    let apple = VerifyReceiptClient(configuration: configuration.apple, metrics: metrics.factory)
    let storeKit = AppStoreServerAPIClient(
        configuration: configuration.storeKit, verifier: verifier, metrics: metrics.factory, logger: logger)
    let googlePlay = GooglePlayClient(
        configuration: configuration.googlePlay, metrics: metrics.factory, logger: logger)
    let verification = VerificationService(
        verifier: verifier, apple: apple, storeKit: storeKit, googlePlay: googlePlay,
        factsLifetime: min(.seconds(1), configuration.storeKit.cacheLifetime))
    let openID = configuration.openID.map { OpenIDClient(configuration: $0, logger: logger) }
    do {
        switch configuration.store {
        case .sqlite(let path):
            let store = try await SQLiteStore.open(path: path, logger: logger)
            do {
                try await serve(
                    store: store, services: [], verification: verification, metrics: metrics, openID: openID,
                    configuration: configuration, masterKey: masterKey, logger: logger)
                try await store.close()
            } catch {
                try? await store.close()
                throw error
            }
        case .postgres(let url):
            let store = try PostgresStore(url: url, logger: logger, listensForChanges: true)
            try await serve(
                store: store, services: [store], verification: verification, metrics: metrics, openID: openID,
                configuration: configuration, masterKey: masterKey, logger: logger)
        }
        try await apple.shutdown()
        try await storeKit.shutdown()
        try await googlePlay.shutdown()
        try await openID?.shutdown()
    } catch {
        try? await apple.shutdown()
        try? await storeKit.shutdown()
        try? await googlePlay.shutdown()
        try? await openID?.shutdown()
        throw error
    }
}

private func serve(
    store: any DataStore, services: [any Service], verification: VerificationService, metrics: ServerMetrics,
    openID: OpenIDClient?, configuration: ServerConfiguration, masterKey: MasterKey, logger: Logger
) async throws {
    let tenancy = {
        var tenancy = TenancyService(store: store, masterKey: masterKey)
        tenancy.allowsPrivateWebhookURLs = configuration.webhookPrivateURLs
        return tenancy
    }()
    var app = try buildApplication(
        configuration: configuration, tenancy: tenancy, verification: verification, metrics: metrics,
        services: services, openID: openID, logger: logger)
    app.beforeServerStarts {
        try await store.migrate()
        try await tenancy.checkMasterKey()
    }
    // A graceful stop (SIGTERM, SIGINT) finishes in-flight requests and the last usage flush, within its deadline
    // whatever the database does; then what is left is cancelled, and given a few seconds more.
    var group = ServiceGroupConfiguration(
        services: [app], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
    group.maximumGracefulShutdownDuration = configuration.shutdownTimeout
    group.maximumCancellationDuration = .seconds(2)
    let watchdog = ShutdownWatchdog(after: configuration.shutdownTimeout + .seconds(5), logger: logger)
    defer { watchdog.cancel() }
    try await ServiceGroup(configuration: group).run()
}

/// Ends the process when a stop (SIGTERM, SIGINT) has not ended it within the graceful shutdown's deadline, its
/// cancellation's, and a margin: the service group's own deadlines are enforced by tasks, and a clean-clone run saw
/// the group's cancellation deadlock on a lock inside a dependency (swift-async-algorithms' `merge`, under a timer
/// sequence cancelled on graceful shutdown), leaving `serve` alive after SIGTERM. Runs on a dispatch queue of its own,
/// outside Swift concurrency, so a stuck task pool cannot hold it.
final class ShutdownWatchdog {
    private let sources: [any DispatchSourceSignal]

    init(after limit: Duration, logger: Logger) {
        let queue = DispatchQueue(label: "receiptverify.shutdown-watchdog")
        let seconds = Double(limit.components.seconds) + Double(limit.components.attoseconds) / 1e18
        sources = [SIGTERM, SIGINT].map { number in
            // The service group ignores the signals' default action too; dispatch delivers them to every source.
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
            source.setEventHandler {
                queue.asyncAfter(deadline: .now() + seconds) {
                    logger.critical(
                        "the graceful stop did not end the process in time; exiting",
                        metadata: ["shutdown.limit_seconds": "\(Int(seconds))"])
                    exit(0)
                }
            }
            source.resume()
            return source
        }
    }

    /// Stops watching: the process is ending on its own.
    func cancel() {
        for source in sources { source.cancel() }
    }
}
