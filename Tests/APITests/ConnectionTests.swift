import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Connections that send nothing are closed after `--idle-timeout`, between requests or in the middle of one.
@Suite(.serialized) struct ConnectionTests {
    /// A blocking TCP connection to 127.0.0.1:`port`.
    final class RawConnection {
        let descriptor: Int32

        init(port: Int) throws {
            descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            guard descriptor >= 0 else { throw SetupError("socket failed") }
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(port).bigEndian)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            guard connected == 0 else {
                close(descriptor)
                throw SetupError("connect failed")
            }
            // Reads give up after 10 s, so a server that never closes fails the test instead of hanging it.
            var timeout = timeval(tv_sec: 10, tv_usec: 0)
            setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        }

        func send(_ text: String) {
            _ = text.utf8CString.withUnsafeBufferPointer { Glibc.send(descriptor, $0.baseAddress, $0.count - 1, 0) }
        }

        /// Reads until the server closes the connection; returns what it sent, or nil if it did not close in time.
        func readUntilClosed() -> String? {
            var received: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let count = recv(descriptor, &buffer, buffer.count, 0)
                if count == 0 { return String(decoding: received, as: UTF8.self) }
                if count < 0 { return nil }
                received += buffer[0..<count]
            }
        }

        deinit { close(descriptor) }
    }

    @Test("an idle connection and a stalled request are closed after the idle timeout")
    func idleConnectionsAreClosed() async throws {
        try await withLiveService(.sqlite, serveArguments: ["--idle-timeout", "1"]) { service in
            let port = try #require(Int(service.baseURL.split(separator: ":").last ?? ""))
            let clock = ContinuousClock()

            let idle = try RawConnection(port: port)
            let started = clock.now
            #expect(idle.readUntilClosed() == "")
            #expect(started.duration(to: clock.now) < .seconds(5))

            // Half a request, then nothing.
            let stalled = try RawConnection(port: port)
            stalled.send(
                "POST /api HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"
            )
            #expect(stalled.readUntilClosed() != nil)

            // A kept-alive connection answers, then is closed once it falls silent.
            let keptAlive = try RawConnection(port: port)
            keptAlive.send("GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
            let answer = try #require(keptAlive.readUntilClosed())
            #expect(answer.hasPrefix("HTTP/1.1 200"))
        }
    }
}
