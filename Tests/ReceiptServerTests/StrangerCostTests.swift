import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
import ReceiptCore
import ReceiptServer
import ReceiptService
import ReceiptStore
import Testing

/// What a client without a key can make the server spend, and what a database outage does to answers: measured in
/// database reads through an instrumented store, in-process over `app.test(.router)`.
@Suite struct StrangerCostTests {
    struct Tenant {
        let apiKey: String
        let token: String
    }

    /// An application over a fresh SQLite store seen through an ``InstrumentedStore``, with one tenant.
    func withApplication(
        _ configuration: ServerConfiguration = ServerConfiguration.forTests(),
        _ body:
            @Sendable (Application<RouterResponder<ServerContext>>, InstrumentedStore, Tenant, Tenant) async throws
            -> Void
    ) async throws {
        try await withTemporarySQLite { base, logger in
            let store = InstrumentedStore(base)
            let tenancy = TenancyService(store: store, masterKey: MasterKey.generate())
            func tenant(_ email: String) async throws -> Tenant {
                _ = try await tenancy.createAccount(name: "Acme", email: email, planName: "enterprise")
                let key = try await tenancy.createAPIKey(account: email, label: nil)
                var settings = AppSettings()
                settings.bundleIDs = ["com.example.app"]
                let app = try await tenancy.addApp(account: email, settings: settings)
                return Tenant(apiKey: key.clearText, token: app.token)
            }
            let first = try await tenant("a@example.com")
            let second = try await tenant("b@example.com")
            try await body(
                try buildApplication(
                    configuration: configuration, tenancy: tenancy,
                    verification: VerificationService(verifier: nil, apple: nil), logger: logger),
                store, first, second)
        }
    }

    static func form(_ fields: [(String, String)]) -> ByteBuffer {
        ByteBuffer(
            string: fields.map { "\($0.0)=\($0.1.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")" }
                .joined(separator: "&"))
    }

    static func post(_ client: some TestClientProtocol, _ fields: [(String, String)]) async throws -> TestResponse {
        try await client.execute(
            uri: "/api", method: .post, headers: [.contentType: "application/x-www-form-urlencoded"],
            body: form(fields + [("receipt", "MIIB")]))
    }

    static func randomKey() -> String {
        "rvk_" + (0..<48).map { _ in String("0123456789abcdef".randomElement()!) }.joined()
    }

    @Test func madeUpKeysCostTheDatabaseNoMoreThanTheFailureBudget() async throws {
        var configuration = ServerConfiguration.forTests()
        configuration.failedAuthenticationsPerSecond = 10
        try await withApplication(configuration) { app, store, tenant, _ in
            try await app.test(.router) { client in
                let lookupsBefore = store.count("apiKey")  // creating the keys looked their prefixes up
                var statuses: [HTTPResponse.Status: Int] = [:]
                let clock = ContinuousClock()
                let started = clock.now
                for _ in 0..<300 {
                    let response = try await Self.post(client, [("apikey", Self.randomKey()), ("token", tenant.token)])
                    statuses[response.status, default: 0] += 1
                    if response.status == .tooManyRequests { #expect(response.headers[.retryAfter] != nil) }
                }
                // One second's burst of failures reaches the database, then ten a second (however slowly this
                // machine ran the loop); the rest is 429 without a read.
                let seconds = Int(started.duration(to: clock.now).components.seconds) + 1
                let budget = 10 + 10 * seconds
                #expect(store.count("apiKey") - lookupsBefore <= budget)
                #expect(statuses[.unauthorized, default: 0] <= budget)
                #expect(statuses[.tooManyRequests, default: 0] >= 300 - budget)
                #expect(statuses[.unauthorized, default: 0] + statuses[.tooManyRequests, default: 0] == 300)

                // The same address's real key still works from the caches... once it has been seen.
                let before = store.count("apiKey")
                let known = try await Self.post(client, [("apikey", tenant.apiKey), ("token", tenant.token)])
                #expect(known.status == .tooManyRequests || known.status == .ok)
                #expect(store.count("apiKey") == before)
            }
        }
    }

    /// Made-up keys sent at once from one address (the abuse run's 32 connections) reach the database no more often
    /// than the budget allows: each lookup spends its unit before it is made, so concurrent requests cannot all pass
    /// one check. The database is held, as under load, so that every request is in flight together.
    @Test func concurrentMadeUpKeysSpendTheBudgetBeforeTheirLookups() async throws {
        var configuration = ServerConfiguration.forTests()
        configuration.failedAuthenticationsPerSecond = 10
        configuration.databaseTimeout = .milliseconds(500)
        try await withApplication(configuration) { app, store, tenant, _ in
            try await app.test(.router) { client in
                let before = store.count("apiKey")
                let clock = ContinuousClock()
                let started = clock.now
                store.stall()
                let statuses = try await withThrowingTaskGroup(of: HTTPResponse.Status.self) { group in
                    for _ in 0..<100 {
                        group.addTask {
                            try await Self.post(client, [("apikey", Self.randomKey()), ("token", tenant.token)]).status
                        }
                    }
                    return try await group.reduce(into: [HTTPResponse.Status]()) { $0.append($1) }
                }
                store.resume()
                let seconds = Int(started.duration(to: clock.now).components.seconds) + 1
                let reads = store.count("apiKey") - before
                #expect(reads <= 10 + 10 * seconds, "\(reads) key lookups in \(seconds) s")
                #expect(statuses.filter { $0 == .tooManyRequests }.count >= 100 - (10 + 10 * seconds))
            }
        }
    }

    /// A busy app's first requests after a start, all at once with one key and one token from one address, share one
    /// lookup of each: none is refused for the failure budget that strangers' made-up keys spend.
    @Test func concurrentFirstRequestsOfOneKeyShareOneLookup() async throws {
        var configuration = ServerConfiguration.forTests()
        configuration.failedAuthenticationsPerSecond = 10
        try await withApplication(configuration) { app, store, tenant, _ in
            try await app.test(.router) { client in
                let before = (keys: store.count("apiKey"), apps: store.count("app"))
                store.stall()
                let statuses = try await withThrowingTaskGroup(of: HTTPResponse.Status.self) { group in
                    for _ in 0..<32 {
                        group.addTask {
                            try await Self.post(client, [("apikey", tenant.apiKey), ("token", tenant.token)]).status
                        }
                    }
                    // The lookups are held until every request waits for them.
                    try await Task.sleep(for: .milliseconds(200))
                    store.resume()
                    return try await group.reduce(into: [HTTPResponse.Status]()) { $0.append($1) }
                }
                #expect(!statuses.contains(.tooManyRequests) && !statuses.contains(.unauthorized), "\(statuses)")
                #expect(store.count("apiKey") - before.keys == 1)
                #expect(store.count("app") - before.apps == 1)
            }
        }
    }

    /// A token busy in its own account's cache and a token that does not exist are refused alike to another account's
    /// key: the same store lookup, and past the address's budget the same 429.
    @Test func aTokenInUseIsRefusedLikeAnUnknownOne() async throws {
        var configuration = ServerConfiguration.forTests()
        configuration.failedAuthenticationsPerSecond = 2
        configuration.authenticationCacheTTL = .seconds(600)
        try await withApplication(configuration) { app, store, tenant, other in
            try await app.test(.router) { client in
                // Both accounts use their apps: their keys and tokens are in the cache.
                for credentials in [
                    [("apikey", other.apiKey), ("token", other.token)],
                    [("apikey", tenant.apiKey), ("token", tenant.token)],
                ] {
                    let own = try await Self.post(client, credentials)
                    #expect(own.status != .unauthorized && own.status != .tooManyRequests)
                }
                // The budget is spent on made-up keys.
                for _ in 0..<10 {
                    _ = try await Self.post(client, [("apikey", Self.randomKey()), ("token", tenant.token)])
                }
                let appReads = store.count("app")
                let unknownToken = "app_" + String(repeating: "c", count: 32)
                let foreign = try await Self.post(client, [("apikey", tenant.apiKey), ("token", other.token)])
                let unknown = try await Self.post(client, [("apikey", tenant.apiKey), ("token", unknownToken)])
                #expect(foreign.status == .tooManyRequests)
                #expect(unknown.status == .tooManyRequests)
                #expect(store.count("app") == appReads)
            }
        }
    }

    @Test func repeatedUnknownCredentialsAreAnsweredFromTheCache() async throws {
        var configuration = ServerConfiguration.forTests()
        configuration.failedAuthenticationsPerSecond = nil
        configuration.authenticationCacheTTL = .seconds(600)  // longer than any run of the loop
        try await withApplication(configuration) { app, store, tenant, other in
            try await app.test(.router) { client in
                let lookupsBefore = (keys: store.count("apiKey"), apps: store.count("app"))
                let unknownKey = Self.randomKey()
                let unknownToken = "app_" + String(repeating: "e", count: 32)
                for _ in 0..<50 {
                    for credentials in [
                        [("apikey", unknownKey), ("token", tenant.token)],
                        [("apikey", tenant.apiKey), ("token", unknownToken)],
                        [("apikey", tenant.apiKey), ("token", other.token)],
                    ] {
                        let response = try await Self.post(client, credentials)
                        #expect(response.status == .unauthorized)
                    }
                }
                // The unknown key once, the real one once; the unknown token once, the other account's once.
                #expect(store.count("apiKey") - lookupsBefore.keys == 2)
                #expect(store.count("app") - lookupsBefore.apps == 2)
            }
        }
    }

    /// Holding a valid key, an unknown token and another account's token must not be told apart by the time of the
    /// 401: both take the cached path, and their latencies (interleaved, medians) agree.
    @Test func theTimeOfA401DoesNotTellWhetherATokenExists() async throws {
        var configuration = ServerConfiguration.forTests()
        configuration.failedAuthenticationsPerSecond = nil
        try await withApplication(configuration) { app, _, tenant, other in
            try await app.test(.router) { client in
                let unknownToken = "app_" + String(repeating: "d", count: 32)
                var unknown: [Duration] = []
                var foreign: [Duration] = []
                let clock = ContinuousClock()
                for round in 0..<400 {
                    for (token, isUnknown) in round % 2 == 0
                        ? [(unknownToken, true), (other.token, false)]
                        : [(other.token, false), (unknownToken, true)]
                    {
                        let started = clock.now
                        let response = try await Self.post(client, [("apikey", tenant.apiKey), ("token", token)])
                        let elapsed = started.duration(to: clock.now)
                        #expect(response.status == .unauthorized)
                        if round >= 20 {  // after the warm-up
                            if isUnknown { unknown.append(elapsed) } else { foreign.append(elapsed) }
                        }
                    }
                }
                let ratio = Self.median(unknown) / Self.median(foreign)
                #expect(ratio > 0.8 && ratio < 1.25, "median 401 time, unknown / another account's token: \(ratio)")
            }
        }
    }

    static func median(_ samples: [Duration]) -> Double {
        let sorted = samples.sorted()
        let middle = sorted[sorted.count / 2].components
        return Double(middle.seconds) + Double(middle.attoseconds) * 1e-18
    }

    @Test func readinessAsksTheDatabaseAtMostOncePerSecond() async throws {
        try await withApplication { app, store, _, _ in
            try await app.test(.router) { client in
                let clock = ContinuousClock()
                let started = clock.now
                for _ in 0..<500 {
                    try await client.execute(uri: "/readyz", method: .get) { #expect($0.status == .ok) }
                }
                // One read per second of the loop, however slowly this machine ran it.
                let seconds = Int(started.duration(to: clock.now).components.seconds) + 1
                #expect(store.count("plans") <= seconds + 1)
            }
        }
    }

    @Test func aDatabaseThatStopsAnsweringFailsFastAndRecovers() async throws {
        var configuration = ServerConfiguration.forTests()
        configuration.databaseTimeout = .milliseconds(300)
        configuration.authenticationCacheTTL = .zero  // every call reads the database
        try await withApplication(configuration) { app, store, tenant, _ in
            try await app.test(.router) { client in
                let credentials = [("apikey", tenant.apiKey), ("token", tenant.token)]
                // No verifier is configured: an authenticated call is a 500 of ours, not a database matter.
                #expect(try await Self.post(client, credentials).status == .internalServerError)

                store.stall()
                let clock = ContinuousClock()
                let started = clock.now
                let stalled = try await Self.post(client, credentials)
                #expect(stalled.status == .serviceUnavailable)
                #expect(stalled.headers[.retryAfter] == "1")
                #expect(String(buffer: stalled.body).contains(#""retryable":true"#))
                try await client.execute(uri: "/readyz", method: .get) { #expect($0.status == .serviceUnavailable) }
                // Two deadlines of 300 ms, and slack for a busy machine: not the minutes an outage lasts.
                #expect(started.duration(to: clock.now) < .seconds(5))

                store.resume()
                try await Task.sleep(for: .milliseconds(1_100))  // past the readiness answer's reuse
                #expect(try await Self.post(client, credentials).status == .internalServerError)
                try await client.execute(uri: "/readyz", method: .get) { #expect($0.status == .ok) }
            }
        }
    }

    /// A made-up token of the right shape (48 bytes, base64url), as a stranger would send for a session or a link.
    static func randomToken() -> String { Base64URL.encode((0..<48).map { _ in UInt8.random(in: 0...255) }) }

    @Test func theAccountScreenCostsAStrangerBoundedDatabaseReads() async throws {
        try await withApplication { app, store, _, _ in
            try await app.test(.router) { client in
                // Made-up session cookies: the token's HMAC refuses them without a database read.
                for _ in 0..<300 {
                    let answer = try await client.executeRequest(
                        uri: "/account", method: .get, headers: [.cookie: "rv_session=" + Self.randomToken()], body: nil
                    )
                    #expect(answer.status == .seeOther)
                }
                #expect(store.count("session") == 0)

                // The public plans page reads the plans at most every few seconds, however often it is asked.
                let clock = ContinuousClock()
                let started = clock.now
                for _ in 0..<300 {
                    #expect(
                        try await client.executeRequest(uri: "/plans", method: .get, headers: [:], body: nil).status
                            == .ok)
                }
                let seconds = Int(started.duration(to: clock.now).components.seconds)
                #expect(store.count("plans") <= 1 + seconds / 5)

                // A form body is read up to 64 KiB, no more.
                let large = try await client.executeRequest(
                    uri: "/auth/link", method: .post, headers: [.contentType: "application/x-www-form-urlencoded"],
                    body: ByteBuffer(repeating: UInt8(ascii: "a"), count: 100_000))
                #expect(large.status == .contentTooLarge)

                // Made-up sign-in links: the sign-in budget of one address, then 429 without a read.
                var statuses: [HTTPResponse.Status: Int] = [:]
                for _ in 0..<100 {
                    let token = Self.randomToken()
                    let answer = try await client.executeRequest(
                        uri: "/auth/link", method: .post, headers: [.contentType: "application/x-www-form-urlencoded"],
                        body: ByteBuffer(string: "token=\(token)"))
                    statuses[answer.status, default: 0] += 1
                }
                let budget = CustomerSettings().signInAttemptsPerMinute
                #expect(store.count("useSignInLink") == 0)
                #expect(statuses[.forbidden, default: 0] <= budget)
                #expect(statuses[.tooManyRequests, default: 0] >= 100 - budget)

            }
        }
    }

    @Test func anAccountPageFailsFastWhenTheDatabaseStopsAnswering() async throws {
        var configuration = ServerConfiguration.forTests()
        configuration.databaseTimeout = .milliseconds(300)
        try await withApplication(configuration) { app, store, _, _ in
            try await app.test(.router) { client in
                store.stall()
                let clock = ContinuousClock()
                let started = clock.now
                // The plans page's first request reads the plans (the session check needs no read for a stranger).
                let answer = try await client.executeRequest(uri: "/plans", method: .get, headers: [:], body: nil)
                #expect(answer.status == .serviceUnavailable)
                #expect(String(buffer: answer.body).contains("<html"))
                #expect(started.duration(to: clock.now) < .seconds(5))
                store.resume()
                let after = try await client.executeRequest(uri: "/plans", method: .get, headers: [:], body: nil)
                #expect(after.status == .ok)
            }
        }
    }
}
