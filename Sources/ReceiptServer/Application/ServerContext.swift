import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import ReceiptService
import Synchronization

/// The request context of every route: Hummingbird's core context, the address the request came from (the TCP peer,
/// or the client a trusted reverse proxy names), the request's id, and the ``RequestRecord`` a handler fills in for
/// the log line and the metrics written after it.
public struct ServerContext: RequestContext {
    /// Hummingbird's per-request storage.
    public var coreContext: CoreRequestContextStorage
    /// The peer's socket address, if known.
    public let remoteAddress: SocketAddress?
    /// This request's id (``RequestID``), sent back in `X-Request-ID` and `request_id`, and logged.
    public let requestID: String
    /// What the handlers learned about the request.
    public let record: RequestRecord

    /// Creates the context of a request arriving on `source`'s channel.
    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        remoteAddress = source.channel.remoteAddress
        requestID = RequestID.generate()
        record = RequestRecord()
    }

    /// The client's address as a trusted proxy forwarded it (``ClientAddressMiddleware``), when it did.
    public var forwardedClient: String?

    /// The client's address without the port (`127.0.0.1`, `::1`): the one a trusted proxy forwarded, else the peer's,
    /// or `unknown`; made when asked (only failures and the log line ask).
    public var clientAddress: String { forwardedClient ?? remoteAddress?.ipAddress ?? "unknown" }
}

/// What a request's handlers learned, read by the middleware that logs and measures the answer: the authenticated
/// caller, the app token named (for the log), and the verification outcome. A reference, so that what a handler
/// writes reaches the middleware around it (the context itself is passed down by value).
public final class RequestRecord: Sendable {
    /// The outcome of a verification route, as the log line and the metrics need it.
    struct Outcome: Sendable {
        /// Our `status` (0, Apple's code, or an HTTP-like code).
        var status: Int
        /// Who judged.
        var source: VerificationOutcome.Source
        /// The input's kind, when a receipt was read.
        var input: String?
        /// Why it failed, for the log only.
        var detail: String?
    }

    private struct State {
        var caller: Caller?
        var token: String?
        var outcome: Outcome?
    }

    private let state = Mutex(State())

    init() {}

    /// The authenticated caller, once authentication passed.
    var caller: Caller? {
        get { state.withLock { $0.caller } }
        set { state.withLock { $0.caller = newValue } }
    }

    /// The app token the request named, as it may be logged: a token's shape, or `malformed`.
    var token: String? {
        get { state.withLock { $0.token } }
        set { state.withLock { $0.token = newValue.map { App.hasTokenShape($0) ? $0 : "malformed" } } }
    }

    /// The verification outcome, for the verification routes.
    var outcome: Outcome? {
        get { state.withLock { $0.outcome } }
        set { state.withLock { $0.outcome = newValue } }
    }
}

/// Request ids: 24 hex digits, unique within the process and unpredictable across processes, made without a system
/// call (a `getrandom` per request cost /healthz a tenth of its rate): a counter, and its SipHash under the
/// process's random hashing seed.
enum RequestID {
    static let header = HTTPField.Name("X-Request-ID")!

    private static let counter = Atomic<UInt64>(0)
    private static let digits = Array("0123456789abcdef".utf8)

    static func generate() -> String {
        let count = counter.wrappingAdd(1, ordering: .relaxed).newValue
        var hasher = Hasher()
        hasher.combine(count)
        let mixed = UInt64(UInt(bitPattern: hasher.finalize()))
        return String(unsafeUninitializedCapacity: 24) { buffer in
            for index in 0..<16 { buffer[index] = digits[Int((mixed >> (60 - 4 * UInt64(index))) & 0xF)] }
            for index in 0..<8 { buffer[16 + index] = digits[Int((count >> (28 - 4 * UInt64(index))) & 0xF)] }
            return 24
        }
    }
}
