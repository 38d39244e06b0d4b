import Hummingbird
import Logging
import NIOCore

/// Runs `router` as an HTTP server on a free loopback port for the duration of `body`, which gets its base URL
/// (`http://127.0.0.1:PORT`); the fakes of outside parties (Apple's servers) run this way.
public func withLoopbackServer<T: Sendable>(
    _ router: Router<BasicRequestContext>, label: String, _ body: @Sendable (String) async throws -> T
) async throws -> T {
    let (ports, continuation) = AsyncStream.makeStream(of: Int.self)
    var logger = Logger(label: label)
    logger.logLevel = .critical
    let app = Application(
        router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)),
        onServerRunning: { channel in
            continuation.yield(channel.localAddress?.port ?? 0)
            continuation.finish()
        }, logger: logger)
    return try await withThrowingTaskGroup(of: T?.self) { group in
        group.addTask {
            try await app.run()
            return nil
        }
        var iterator = ports.makeAsyncIterator()
        guard let port = await iterator.next(), port > 0 else { throw LoopbackServerError(label: label) }
        let result = try await body("http://127.0.0.1:\(port)")
        group.cancelAll()
        return result
    }
}

/// A fake that did not start listening.
public struct LoopbackServerError: Error {
    public let label: String
}
