import AsyncHTTPClient
import CoreMetrics
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import ReceiptCore
import ReceiptService

/// Apple's `verifyReceipt` over HTTP: production first, 21007 → sandbox, 21008 → production, bounded retries with
/// jittered exponential backoff on 21005, 21009, 21100-21199 (unless Apple says `is-retryable: false`), HTTP 5xx and
/// network errors, all within one total timeout.
///
/// [Apple's documentation](https://developer.apple.com/documentation/appstorereceipts/verifyreceipt)
public final class VerifyReceiptClient: AppleReceiptVerifying {
    /// Where and how Apple is reached.
    public let configuration: VerifyReceiptConfiguration
    private let http: HTTPClient
    private let metrics: any MetricsFactory

    /// Creates a client with its own connection pool, counting its exchanges into `metrics` (nil: nowhere); call
    /// ``shutdown()`` when done.
    ///
    /// Metrics: `receiptverify_apple_requests_total{environment, result}` (result: `answered`, `retryable` for an
    /// answer Apple marks as such, `http_error`, `network`, `timeout`, `invalid`), the duration of each exchange in
    /// `receiptverify_apple_request_duration_seconds{environment}`, and `receiptverify_apple_retries_total{environment}`.
    public init(configuration: VerifyReceiptConfiguration, metrics: (any MetricsFactory)? = nil) {
        self.configuration = configuration
        self.metrics = metrics ?? NOOPMetricsHandler.instance
        var httpConfiguration = HTTPClient.Configuration()
        httpConfiguration.timeout = .init(connect: .init(configuration.connectTimeout), read: nil)
        httpConfiguration.redirectConfiguration = .disallow
        http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: httpConfiguration)
    }

    /// Closes the connection pool.
    public func shutdown() async throws { try await http.shutdown() }

    public func verifyReceipt(
        _ receiptData: String, password: String?, excludeOldTransactions: Bool, logger: Logger
    ) async throws -> AppleReceiptAnswer {
        var body = JSONObject(capacity: 3)
        body.append("receipt-data", .string(receiptData))
        if let password { body.append("password", .string(password)) }
        if excludeOldTransactions { body.append("exclude-old-transactions", .bool(true)) }
        let payload = JSONValue.object(body).encoded
        let deadline = ContinuousClock.now.advanced(by: configuration.totalTimeout)

        var environment = StoreEnvironment.production
        var redirected = false
        while true {
            let answer = try await exchange(payload, with: environment, until: deadline, logger: logger)
            // Apple's documented redirects, each followed at most once.
            if !redirected, environment == .production, answer.status == 21007 {
                environment = .sandbox
            } else if !redirected, environment == .sandbox, answer.status == 21008 {
                environment = .production
            } else {
                return answer
            }
            redirected = true
            logger.debug("verifyReceipt redirect", metadata: ["apple.environment": "\(environment.rawValue)"])
        }
    }

    /// Asks one environment, retrying retryable failures; returns the last answer Apple gave.
    private func exchange(
        _ payload: [UInt8], with environment: StoreEnvironment, until deadline: ContinuousClock.Instant,
        logger: Logger
    ) async throws -> AppleReceiptAnswer {
        let url = environment == .sandbox ? configuration.sandboxURL : configuration.productionURL
        var attempt = 1
        while true {
            let started = ContinuousClock.now
            let result = await send(payload, to: url, environment: environment, until: deadline, logger: logger)
            record(result, environment: environment, duration: started.duration(to: .now))
            let pause = Self.backoff(attempt: attempt, base: configuration.backoffBase)
            let mayRetry = attempt < configuration.maximumAttempts && ContinuousClock.now.advanced(by: pause) < deadline
            switch result {
            case .answered(let answer) where !answer.isRetryable || !mayRetry: return answer
            case .failed(let error, let retryable, _) where !retryable || !mayRetry: throw error
            case .answered(let answer):
                logger.debug(
                    "retrying verifyReceipt",
                    metadata: ["apple.environment": "\(environment.rawValue)", "apple.status": "\(answer.status)"])
            case .failed(let error, _, _):
                logger.debug(
                    "retrying verifyReceipt",
                    metadata: ["apple.environment": "\(environment.rawValue)", "error": "\(error.reason)"])
            }
            Counter(
                label: "receiptverify_apple_retries_total", dimensions: [("environment", environment.rawValue)],
                factory: metrics
            ).increment()
            try await Task.sleep(for: pause)
            attempt += 1
        }
    }

    private enum Attempt {
        case answered(AppleReceiptAnswer)
        /// Network failure, timeout, HTTP error or an answer that is not `verifyReceipt` JSON.
        case failed(ServiceError, retryable: Bool, kind: FailureKind)
    }

    /// What went wrong with an exchange, as a metric label.
    private enum FailureKind: String {
        case timeout, network, invalid
        case httpError = "http_error"
    }

    /// Counts one exchange and its duration.
    private func record(_ attempt: Attempt, environment: StoreEnvironment, duration: Duration) {
        let result: String
        switch attempt {
        case .answered(let answer): result = answer.isRetryable ? "retryable" : "answered"
        case .failed(_, _, let kind): result = kind.rawValue
        }
        Counter(
            label: "receiptverify_apple_requests_total",
            dimensions: [("environment", environment.rawValue), ("result", result)], factory: metrics
        ).increment()
        Timer(
            label: "receiptverify_apple_request_duration_seconds", dimensions: [("environment", environment.rawValue)],
            factory: metrics
        ).recordNanoseconds(duration.nanoseconds)
    }

    /// One HTTP exchange. Network failures and HTTP 5xx may succeed on retry; a timeout past the deadline, another
    /// HTTP status or a body that is not `verifyReceipt` JSON is final (retrying a wrong answer does not fix it).
    private func send(
        _ payload: [UInt8], to url: String, environment: StoreEnvironment, until deadline: ContinuousClock.Instant,
        logger: Logger
    ) async -> Attempt {
        let name = "verifyReceipt (\(environment.rawValue))"
        let remaining = ContinuousClock.now.duration(to: deadline)
        guard remaining > .zero else { return .failed(Self.timedOut, retryable: false, kind: .timeout) }
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        request.body = .bytes(ByteBuffer(bytes: payload))
        let bytes: ByteBuffer
        let status: HTTPResponseStatus
        do {
            let response = try await http.execute(request, timeout: .init(remaining), logger: logger)
            status = response.status
            bytes = try await response.body.collect(upTo: configuration.maximumResponseSize)
        } catch let error as HTTPClientError where error == .deadlineExceeded || error == .readTimeout {
            return .failed(Self.timedOut, retryable: false, kind: .timeout)
        } catch is NIOTooManyBytesError {
            return .failed(
                ServiceError(.appleUnavailable, "\(name) answered more than the size limit"), retryable: false,
                kind: .invalid)
        } catch {
            return .failed(
                ServiceError(.appleUnavailable, "\(name) failed: \(error)"), retryable: true, kind: .network)
        }
        guard status == .ok else {
            return .failed(
                ServiceError(.appleUnavailable, "\(name) answered HTTP \(status.code)"),
                retryable: status.code >= 500, kind: .httpError)
        }
        let parsed: JSONValue
        do {
            parsed = try JSONParser.parse(bytes.readableBytesView)
        } catch {
            return .failed(
                ServiceError(.appleUnavailable, "\(name) answered something that is not JSON"), retryable: false,
                kind: .invalid)
        }
        guard case .object(let object) = parsed, case .integer(let code) = object["status"] else {
            return .failed(
                ServiceError(.appleUnavailable, "\(name) answered JSON without a status"), retryable: false,
                kind: .invalid)
        }
        let appleSays: Bool?
        if case .bool(let flag)? = object["is-retryable"] { appleSays = flag } else { appleSays = nil }
        let retryable: Bool
        switch code {
        case 21005, 21009, 21100...21199: retryable = appleSays ?? true
        default: retryable = false
        }
        return .answered(
            AppleReceiptAnswer(body: object, status: Int(code), answeredBy: environment, isRetryable: retryable))
    }

    private static let timedOut = ServiceError(.appleUnavailable, "verifyReceipt did not answer within the time limit")

    /// A random pause in 0 … base·2^(attempt-1).
    static func backoff(attempt: Int, base: Duration) -> Duration {
        let ceiling = base * (1 << min(attempt - 1, 10))
        let milliseconds = ceiling.components.seconds * 1000 + ceiling.components.attoseconds / 1_000_000_000_000_000
        return .milliseconds(Int64.random(in: 0...max(milliseconds, 1)))
    }
}
