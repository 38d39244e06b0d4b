import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// What a client can do to a connection, and what the server does about it: silent connections closed after
/// `--idle-timeout`, trickling ones after `--request-timeout`, oversized bodies answered and closed, malformed HTTP
/// answered 400, and connections capped below the descriptor limit without locking a normal client out.
@Suite(.serialized) struct ConnectionTests {
    /// A blocking TCP connection to 127.0.0.1:`port`.
    final class RawConnection: @unchecked Sendable {  // an immutable descriptor; the kernel serialises its use
        let descriptor: Int32

        init(port: Int) throws {
            guard let descriptor = connectLoopback(port: port) else { throw SetupError("connect failed") }
            self.descriptor = descriptor
            // Reads give up after 10 s, so a server that never closes fails the test instead of hanging it.
            var timeout = timeval(tv_sec: 10, tv_usec: 0)
            setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        }

        /// Sends `text`; false when the connection is gone (never a SIGPIPE).
        @discardableResult
        func send(_ text: String) -> Bool {
            text.utf8CString.withUnsafeBufferPointer {
                Glibc.send(descriptor, $0.baseAddress, $0.count - 1, Int32(MSG_NOSIGNAL)) == $0.count - 1
            }
        }

        /// One request with `Connection: close`, and the whole answer (nil if the server did not close in time).
        func exchange(_ request: String) -> String? {
            send(request)
            return readUntilClosed()
        }

        /// Reads until the server closes the connection (or resets it); returns what it sent, or nil if it did not close
        /// in time.
        func readUntilClosed() -> String? {
            var received: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let count = recv(descriptor, &buffer, buffer.count, 0)
                if count == 0 { return String(decoding: received, as: UTF8.self) }
                // A server that closes a connection its client is still writing to resets it (RST): closed as well.
                if count < 0 { return errno == ECONNRESET ? String(decoding: received, as: UTF8.self) : nil }
                received += buffer[0..<count]
            }
        }

        /// Whether the server closes the connection within `milliseconds` (data it sends first is skipped).
        func isClosed(within milliseconds: Int32) -> Bool {
            var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, milliseconds) == 1 else { return false }
            var buffer = [UInt8](repeating: 0, count: 4096)
            return recv(descriptor, &buffer, buffer.count, Int32(MSG_DONTWAIT)) == 0
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

    static func port(of service: LiveService) throws -> Int {
        try #require(Int(service.baseURL.split(separator: ":").last ?? ""))
    }

    @Test("HTTP hygiene: HEAD health checks, a UTF-16 body refused, a bad chunk is 400, a 413 closes its connection")
    func hygiene() async throws {
        try await withLiveService(.sqlite, serveArguments: ["--max-body-size", "65536"]) { service in
            let port = try Self.port(of: service)
            for path in ["/healthz", "/readyz"] {
                let answer = try RawConnection(port: port).exchange(
                    "HEAD \(path) HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
                #expect(answer?.hasPrefix("HTTP/1.1 200") == true, "\(path): \(answer ?? "no answer")")
            }

            let utf16 = try await service.post("/api", body: "{}", contentType: "application/json; charset=utf-16")
            #expect(utf16.httpStatus == 415)
            let utf8 = try await service.post("/api", body: "{}", contentType: "application/json; charset=\"UTF-8\"")
            #expect(utf8.httpStatus == 401)

            let chunked = try RawConnection(port: port).exchange(
                "POST /api HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                    + "Transfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n")
            #expect(chunked?.hasPrefix("HTTP/1.1 400") == true, "\(chunked ?? "no answer")")

            // Declared too large: answered 413 at once and closed, without waiting for the 10 MB.
            let clock = ContinuousClock()
            let started = clock.now
            let oversized = try RawConnection(port: port).exchange(
                "POST /api HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                    + "Content-Length: 10000000\r\n\r\n{\"receipt\": \"")
            #expect(oversized?.hasPrefix("HTTP/1.1 413") == true, "\(oversized ?? "no answer")")
            #expect(started.duration(to: clock.now) < .seconds(5))

            // None of it is a server error.
            #expect(!service.logText.contains("request failed"))
            #expect(!service.logText.contains("http.status=500"))
        }
    }

    @Test("a client trickling a request is closed at the request timeout, though it is never silent")
    func tricklingClientsAreClosed() async throws {
        try await withLiveService(.sqlite, serveArguments: ["--request-timeout", "2"]) { service in
            let connection = try RawConnection(port: try Self.port(of: service))
            connection.send(
                "POST /api HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n"
            )
            let clock = ContinuousClock()
            let started = clock.now
            // One byte every 200 ms keeps the idle timeout (30 s) from ever firing.
            let trickle = Task.detached {
                for _ in 0..<50 {
                    guard connection.send("a") else { return }
                    try? await Task.sleep(for: .milliseconds(200))
                }
            }
            #expect(connection.readUntilClosed() != nil)
            let elapsed = started.duration(to: clock.now)
            trickle.cancel()
            #expect(elapsed >= .seconds(1) && elapsed < .seconds(6), "closed after \(elapsed)")
            #expect(!service.logText.contains("request failed"))
        }
    }

    @Test("at the connection cap a new connection is closed at once, unless an idle one can make room")
    func connectionCap() async throws {
        try await withLiveService(.sqlite, serveArguments: ["--max-connections", "4"]) { service in
            let port = try Self.port(of: service)
            let idle = try (0..<4).map { _ in try RawConnection(port: port) }
            try await Task.sleep(for: .milliseconds(50))
            // The four have waited less than the quarter second that makes a connection displaceable: the fifth is
            // refused at once.
            let clock = ContinuousClock()
            let started = clock.now
            #expect(try RawConnection(port: port).readUntilClosed() == "")
            #expect(started.duration(to: clock.now) < .seconds(2))

            // Once they have waited, a new client displaces the longest-waiting one and is served.
            try await Task.sleep(for: .milliseconds(1_200))
            let answer = try RawConnection(port: port).exchange(
                "GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
            #expect(answer?.hasPrefix("HTTP/1.1 200") == true, "\(answer ?? "no answer")")
            // Exactly one of the four made room.
            #expect(idle.filter { $0.isClosed(within: 500) }.count == 1)
        }
    }

    @Test("a connection flood at a low descriptor limit neither kills the server nor locks a normal client out")
    func connectionFlood() async throws {
        try await withLiveService(.sqlite) { service in
            // 256 descriptors: the default cap leaves room for the database, logs and the runtime.
            let server = try await service.startServer(logName: "flood.log", descriptorLimit: 256)
            defer { _ = server.stop() }
            var flood: [RawConnection] = []
            for _ in 0..<400 {
                guard let connection = try? RawConnection(port: server.port) else { break }
                flood.append(connection)
            }
            #expect(flood.count >= 300)
            try await Task.sleep(for: .milliseconds(1_500))
            #expect(server.process.isRunning)
            // A normal client is served while the flood holds its connections open.
            var served = false
            for _ in 0..<10 where !served {
                let answer = try? RawConnection(port: server.port).exchange(
                    "GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
                served = answer?.hasPrefix("HTTP/1.1 200") == true
                if !served { try await Task.sleep(for: .milliseconds(300)) }
            }
            #expect(served)
            flood.removeAll()
            #expect(server.process.isRunning)
            #expect(server.logText.contains("http.max_connections=16"))
        }
    }

    @Test("bodies in flight share one memory budget; a stranger's bearer key is refused before its body is read")
    func bodyMemoryBudget() async throws {
        try await withLiveService(
            .sqlite,
            serveArguments: [
                "--max-body-size", "1048576", "--max-body-memory", "4194304", "--trusted-proxies", "127.0.0.1/32",
            ]
        ) { service in
            let port = try Self.port(of: service)
            func head(from address: String, length: Int = 1_000_000) -> String {
                "POST /api HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/x-www-form-urlencoded\r\n"
                    + "X-Forwarded-For: \(address)\r\nContent-Length: \(length)\r\n"
            }
            let chunk = "receipt=" + String(repeating: "A", count: 200_000)
            // One address's bodies, really arriving, hold at most its share (an eighth, at least a body and a
            // granule): the second 1 MB body from the same address is refused 503 at once, without being read.
            let holding = try RawConnection(port: port)
            #expect(holding.send(head(from: "203.0.113.1") + "\r\n" + chunk + String(repeating: "A", count: 700_000)))
            try await Task.sleep(for: .milliseconds(300))
            let clock = ContinuousClock()
            var started = clock.now
            let second = try RawConnection(port: port)
            _ = second.send(head(from: "203.0.113.1") + "\r\n" + chunk)
            let refused = second.readUntilClosed()
            #expect(refused?.hasPrefix("HTTP/1.1 503") == true, "\(refused ?? "no answer")")
            #expect(refused?.lowercased().contains("retry-after: 1") == true)
            #expect(started.duration(to: clock.now) < .seconds(3))

            // Another address's small body is answered meanwhile.
            let tenant = try service.tenant()
            let answered = try await service.post(
                form: [("apikey", tenant.apiKey), ("token", tenant.token), ("receipt", try service.receipt(count: 1))],
                headers: [("X-Forwarded-For", "198.51.100.1")])
            #expect(answered.httpStatus != 503)

            // An unknown bearer key: 401 before a byte of the body is read, and the connection closed.
            started = clock.now
            let stranger = try RawConnection(port: port).exchange(
                head(from: "203.0.113.2") + "Authorization: Bearer rvk_" + String(repeating: "0", count: 48)
                    + "\r\n\r\nreceipt=")
            #expect(stranger?.hasPrefix("HTTP/1.1 401") == true, "\(stranger ?? "no answer")")
            #expect(started.duration(to: clock.now) < .seconds(3))
            withExtendedLifetime(holding) {}
        }
    }

    /// N1 of the abuse run: 40 connections that declare 2 MiB bodies and trickle them hold a granule each (not what
    /// they declare), from one address at most its share, and a paying client is answered while they wait.
    @Test("slow strangers declaring large bodies take nothing from a paying client")
    func slowStrangersTakeNothing() async throws {
        try await withLiveService(.sqlite, serveArguments: ["--trusted-proxies", "127.0.0.1/32"]) { service in
            let port = try Self.port(of: service)
            let tenant = try service.tenant()
            var strangers: [RawConnection] = []
            for index in 0..<40 {
                let connection = try RawConnection(port: port)
                // Half from one address, half each from its own.
                let address = index < 20 ? "203.0.113.7" : "198.51.100.\(index)"
                _ = connection.send(
                    "POST /api HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\n"
                        + "X-Forwarded-For: \(address)\r\nContent-Length: 2097152\r\n\r\na")
                strangers.append(connection)
            }
            try await Task.sleep(for: .milliseconds(300))
            for _ in 0..<5 {
                let answer = try await service.post(form: [
                    ("apikey", tenant.apiKey), ("token", tenant.token), ("receipt", try service.receipt(count: 1)),
                ])
                #expect(answer.httpStatus != 503, "a paying client got 503 while strangers held bodies")
            }
            withExtendedLifetime(strangers) {}
        }
    }

    /// A burst client in Python: `count` connections at once, each sending a body of `size` bytes; prints how many
    /// got each status line (or were reset: the server may close on a refused body without reading it).
    static let burstClient = #"""
        import socket, sys, threading, collections
        port, count, size = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
        body = b"apikey=rvk_" + b"0" * 48 + b"&token=app_x&receipt=" + b"A" * size
        head = b"POST /api HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\n"
        request = head + b"Connection: close\r\nContent-Length: %d\r\n\r\n" % len(body) + body
        seen = collections.Counter()
        def one():
            try:
                s = socket.create_connection(("127.0.0.1", port), timeout=20)
                s.sendall(request)
                seen[s.recv(12).decode()] += 1
            except OSError:
                seen["reset"] += 1
        threads = [threading.Thread(target=one) for _ in range(count)]
        for t in threads: t.start()
        for t in threads: t.join()
        print(dict(seen))
        """#

    @Test("a burst of large bodies stays within the memory budget, and the memory goes back down after it")
    func memoryAfterABurst() async throws {
        try await withLiveService(.sqlite) { service in
            func residentKiB() throws -> Int {
                let status = try String(contentsOfFile: "/proc/\(service.processID)/status", encoding: .utf8)
                let line = try #require(status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") })
                return try #require(Int(line.split(separator: " ", omittingEmptySubsequences: true)[1]))
            }
            let port = try Self.port(of: service)
            func burst(_ count: Int) throws -> Process {
                let process = Process()
                process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
                process.arguments = ["python3", "-c", Self.burstClient, "\(port)", "\(count)", "1900000"]
                process.standardOutput = FileHandle.nullDevice
                try launch(process)
                return process
            }
            let warmup = try burst(2)
            warmup.waitUntilExit()
            try await Task.sleep(for: .milliseconds(500))
            let before = try residentKiB()
            // 200 bodies of 1.9 MB at once: 380 MB unbudgeted; the 64 MiB budget turns most away.
            let client = try burst(200)
            var peak = before
            while client.isRunning {
                peak = max(peak, try residentKiB())
                try await Task.sleep(for: .milliseconds(20))
            }
            try await Task.sleep(for: .milliseconds(1_500))
            let after = try residentKiB()
            #expect(peak - before < 256 * 1024, "resident \(before) KiB before the burst, \(peak) KiB at its peak")
            #expect(after - before < 48 * 1024, "resident \(before) KiB before the burst, \(after) KiB after")
            #expect(try await service.post("/api", body: "x=1").httpStatus == 401)
        }
    }
}
