import HTTPTypes
import NIOCore
import NIOHTTPTypes
import Synchronization

/// The server's open connections against its cap, shared by every connection's ``ConnectionGuard``.
///
/// The cap keeps the process below its file-descriptor limit: past it, a Swift process on Linux can die inside
/// libdispatch (which must open `/proc/<tid>/stat`), and the database, logs and files need descriptors too. At the
/// cap, a new connection takes the place of the connection that has waited longest for request bytes (idle, or
/// trickling a request), if that one has waited at least ``evictionAge``; otherwise the new one is closed at once.
/// A connection whose request is being answered is never displaced, so idle and slow clients cannot lock a normal
/// client out.
final class ConnectionLimiter: Sendable {
    /// The most connections open at once.
    let maximum: Int
    /// How long a connection must have waited for request bytes before a new connection may displace it.
    let evictionAge: Duration

    private struct State {
        var open = 0
        /// Connections waiting for request bytes, with the instant they began to wait.
        var waiting: [ObjectIdentifier: (channel: any Channel, since: ContinuousClock.Instant)] = [:]
        /// Connections displaced whose place went to another: their release gives nothing back.
        var displaced: Set<ObjectIdentifier> = []
    }

    private let state = Mutex(State())

    init(maximum: Int, evictionAge: Duration = .milliseconds(250)) {
        self.maximum = maximum
        self.evictionAge = evictionAge
    }

    /// The connections open now.
    var open: Int { state.withLock { $0.open } }

    /// Takes a place for a new connection; false when the cap is reached and no waiting connection can be displaced
    /// (the new connection is then closed).
    func admit() -> Bool {
        enum Decision {
            case admitted
            case displacing(any Channel)
            case refused
        }
        let now = ContinuousClock.now
        let decision: Decision = state.withLock { state in
            if state.open < maximum {
                state.open += 1
                return .admitted
            }
            guard let oldest = state.waiting.min(by: { $0.value.since < $1.value.since }),
                oldest.value.since.duration(to: now) >= evictionAge
            else { return .refused }
            state.waiting[oldest.key] = nil
            state.displaced.insert(oldest.key)
            return .displacing(oldest.value.channel)
        }
        switch decision {
        case .admitted: return true
        case .displacing(let victim):
            victim.close(promise: nil)
            return true
        case .refused: return false
        }
    }

    /// Marks connection `id` as waiting for request bytes: displaceable at the cap once it has waited long enough.
    func startWaiting(_ id: ObjectIdentifier, channel: any Channel) {
        let now = ContinuousClock.now
        state.withLock { $0.waiting[id] = (channel, now) }
    }

    /// Marks connection `id` as busy with a request: never displaced.
    func stopWaiting(_ id: ObjectIdentifier) {
        _ = state.withLock { $0.waiting.removeValue(forKey: id) }
    }

    /// Gives the place of connection `id` back.
    func release(_ id: ObjectIdentifier) {
        state.withLock { state in
            state.waiting[id] = nil
            if state.displaced.remove(id) == nil { state.open -= 1 }
        }
    }

}

/// Guards one connection: closes it at once when the server is at its connection cap, closes it when a request is
/// not received whole within the request timeout (a client trickling its head or body), and closes it after a
/// response that says `Connection: close` (a 413 whose body was not read).
///
/// It sits after the HTTP codec, so it sees request and response parts. The request timeout runs while the server
/// waits for request bytes: from the connection's start or its last response until a request's end has arrived;
/// it does not run while a request is being answered.
final class ConnectionGuard: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private let limiter: ConnectionLimiter
    private let requestTimeout: TimeAmount?
    private var admitted = false
    private var readingRequest = false
    /// Requests read whole and not answered yet.
    private var outstanding = 0
    private var closesAfterResponse = false
    private var deadline: Scheduled<Void>?
    /// Whether the limiter knows this connection as waiting for request bytes.
    private var waiting = false

    init(limiter: ConnectionLimiter, requestTimeout: TimeAmount?) {
        self.limiter = limiter
        self.requestTimeout = requestTimeout
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { admit(context: context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        if !admitted { admit(context: context) }
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        release()
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        release()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head:
            readingRequest = true
            if !waiting { arm(context: context) }
        case .body:
            break
        case .end:
            readingRequest = false
            outstanding += 1
            disarm()
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .head(let response):
            if response.headerFields[.connection]?.lowercased() == "close" { closesAfterResponse = true }
            context.write(data, promise: promise)
        case .body:
            context.write(data, promise: promise)
        case .end:
            outstanding = max(0, outstanding - 1)
            guard !closesAfterResponse else {
                let written = context.eventLoop.makePromise(of: Void.self)
                let channel = context.channel
                written.futureResult.whenComplete { _ in channel.close(promise: nil) }
                written.futureResult.cascade(to: promise)
                context.writeAndFlush(data, promise: written)
                return
            }
            context.write(data, promise: promise)
            if outstanding == 0, !readingRequest { arm(context: context) }
        }
    }

    private func admit(context: ChannelHandlerContext) {
        guard limiter.admit() else {
            context.close(promise: nil)
            return
        }
        admitted = true
        arm(context: context)
    }

    private func release() {
        disarm()
        if admitted {
            admitted = false
            limiter.release(ObjectIdentifier(self))
        }
    }

    /// Starts the request deadline, and marks the connection as waiting for request bytes (displaceable at the cap).
    private func arm(context: ChannelHandlerContext) {
        disarm()
        guard admitted else { return }
        waiting = true
        limiter.startWaiting(ObjectIdentifier(self), channel: context.channel)
        guard let requestTimeout else { return }
        let handler = NIOLoopBound(self, eventLoop: context.eventLoop)
        let channel = context.channel
        deadline = context.eventLoop.scheduleTask(in: requestTimeout) {
            guard handler.value.deadline != nil else { return }
            handler.value.deadline = nil
            channel.close(promise: nil)
        }
    }

    private func disarm() {
        deadline?.cancel()
        deadline = nil
        if waiting {
            waiting = false
            limiter.stopWaiting(ObjectIdentifier(self))
        }
    }
}
