import CoreMetrics
import Foundation
import Prometheus
import ReceiptService
import Synchronization

/// The server's metrics, rendered at `/metrics` in Prometheus text format (docs/operations.md, "Metrics").
///
/// Every metric goes through swift-metrics to a Prometheus registry owned by this application (not the process-wide
/// default), so two applications in one process (tests) keep their own figures. Label values are bounded: route
/// templates, methods, status codes from a fixed set, input kinds, environments; never a token, key or account id.
/// Every surface added later (ledger, web pages, notifications, webhooks) adds its metrics here, to this table and to
/// docs/operations.md.
///
/// | metric | labels | what |
/// |---|---|---|
/// | `http_server_requests_total` | route, method, status | answers, by route template (`NotFound` for unknown paths) |
/// | `http_server_request_duration_seconds` | route, method | time to answer, histogram |
/// | `receiptverify_verifications_total` | input, source, status | verdicts by input kind, who judged, status |
/// | `receiptverify_apple_requests_total` | environment, result | exchanges with Apple's `verifyReceipt` |
/// | `receiptverify_apple_request_duration_seconds` | environment | their duration, histogram |
/// | `receiptverify_apple_retries_total` | environment | retries after a retryable failure |
/// | `receiptverify_database_operations_in_flight` | | store operations requests are waiting for |
/// | `receiptverify_database_pool_size` | | connections the store may open (1 for SQLite) |
/// | `receiptverify_database_timeouts_total` | | store operations that passed `--database-timeout-ms` |
/// | `receiptverify_usage_pending_calls` | | billable calls counted in memory, not yet written |
/// | `receiptverify_usage_flush_lag_seconds` | | time since the last successful usage flush |
/// | `receiptverify_usage_flush_failures_total` | | usage flushes that failed |
/// | `receiptverify_connections_open` | | open client connections |
/// | `receiptverify_storekit_requests_total` | endpoint, environment, status | App Store Server API exchanges (HTTP status or `network`) |
/// | `receiptverify_google_requests_total` | endpoint, result | Google exchanges: the token grant, the Play Developer API's resources (HTTP status or `network`) |
/// | `receiptverify_google_acknowledgements_total` | result | Google acknowledgements of delivered purchases |
/// | `receiptverify_google_acknowledgements_overdue` | | delivered purchases over 48 h old still not acknowledged |
/// | `receiptverify_google_voided_total` | result | Google Play voided purchases read |
/// | `receiptverify_storekit_request_duration_seconds` | endpoint | their duration, histogram |
/// | `receiptverify_storekit_retries_total` | | retries after a retryable failure |
/// | `receiptverify_storekit_rate_limit_wait_seconds` | | waits for the app's request budget or Apple's `Retry-After` |
/// | `receiptverify_storekit_cache_total` | result | answers reused (`hit`) or asked of Apple (`miss`) |
/// | `receiptverify_apple_finishes_total` | result | Finish Transaction attempts: `finished`, `retry`, `failed` |
/// | `receiptverify_notifications_total` | type, outcome | App Store Server Notifications received, by Apple's type (`other` for an unknown one, `none` when unread) and outcome |
/// | `receiptverify_notifications_reconciled_total` | | notifications recorded from Apple's Notification History |
/// | `receiptverify_subscriptions_expired_total` | | subscriptions the scheduler moved to `expired` |
/// | `receiptverify_webhook_deliveries_total` | result | webhook delivery attempts: `delivered`, `retry`, `dead` |
/// | `receiptverify_webhook_delivery_duration_seconds` | | their duration, histogram |
/// | `receiptverify_webhook_backlog` | | pending deliveries (read every 10 s) |
/// | `receiptverify_webhook_backlog_oldest_seconds` | | age of the oldest event with a pending delivery |
public final class ServerMetrics: Sendable {
    /// Where the figures are kept.
    public let registry: PrometheusCollectorRegistry
    /// The swift-metrics factory writing to ``registry``, for the parts outside this module.
    public let factory: any MetricsFactory

    private struct RequestKey: Hashable {
        let route: String
        let method: String
        let status: Int
    }

    private struct DurationKey: Hashable {
        let route: String
        let method: String
    }

    private struct VerificationKey: Hashable {
        let input: String
        let source: String
        let status: String
    }

    private struct Handles {
        var requests: [RequestKey: CoreMetrics.Counter] = [:]
        var durations: [DurationKey: CoreMetrics.Timer] = [:]
        var verifications: [VerificationKey: CoreMetrics.Counter] = [:]
    }

    /// Handles already made, by labels: making one takes the registry's lock and builds its name.
    private let handles = Mutex(Handles())
    private let poolSize: CoreMetrics.Gauge
    private let pendingCalls: CoreMetrics.Gauge
    private let flushLag: CoreMetrics.Gauge
    private let connectionsOpen: CoreMetrics.Gauge

    /// Buckets of the request duration histogram: our answers take from well under a millisecond to Apple's seconds.
    static let durationBuckets: [Duration] = [
        .microseconds(500), .milliseconds(1), .milliseconds(2), .milliseconds(5), .milliseconds(10),
        .milliseconds(25), .milliseconds(50), .milliseconds(100), .milliseconds(250), .milliseconds(500),
        .seconds(1), .milliseconds(2500), .seconds(5), .seconds(10), .seconds(30),
    ]

    /// Creates a registry and the metrics that exist from the start.
    public init() {
        registry = PrometheusCollectorRegistry()
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.defaultDurationHistogramBuckets = Self.durationBuckets
        self.factory = factory
        poolSize = CoreMetrics.Gauge(label: "receiptverify_database_pool_size", factory: factory)
        pendingCalls = CoreMetrics.Gauge(label: "receiptverify_usage_pending_calls", factory: factory)
        flushLag = CoreMetrics.Gauge(label: "receiptverify_usage_flush_lag_seconds", factory: factory)
        connectionsOpen = CoreMetrics.Gauge(label: "receiptverify_connections_open", factory: factory)
    }

    /// Counts an answer and its duration.
    func recordRequest(route: String, method: String, status: Int, duration: Duration) {
        let (counter, timer) = handles.withLock { handles in
            let key = RequestKey(route: route, method: method, status: status)
            let counter =
                handles.requests[key]
                ?? CoreMetrics.Counter(
                    label: "http_server_requests_total",
                    dimensions: [("route", route), ("method", method), ("status", String(status))], factory: factory)
            handles.requests[key] = counter
            let durationKey = DurationKey(route: route, method: method)
            let timer =
                handles.durations[durationKey]
                ?? CoreMetrics.Timer(
                    label: "http_server_request_duration_seconds", dimensions: [("route", route), ("method", method)],
                    factory: factory)
            handles.durations[durationKey] = timer
            return (counter, timer)
        }
        counter.increment()
        timer.recordNanoseconds(duration.nanoseconds)
    }

    /// Counts a verification outcome: the input kind (`unified_receipt`, `transaction_receipt`, `jws`, or `none`
    /// when no receipt was read), who judged (`local`, `apple`, `none`) and the answer's status.
    func recordVerification(input: String, source: String, status: Int) {
        let key = VerificationKey(input: input, source: source, status: Self.statusLabel(status))
        let counter = handles.withLock { handles in
            let counter =
                handles.verifications[key]
                ?? CoreMetrics.Counter(
                    label: "receiptverify_verifications_total",
                    dimensions: [("input", key.input), ("source", key.source), ("status", key.status)],
                    factory: factory)
            handles.verifications[key] = counter
            return counter
        }
        counter.increment()
    }

    /// A status as a label from a fixed set: ours and Apple's documented codes as numbers, Apple's internal range
    /// 21100-21199 as `211xx`, anything else `other`.
    static func statusLabel(_ status: Int) -> String {
        switch status {
        case 0, 21000...21010, 400...405, 413, 415, 429, 500, 503: String(status)
        case 21100...21199: "211xx"
        default: "other"
        }
    }

    /// The database's pool size, set once at start.
    func setPoolSize(_ size: Int) { poolSize.record(size) }

    /// Sets what is read at scrape time, then renders every metric.
    func render(pendingCalls pending: Int, sinceLastFlush: Duration?, connections: Int) -> [UInt8] {
        pendingCalls.record(pending)
        if let sinceLastFlush {
            flushLag.record(
                Double(sinceLastFlush.components.seconds) + Double(sinceLastFlush.components.attoseconds) / 1e18)
        }
        connectionsOpen.record(connections)
        var buffer: [UInt8] = []
        buffer.reserveCapacity(16 << 10)
        registry.emit(into: &buffer)
        return buffer
    }
}
