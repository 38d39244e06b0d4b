import Foundation
import ReceiptCore
import Synchronization
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Everything a stranger can throw at the server at once, and a database outage on top, for a bounded time: the
/// server must not crash, answer no 5xx but the promised 503s, and keep answering a probe client throughout.
@Suite(.serialized) struct AbuseRunTests {
    typealias RawConnection = ConnectionTests.RawConnection

    /// What the attack threads share: when to stop, the probe's record, the statuses seen.
    final class Run: Sendable {
        private let stopped = Atomic<Bool>(false)
        let probes = Mutex<(answered: Int, missed: Int, worst: Duration)>((0, 0, .zero))
        let statuses = Mutex<[String: Int]>([:])

        var isStopped: Bool { stopped.load(ordering: .relaxed) }
        func stop() { stopped.store(true, ordering: .relaxed) }

        func record(_ answer: String?) {
            let line = answer.map { String($0.prefix(12)) } ?? "closed"
            statuses.withLock { $0[line, default: 0] += 1 }
        }

        /// Runs `body` on its own thread until stopped (blocking sockets stay off the concurrency pool).
        func loop(_ body: @escaping @Sendable () -> Void) -> Thread {
            let thread = Thread { [self] in
                while !isStopped { body() }
            }
            thread.start()
            return thread
        }
    }

    @Test("abuse run: bad input, slow clients, large JSON, a flood at a low descriptor limit, a database outage")
    func abuseRun() async throws {
        let kind: StoreKind = StoreKind.available.contains(.postgres) ? .postgres : .sqlite
        try await withLiveService(kind) { service in
            var arguments = ["--request-timeout", "3", "--database-timeout-ms", "500", "--auth-cache-ttl", "0"]
            var link: FaultyLink?
            if kind == .postgres {
                var url = try #require(URLComponents(string: service.cli.database))
                let relay = try FaultyLink(upstreamPort: try #require(url.port))
                url.port = relay.port
                arguments += ["--database", try #require(url.string)]
                link = relay
            }
            defer { link?.stop() }
            let server = try await service.startServer(arguments: arguments, logName: "abuse.log", descriptorLimit: 512)
            defer { _ = server.stop() }
            let port = server.port
            let tenant = try service.tenant(appArguments: ["--allow-test-data"])
            let receipt = try service.receipt(count: 1)
            let good =
                "apikey=\(tenant.apiKey)&token=\(tenant.token)&receipt="
                + (receipt.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")
            func post(_ body: String, contentType: String = "application/x-www-form-urlencoded") -> String {
                "POST /api HTTP/1.1\r\nHost: localhost\r\nContent-Type: \(contentType)\r\nConnection: close\r\n"
                    + "Content-Length: \(body.utf8.count)\r\n\r\n\(body)"
            }

            let run = Run()
            let largeJSON = "{" + (0..<120_000).map { "\"k\($0)\":1" }.joined(separator: ",") + "}"
            let garbage = [
                post("{\"apikey\": ", contentType: "application/json"), post("token=%zz"),
                post("x", contentType: "text/plain"),
                "GARBAGE / HTTP/9.9\r\n\r\n", "POST /api HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
                post("apikey=rvk_\(String(repeating: "1", count: 48))&token=app_x&receipt=AAAA"),
                post(largeJSON, contentType: "application/json"), post(good), post(good),
            ]
            var threads: [Thread] = []
            // The probe: a fresh connection every 100 ms, retried for up to two seconds.
            threads.append(
                run.loop {
                    let clock = ContinuousClock()
                    let started = clock.now
                    var answered = false
                    while !answered, started.duration(to: clock.now) < .seconds(2) {
                        let answer = try? RawConnection(port: port).exchange(
                            "GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
                        answered = answer?.hasPrefix("HTTP/1.1 200") == true
                        if !answered { usleep(50_000) }
                    }
                    let elapsed = started.duration(to: clock.now)
                    run.probes.withLock {
                        if answered { $0.answered += 1 } else { $0.missed += 1 }
                        $0.worst = max($0.worst, elapsed)
                    }
                    usleep(100_000)
                })
            // Bad input and real calls, two threads.
            for offset in 0..<2 {
                threads.append(
                    run.loop {
                        for request in garbage.shuffled().prefix(3 + offset) {
                            run.record(try? RawConnection(port: port).exchange(request))
                        }
                    })
            }
            // Slow clients: a body trickled a byte a second.
            threads.append(
                run.loop {
                    guard let slow = try? RawConnection(port: port) else { return }
                    slow.send(
                        "POST /api HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n"
                    )
                    for _ in 0..<6 where !run.isStopped {
                        guard slow.send("a") else { break }
                        sleep(1)
                    }
                })
            // A flood: 600 connections opened and held for two seconds, again and again (the server has 512 descriptors).
            threads.append(
                run.loop {
                    var flood: [RawConnection] = []
                    for _ in 0..<600 {
                        guard let connection = try? RawConnection(port: port) else { break }
                        flood.append(connection)
                    }
                    sleep(2)
                    flood.removeAll()
                })

            // The database goes silent for three seconds in the middle of it all, then comes back.
            try await Task.sleep(for: .seconds(4))
            link?.mode = .silent
            try await Task.sleep(for: .seconds(3))
            link?.mode = .forwarding
            try await Task.sleep(for: .seconds(5))
            run.stop()
            for thread in threads { while thread.isExecuting { try await Task.sleep(for: .milliseconds(50)) } }

            #expect(server.process.isRunning, "the server died: \(server.logText.suffix(2_000))")
            let probe = run.probes.withLock { $0 }
            #expect(probe.answered >= 20)
            #expect(probe.missed == 0, "probes missed: \(probe.missed), worst wait \(probe.worst)")
            // Every 5xx in the log is a promised 503 (database outage, body budget).
            let serverErrors = server.logText.split(separator: "\n").filter {
                $0.contains("http.status=5") && !$0.contains("http.status=503")
            }
            #expect(serverErrors.isEmpty, "\(serverErrors.prefix(3))")
            let seen = run.statuses.withLock { $0 }
            #expect(seen.keys.allSatisfy { !$0.hasPrefix("HTTP/1.1 50") || $0 == "HTTP/1.1 503" }, "\(seen)")
            #expect(seen["HTTP/1.1 200", default: 0] > 0, "\(seen)")
            // And the server still works normally afterwards.
            let after = try RawConnection(port: port).exchange(post(good))
            #expect(after?.hasPrefix("HTTP/1.1 200") == true, "\(after ?? "no answer")")
        }
    }
}
