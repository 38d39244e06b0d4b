import Foundation
import Synchronization
import TestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// A TCP relay on loopback between the server and its PostgreSQL, to cut the link as an outage would: the real
/// database and the real protocol, with a switch in the middle.
///
/// - forwarding: bytes flow both ways.
/// - silent: connections stay open and nothing flows (a hung database or a dropped network).
/// - refusing: every connection is closed and new ones are closed at once (a stopped database).
///
/// Apart from the mode, ``silencesListeners`` makes every connection that has sent a `LISTEN` go silent, while the
/// others flow: a listening connection dropped without a reset (a NAT timeout, a failover), the pool unharmed.
final class FaultyLink: Sendable {
    enum Mode: Sendable {
        case forwarding
        case silent
        case refusing
    }

    /// The port the relay listens on.
    let port: Int
    private let upstreamPort: Int
    private let listener: Int32
    private let state = Mutex<(mode: Mode, stopped: Bool, silencesListeners: Bool)>((.forwarding, false, false))

    init(upstreamPort: Int) throws {
        self.upstreamPort = upstreamPort
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        self.listener = listener
        var address = loopbackAddress(port: 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(listener, pointer, length) == 0 && listen(listener, 64) == 0
                    && getsockname(listener, pointer, &length) == 0
            }
        }
        guard bound else { throw SetupError("the relay could not listen") }
        port = Int(UInt16(bigEndian: address.sin_port))
        let relay = self
        Thread.detachNewThread { relay.acceptLoop() }
    }

    var mode: Mode {
        get { state.withLock { $0.mode } }
        set { state.withLock { $0.mode = newValue } }
    }

    /// Whether connections that have sent a `LISTEN` go silent.
    var silencesListeners: Bool {
        get { state.withLock { $0.silencesListeners } }
        set { state.withLock { $0.silencesListeners = newValue } }
    }

    func stop() {
        state.withLock { $0.stopped = true }
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
    }

    private var stopped: Bool { state.withLock { $0.stopped } }

    private func acceptLoop() {
        while !stopped {
            let client = accept(listener, nil, nil)
            guard client >= 0 else { return }
            if mode == .refusing {
                close(client)
                continue
            }
            let relay = self
            Thread.detachNewThread { relay.pump(client) }
        }
    }

    private func pump(_ client: Int32) {
        defer { close(client) }
        guard let server = connectLoopback(port: upstreamPort) else { return }
        defer { close(server) }
        var buffer = [UInt8](repeating: 0, count: 65_536)
        var listens = false
        while !stopped {
            switch mode {
            case .refusing: return
            case .silent:
                usleep(20_000)
                continue
            case .forwarding: break
            }
            if listens, silencesListeners {
                usleep(20_000)
                continue
            }
            var descriptors = [
                pollfd(fd: client, events: Int16(POLLIN), revents: 0),
                pollfd(fd: server, events: Int16(POLLIN), revents: 0),
            ]
            guard poll(&descriptors, 2, 50) >= 0 else { return }
            for (index, (from, to)) in [(client, server), (server, client)].enumerated()
            where descriptors[index].revents != 0 {
                let count = recv(from, &buffer, buffer.count, 0)
                guard count > 0, Self.sendAll(to, buffer[0..<count]) else { return }
                if from == client, !listens { listens = Self.contains(buffer[0..<count], "LISTEN ") }
            }
        }
    }

    private static func contains(_ bytes: ArraySlice<UInt8>, _ text: String) -> Bool {
        let needle = Array(text.utf8)
        guard bytes.count >= needle.count else { return false }
        return bytes.indices.dropLast(needle.count - 1).contains {
            bytes[$0..<($0 + needle.count)].elementsEqual(needle)
        }
    }

    private static func sendAll(_ descriptor: Int32, _ bytes: ArraySlice<UInt8>) -> Bool {
        var rest = bytes
        while !rest.isEmpty {
            let sent = rest.withUnsafeBytes { send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard sent > 0 else { return false }
            rest = rest.dropFirst(sent)
        }
        return true
    }
}
