import Hummingbird
import Logging
import NIOCore

/// The request context of every route: Hummingbird's core context, and the address the request came from (the
/// TCP peer: behind a reverse proxy, the proxy's address).
public struct ServerContext: RequestContext {
    /// Hummingbird's per-request storage.
    public var coreContext: CoreRequestContextStorage
    /// The peer's socket address, if known.
    public let remoteAddress: SocketAddress?

    /// Creates the context of a request arriving on `source`'s channel.
    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        remoteAddress = source.channel.remoteAddress
    }

    /// The peer's address without the port (`127.0.0.1`, `::1`), or `unknown`; made when asked (only failures ask).
    public var clientAddress: String { remoteAddress?.ipAddress ?? "unknown" }
}
