import Foundation
import NIOHTTP1
import ReceiptCore
import TestSupport
import Testing

/// A PostgreSQL outage under a running server, made by cutting the link between them: answers fail fast with 503,
/// `/readyz` says so in time, service comes back by itself, and a stop ends within its deadline while the database
/// hangs.
@Suite(.serialized) struct OutageTests {
    @Test("a database outage: 503 within the deadline, /readyz 503, recovery, and a bounded stop")
    func databaseOutage() async throws {
        guard StoreKind.available.contains(.postgres) else {
            if SharedFixtures.isCI { Issue.record("the outage test needs PostgreSQL under CI") }
            return
        }
        try await withLiveService(.postgres) { service in
            var url = try #require(URLComponents(string: service.cli.database))
            let link = try FaultyLink(upstreamPort: try #require(url.port))
            defer { link.stop() }
            url.port = link.port
            let server = try await service.startServer(
                arguments: [
                    "--database", try #require(url.string), "--database-timeout-ms", "500", "--shutdown-timeout", "3",
                ], logName: "outage.log")
            defer { _ = server.stop() }
            let tenant = try service.tenant(appArguments: ["--allow-test-data"])
            let receipt = try service.receipt(count: 1)
            let fields = [("apikey", tenant.apiKey), ("token", tenant.token), ("receipt", receipt)]
            #expect(try await service.post(to: server, form: fields).httpStatus == 200)

            // The database stops answering: every call that needs it fails fast (the authentication cache is off).
            link.mode = .silent
            let clock = ContinuousClock()
            for _ in 0..<4 {
                let started = clock.now
                let answer = try await service.post(to: server, form: fields)
                #expect(answer.httpStatus == 503)
                #expect(answer.header("Retry-After") == "1")
                #expect(try answer.json()["retryable"] == .bool(true))
                #expect(started.duration(to: clock.now) < .seconds(2))
            }
            let started = clock.now
            let ready = try await service.post("/readyz", body: "", method: .GET, baseURL: server.baseURL)
            #expect(ready.httpStatus == 503)
            #expect(started.duration(to: clock.now) < .seconds(2))

            // It answers again: service resumes with no operator action.
            link.mode = .forwarding
            var recovered = false
            for _ in 0..<40 where !recovered {
                recovered = try await service.post(to: server, form: fields).httpStatus == 200
                if !recovered { try await Task.sleep(for: .milliseconds(250)) }
            }
            #expect(recovered)

            // A stop while the database hangs ends within the shutdown deadline (3 s) and the cancellation grace.
            link.mode = .silent
            _ = try? await service.post(to: server, form: fields)
            let stopping = clock.now
            kill(server.process.processIdentifier, SIGTERM)
            while server.process.isRunning, stopping.duration(to: clock.now) < .seconds(15) {
                try await Task.sleep(for: .milliseconds(100))
            }
            #expect(!server.process.isRunning)
            #expect(stopping.duration(to: clock.now) < .seconds(8))
            #expect(!server.logText.contains("http.status=500"))
        }
    }

    @Test("a listening connection that goes silent stops the in-memory answers until another one listens")
    func aDeafListenerStopsTheMemoryAnswers() async throws {
        guard StoreKind.available.contains(.postgres) else {
            if SharedFixtures.isCI { Issue.record("the deaf-listener test needs PostgreSQL under CI") }
            return
        }
        try await withLiveService(.postgres) { service in
            var url = try #require(URLComponents(string: service.cli.database))
            let link = try FaultyLink(upstreamPort: try #require(url.port))
            defer { link.stop() }
            url.port = link.port
            // Server A reaches the database through the relay; the service's own server, B, directly.
            let server = try await service.startServer(
                arguments: ["--database", try #require(url.string)], logName: "deaf.log")
            defer { _ = server.stop() }
            let tenant = try service.tenant(appArguments: ["--allow-test-data", "--delivery", "confirm"])
            let receipt = try LedgerAPITests.receipt(service, count: 1)
            let fields = [("apikey", tenant.apiKey), ("token", tenant.token), ("receipt", receipt)]
            func delivers() async throws -> Bool {
                let answer = try await service.post(to: server, form: fields).json()
                return answer["transactions"]?.arrayValue?.first?["deliver"] == .bool(true)
            }
            // Confirm mode: delivered until confirmed; A answers the second time from memory.
            #expect(try await delivers())
            #expect(try await delivers())

            // A's listening connection goes silent, with no reset; its pool still works.
            link.silencesListeners = true
            let confirmed = try await service.post(
                "/api/transactions/delivered",
                form: [("apikey", tenant.apiKey), ("token", tenant.token), ("transaction_ids", "1000000000")])
            #expect(confirmed.httpStatus == 200)
            // A never hears B's confirmation; once its heartbeat is missed it stops answering from memory.
            let clock = ContinuousClock()
            let started = clock.now
            var stillDelivers = true
            while stillDelivers, started.duration(to: clock.now) < .seconds(20) {
                stillDelivers = try await delivers()
                if stillDelivers { try await Task.sleep(for: .milliseconds(250)) }
            }
            #expect(!stillDelivers, "A still answered deliver: true from memory")
            #expect(started.duration(to: clock.now) < .seconds(10))
            // It closes the silent connection...
            var closed = false
            for _ in 0..<60 where !closed {
                closed = server.logText.contains("went silent")
                if !closed { try await Task.sleep(for: .milliseconds(250)) }
            }
            #expect(closed)
            // ...and listens on another one: then it answers from memory again.
            link.silencesListeners = false
            func memoryAnswers() async throws -> Int {
                let text = String(
                    decoding: try await service.post("/metrics", body: "", method: .GET, baseURL: server.baseURL).body,
                    as: UTF8.self)
                let line = text.split(separator: "\n").first {
                    $0.hasPrefix("receiptverify_ledger_memory_answers_total ")
                }
                return Int(line?.split(separator: " ").last ?? "") ?? -1
            }
            var answersFromMemory = false
            for _ in 0..<40 where !answersFromMemory {
                let before = try await memoryAnswers()
                _ = try await delivers()
                _ = try await delivers()
                answersFromMemory = try await memoryAnswers() > before
                if !answersFromMemory { try await Task.sleep(for: .milliseconds(250)) }
            }
            #expect(answersFromMemory)
        }
    }

    @Test("a stop during a database outage logs every unwritten count, per account")
    func aStopDuringAnOutageLogsTheCountsItCouldNotWrite() async throws {
        guard StoreKind.available.contains(.postgres) else {
            if SharedFixtures.isCI { Issue.record("the outage test needs PostgreSQL under CI") }
            return
        }
        try await withLiveService(.postgres) { service in
            var url = try #require(URLComponents(string: service.cli.database))
            let link = try FaultyLink(upstreamPort: try #require(url.port))
            defer { link.stop() }
            url.port = link.port
            // Counts wait in memory (no flush for a minute) until the stop.
            let server = try await service.startServer(
                arguments: [
                    "--database", try #require(url.string), "--database-timeout-ms", "500", "--shutdown-timeout", "5",
                    "--usage-flush-interval-ms", "60000",
                ], logName: "stop-outage.log")
            defer { _ = server.stop() }
            let tenant = try service.tenant(appArguments: ["--allow-test-data"])
            let account = try service.cli.expectSuccess(["account", "show", tenant.email, "--json"]).jsonObject()
            let accountID = try #require(account["id"]?.stringValue)
            let receipt = try service.receipt(count: 1)
            let fields = [("apikey", tenant.apiKey), ("token", tenant.token), ("receipt", receipt)]
            for _ in 0..<5 { #expect(try await service.post(to: server, form: fields).httpStatus == 200) }

            link.mode = .silent
            kill(server.process.processIdentifier, SIGTERM)
            let clock = ContinuousClock()
            let stopping = clock.now
            while server.process.isRunning, stopping.duration(to: clock.now) < .seconds(20) {
                try await Task.sleep(for: .milliseconds(100))
            }
            #expect(!server.process.isRunning)
            let lines = server.logText.split(separator: "\n").filter {
                $0.contains("usage counts could not be written before stopping")
            }
            #expect(lines.count == 1, "\(server.logText.suffix(2000))")
            #expect(lines.first?.contains("account.id=\(accountID)") == true)
            #expect(lines.first?.contains("usage.lost_calls=5") == true, "\(lines)")
        }
    }
}
