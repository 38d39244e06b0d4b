import Foundation
import NIOHTTP1
import ReceiptCore
import ReceiptTestKit
import TestSupport
import Testing

/// An integer JSON value.
private func integer(_ value: JSONValue?) -> Int? {
    guard case .integer(let number)? = value else { return nil }
    return Int(number)
}

/// Plans that bite, end to end: quotas, rate limits and metering on live `serve` processes.
@Suite(.serialized) struct UsageAPITests {
    /// The month's usage as `receiptverify usage --json` reports it: the total and the calls per outcome.
    struct Usage: Equatable {
        var total = 0
        var byOutcome: [String: Int] = [:]
    }

    static func usage(_ cli: CLI, account: String) throws -> Usage {
        let report = try cli.expectSuccess(["usage", "--account", account, "--json"]).jsonObject()
        var usage = Usage(total: integer(report["total"]) ?? -1)
        for row in report["rows"]?.arrayValue ?? [] {
            usage.byOutcome[row["outcome"]?.stringValue ?? "?", default: 0] += integer(row["calls"]) ?? 0
        }
        return usage
    }

    /// Polls `usage` until it equals `expected` (counts reach the database within the flush interval).
    static func expectUsage(_ cli: CLI, account: String, _ expected: Usage) async throws {
        var seen = Usage()
        for _ in 0..<50 {
            seen = try usage(cli, account: account)
            if seen == expected { return }
            try await Task.sleep(for: .milliseconds(100))
        }
        #expect(seen == expected)
    }

    @Test(
        "a tiny plan gets exactly its quota of verdicts, then 429 until the plan is raised",
        arguments: StoreKind.available)
    func quota(kind: StoreKind) async throws {
        // A long authentication cache: the plan and the account's state must still be read fresh on every call.
        try await withLiveService(kind, serveArguments: ["--auth-cache-ttl", "60", "--usage-flush-interval-ms", "100"])
        {
            service in
            try service.cli.expectSuccess(["plan", "set", "tiny", "--quota", "3", "--rate-limit", "100"])
            let tenant = try service.tenant(plan: "tiny", appArguments: ["--allow-test-data"])
            let valid = try service.receipt(count: 1)
            func call(_ receipt: String, apiKey: String? = nil) async throws -> LiveService.Answer {
                try await service.post(
                    form: [("apikey", apiKey ?? tenant.apiKey), ("token", tenant.token), ("receipt", receipt)])
            }

            // Three verdicts of the three classes; a refused key in between is not billable.
            #expect(try await call(valid).json()["status"] == .integer(0))
            #expect(try await call(valid, apiKey: "rv_wrong").json()["status"] == .integer(401))
            #expect(
                try await call(try service.receipt(count: 1, bundleID: "com.other.app")).json()["status"]
                    == .integer(403))
            #expect(try await call("AAAA").json()["status"] == .integer(21002))

            let refused = try await call(valid)
            #expect(refused.httpStatus == 429)
            let body = try refused.json()
            #expect(body["status"] == .integer(429))
            var calendar = Calendar(identifier: .gregorian)
            calendar.timeZone = TimeZone(identifier: "UTC")!
            let thisMonth = calendar.dateComponents([.year, .month], from: Date())
            let next = calendar.date(byAdding: .month, value: 1, to: calendar.date(from: thisMonth)!)!
            let nextMonth = ISO8601DateFormatter().string(from: next)
            #expect(body["quota_resets_at"] == .string(nextMonth))
            let description = try #require(body["description"]?.stringValue)
            #expect(
                description.contains("'tiny'") && description.contains("3 verifications")
                    && description.contains(nextMonth))
            let retryAfter = try #require(refused.header("Retry-After").flatMap(Int.init))
            #expect(retryAfter > 0 && retryAfter <= 31 * 86_400)
            #expect(body["retry_after"] == .integer(Int64(retryAfter)))
            #expect(try await call(valid).httpStatus == 429)

            // Upgrading takes effect on the next call, whatever the authentication cache holds.
            try service.cli.expectSuccess(["account", "set-plan", tenant.email, "pro"])
            #expect(try await call(valid).json()["status"] == .integer(0))
            // So does disabling the account.
            try service.cli.expectSuccess(["account", "disable", tenant.email])
            #expect(try await call(valid).json()["status"] == .integer(401))

            try await Self.expectUsage(
                service.cli, account: tenant.email,
                Usage(total: 4, byOutcome: ["valid": 2, "rejected": 1, "apple_code": 1]))
        }
    }

    @Test("a burst over the rate limit gets 429 with Retry-After; calls spaced under it all pass")
    func rateLimit() async throws {
        try await withLiveService(.sqlite) { service in
            try service.cli.expectSuccess(["plan", "set", "slow", "--quota", "unlimited", "--rate-limit", "2"])
            let tenant = try service.tenant(plan: "slow", appArguments: ["--allow-test-data"])
            let receipt = try service.receipt(count: 1)
            let fields = [("apikey", tenant.apiKey), ("token", tenant.token), ("receipt", receipt)]

            let burst = try await withThrowingTaskGroup(of: LiveService.Answer.self) { group in
                for _ in 0..<8 { group.addTask { try await service.post(form: fields) } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            let passed = burst.filter { $0.httpStatus == 200 }
            let limited = burst.filter { $0.httpStatus == 429 }
            // A burst of two (one second's worth), plus at most one token refilled while the burst arrives.
            #expect((2...3).contains(passed.count), "\(passed.count) of 8 passed")
            #expect(passed.count + limited.count == 8)
            for answer in limited {
                #expect(answer.header("Retry-After") == "1")
                let body = try answer.json()
                #expect(body["retry_after"] == .integer(1))
                #expect(body["description"]?.stringValue?.contains("2 requests per second") == true)
            }

            try await Task.sleep(for: .milliseconds(1100))
            for _ in 0..<5 {
                #expect(try await service.post(form: fields).json()["status"] == .integer(0))
                try await Task.sleep(for: .milliseconds(600))
            }
        }
    }

    @Test(
        "two servers on one PostgreSQL count every call exactly; kill -9 loses at most the last second",
        .enabled(if: StoreKind.available.contains(.postgres)))
    func twoServers() async throws {
        try await withLiveService(.postgres) { service in
            let tenant = try service.tenant(plan: "enterprise", appArguments: ["--allow-test-data"])
            let receipt = try service.receipt(count: 1)
            let fields = [("apikey", tenant.apiKey), ("token", tenant.token), ("receipt", receipt)]

            // M calls spread over two servers, then a graceful stop of both: exactly M counted.
            let first = try await service.startServer(logName: "a.log")
            let second = try await service.startServer(logName: "b.log")
            let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                var statuses: [Int] = []
                for index in 0..<60 {
                    let server = index % 2 == 0 ? first : second
                    group.addTask { integer(try await service.post(to: server, form: fields).json()["status"]) ?? -1 }
                    // Six calls in flight at a time.
                    if index >= 5, let status = try await group.next() { statuses.append(status) }
                }
                for try await status in group { statuses.append(status) }
                return statuses
            }
            #expect(statuses.count == 60 && statuses.allSatisfy { $0 == 0 })
            #expect(first.stop() == 0, "\(first.logText)")
            #expect(second.stop() == 0, "\(second.logText)")
            #expect(try Self.usage(service.cli, account: tenant.email) == Usage(total: 60, byOutcome: ["valid": 60]))

            // Load on two servers; one is killed with SIGKILL mid-load, the other stopped gracefully.
            let doomed = try await service.startServer(logName: "c.log")
            let survivor = try await service.startServer(logName: "d.log")
            let clock = ContinuousClock()
            let start = clock.now
            let killAt = start.advanced(by: .seconds(2))
            let stopAt = start.advanced(by: .seconds(3))
            struct Tally: Sendable {
                var answered: [ContinuousClock.Instant] = []
                var failed = 0
            }
            async let doomedTally: Tally = {
                var tally = Tally()
                while clock.now < stopAt {
                    do {
                        let answer = try await service.post(to: doomed, form: fields)
                        if try answer.json()["status"] == .integer(0) { tally.answered.append(clock.now) }
                    } catch {
                        tally.failed += 1
                        break
                    }
                }
                return tally
            }()
            async let survivorTally: Tally = {
                var tally = Tally()
                while clock.now < stopAt {
                    if try await service.post(to: survivor, form: fields).json()["status"] == .integer(0) {
                        tally.answered.append(clock.now)
                    }
                }
                return tally
            }()
            try await clock.sleep(until: killAt)
            let killed = clock.now
            kill(doomed.process.processIdentifier, SIGKILL)
            let lost = try await doomedTally
            let kept = try await survivorTally
            #expect(survivor.stop() == 0, "\(survivor.logText)")
            _ = doomed.stop()

            let counted = try Self.usage(service.cli, account: tenant.email).total - 60
            let answered = lost.answered.count + kept.answered.count
            // What the killed server answered in its last ~second may be lost; nothing before, nothing of the other.
            let recent = lost.answered.filter { $0 > killed.advanced(by: .milliseconds(-1500)) }.count
            #expect(lost.answered.count > 0 && kept.answered.count > 0)
            #expect(counted <= answered + lost.failed, "counted \(counted) of \(answered) answers")
            #expect(counted >= answered - recent, "counted \(counted) of \(answered) answers, \(recent) recent")

            // Accounts, keys and apps are intact: a fresh server verifies with the same key and token.
            let fresh = try await service.startServer(logName: "e.log")
            #expect(try await service.post(to: fresh, form: fields).json()["status"] == .integer(0))
            #expect(fresh.stop() == 0)
            try service.cli.expectSuccess(["account", "show", tenant.email])
            try service.cli.expectSuccess(["app", "show", tenant.token])
            #expect(
                try service.cli.expectSuccess(["key", "list", "--account", tenant.email]).stdout.contains(
                    String(tenant.apiKey.prefix(12))))
        }
    }

    /// The quota holds across servers: with a rate limit that does not bind, two servers answer no more verdicts than
    /// the quota between them (before grants, each answered the whole quota).
    @Test("two servers on one database answer no more than the quota between them", arguments: StoreKind.available)
    func quotaAcrossServers(kind: StoreKind) async throws {
        try await withLiveService(kind) { service in
            try service.cli.expectSuccess(["plan", "set", "metered", "--quota", "100", "--rate-limit", "100000"])
            let tenant = try service.tenant(plan: "metered", appArguments: ["--allow-test-data"])
            let receipt = try service.receipt(count: 1)
            let fields = [("apikey", tenant.apiKey), ("token", tenant.token), ("receipt", receipt)]
            let servers = [
                try await service.startServer(logName: "q1.log"), try await service.startServer(logName: "q2.log"),
            ]
            let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                var statuses: [Int] = []
                for index in 0..<300 {
                    let server = servers[index % 2]
                    group.addTask { integer(try await service.post(to: server, form: fields).json()["status"]) ?? -1 }
                    // Sixteen calls in flight at a time, over both servers.
                    if index >= 15, let status = try await group.next() { statuses.append(status) }
                }
                for try await status in group { statuses.append(status) }
                return statuses
            }
            let valid = statuses.filter { $0 == 0 }.count
            #expect(valid == 100, "\(valid) verdicts answered for a quota of 100")
            #expect(statuses.filter { $0 == 429 }.count == 300 - valid)
            for server in servers { #expect(server.stop() == 0, "\(server.logText)") }
            #expect(try Self.usage(service.cli, account: tenant.email).total == valid)
        }
    }
}
