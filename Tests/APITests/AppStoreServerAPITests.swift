import Clients
import Crypto
import Foundation
import Logging
import ReceiptCore
import ReceiptService
import ReceiptTestKit
import TestSupport
import Testing

/// The App Store Server API client against a fake Apple on loopback that checks every JWT: signed answers verified,
/// 429 honoured with its Retry-After, 5xx retried, an unknown id asked of the sandbox and again later, 401 reported as
/// the app's credentials, paging by revision, and the request budget held under a burst.
@Suite struct AppStoreServerAPITests {
    static let appKey = P256.Signing.PrivateKey()
    static let issuerID = "5a6f1c3e-8d2b-4c7a-9e0f-1b2c3d4e5f60"
    static let credentials = AppStoreServerAPICredentials(
        issuerID: issuerID, keyID: "ABC123DEFG", privateKeyPEM: appKey.pemRepresentation, bundleID: "com.example.app")

    static func transaction(_ id: String) throws -> String {
        var builder = JWSBuilder()
        builder.transactionID = id
        builder.originalTransactionID = "1000"
        return try builder.build(signedBy: try sharedJWSPKI.get())
    }

    static func withClient(
        _ configuration: AppStoreServerAPIConfiguration = .init(),
        _ body: @Sendable (FakeAppStoreServer, AppStoreServerAPIClient) async throws -> Void
    ) async throws {
        try await FakeAppStoreServer.run(
            publicKey: appKey.publicKey, issuerID: issuerID, bundleID: "com.example.app"
        ) { fake, base in
            var configuration = configuration
            configuration.productionURL = base + "/production"
            configuration.sandboxURL = base + "/sandbox"
            configuration.acceptsTestSignatures = true
            let verifier = ReceiptVerifier(anchors: try TrustAnchors(encoded: [try sharedJWSPKI.get().rootDER]))
            let client = AppStoreServerAPIClient(
                configuration: configuration, verifier: verifier,
                logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
            do {
                try await body(fake, client)
            } catch {
                try? await client.shutdown()
                throw error
            }
            try await client.shutdown()
        }
    }

    @Test func aTransactionIsFetchedWithAValidJWTAndVerified() async throws {
        try await Self.withClient { fake, client in
            fake.script("production", .json(#"{"signedTransactionInfo":"\#(try Self.transaction("2001"))"}"#))
            fake.script("production", .json(#"{"signedTransactionInfo":"\#(try Self.transaction("2002"))"}"#))
            let first = try await client.transactionInfo("2001", credentials: Self.credentials)
            #expect(first.verified.receipt["transactionId"] == .string("2001"))
            _ = try await client.transactionInfo("2002", credentials: Self.credentials)
            #expect(fake.badTokens == 0)
            #expect(fake.received.map(\.path) == ["/inApps/v1/transactions/2001", "/inApps/v1/transactions/2002"])
            // The token is reused, not signed again per request.
            #expect(Set(fake.received.map(\.token)).count == 1)
        }
    }

    @Test func aSignedValueThatDoesNotVerifyIsRefused() async throws {
        try await Self.withClient { fake, client in
            var builder = JWSBuilder()
            builder.tampering = .signature
            let bad = try builder.build(signedBy: try sharedJWSPKI.get())
            fake.script("production", .json(#"{"signedTransactionInfo":"\#(bad)"}"#))
            await #expect(throws: AppStoreServerAPIError(.invalidResponse, "")) {
                try await client.transactionInfo("2001", credentials: Self.credentials)
            }
        }
    }

    @Test func a429IsHonouredUntilItsRetryAfter() async throws {
        try await Self.withClient { fake, client in
            let retryAt = Int64((Date().timeIntervalSince1970 + 1.2) * 1_000)
            fake.script(
                "production", .error(429, appleCode: 4_290_000, retryAfter: retryAt),
                .json(#"{"signedTransactionInfo":"\#(try Self.transaction("2001"))"}"#))
            _ = try await client.transactionInfo("2001", credentials: Self.credentials)
            let dates = fake.received.map(\.date)
            #expect(dates.count == 2)
            // The retry came no earlier than Apple said (to the millisecond Retry-After is written in).
            #expect(dates.count == 2 && dates[1].timeIntervalSince1970 * 1_000 >= Double(retryAt) - 1)
        }
        // A Retry-After past the call's time fails at once, as rate limited.
        try await Self.withClient(.init(totalTimeout: .seconds(2))) { fake, client in
            let retryAt = Int64((Date().timeIntervalSince1970 + 60) * 1_000)
            fake.script("production", .error(429, retryAfter: retryAt))
            await #expect(throws: AppStoreServerAPIError(.rateLimited, "")) {
                try await client.transactionInfo("2001", credentials: Self.credentials)
            }
            #expect(fake.received.count == 1)
        }
    }

    @Test func failuresAreRetriedAndUnknownIdsAskedOfTheSandbox() async throws {
        try await Self.withClient { fake, client in
            // A 500 and a 503, then an answer.
            fake.script(
                "production", .error(500), .error(503),
                .json(#"{"signedTransactionInfo":"\#(try Self.transaction("2001"))"}"#))
            _ = try await client.transactionInfo("2001", credentials: Self.credentials)
            #expect(fake.received.count == 3)
        }
        try await Self.withClient { fake, client in
            // Production does not know it; the sandbox does.
            fake.script("sandbox", .json(#"{"signedTransactionInfo":"\#(try Self.transaction("2001"))"}"#))
            _ = try await client.transactionInfo("2001", credentials: Self.credentials)
            #expect(fake.received.map(\.environment) == ["production", "sandbox"])
        }
        try await Self.withClient { fake, client in
            // Neither knows it yet (a fresh purchase); the next round after a backoff finds it.
            fake.script("production", .error(404, appleCode: 4_040_010))
            fake.script(
                "sandbox", .error(404, appleCode: 4_040_010),
                .json(#"{"signedTransactionInfo":"\#(try Self.transaction("2001"))"}"#))
            _ = try await client.transactionInfo("2001", credentials: Self.credentials)
            #expect(fake.received.map(\.environment) == ["production", "sandbox", "production", "sandbox"])
        }
        try await Self.withClient(.init(maximumAttempts: 2)) { fake, client in
            // Never found: not found, after the attempts.
            await #expect(throws: AppStoreServerAPIError(.notFound, "")) {
                try await client.transactionInfo("2001", credentials: Self.credentials)
            }
            #expect(fake.received.count == 4)
        }
    }

    @Test func a401IsTheAppsCredentialsAndIsNotRetried() async throws {
        try await Self.withClient { fake, client in
            var wrong = Self.credentials
            wrong.privateKeyPEM = P256.Signing.PrivateKey().pemRepresentation
            await #expect(throws: AppStoreServerAPIError(.credentials, "")) {
                try await client.transactionInfo("2001", credentials: wrong)
            }
            #expect(fake.badTokens == 1)
            wrong.privateKeyPEM = "not a key"
            await #expect(throws: AppStoreServerAPIError(.credentials, "")) {
                try await client.transactionInfo("2001", credentials: wrong)
            }
            await #expect(throws: AppStoreServerAPIError(.refused, "")) {
                try await client.transactionInfo("../admin", credentials: Self.credentials)
            }
            #expect(fake.badTokens == 1 && fake.received.isEmpty)
        }
    }

    @Test func historyIsPagedByRevision() async throws {
        try await Self.withClient { fake, client in
            let first = try Self.transaction("2001")
            let second = try Self.transaction("2002")
            fake.script(
                "production",
                .json(
                    #"{"revision":"r1","hasMore":true,"environment":"Production","signedTransactions":["\#(first)"]}"#),
                .json(#"{"revision":"r2","hasMore":false,"signedTransactions":["\#(second)"]}"#))
            let page = try await client.transactionHistory("2001", revision: nil, credentials: Self.credentials)
            #expect(page.hasMore && page.revision == "r1" && page.transactions.count == 1)
            let next = try await client.transactionHistory("2001", revision: "r1", credentials: Self.credentials)
            #expect(!next.hasMore && next.transactions.first?.verified.receipt["transactionId"] == .string("2002"))
            #expect(fake.received.map(\.query) == ["sort=ASCENDING", "sort=ASCENDING&revision=r1"])
        }
    }

    @Test func aBurstStaysWithinTheRequestBudget() async throws {
        try await Self.withClient(.init(productionRequestsPerSecond: 5)) { fake, client in
            for index in 0..<12 {
                let signed = try Self.transaction(String(3000 + index))
                fake.script("production", .json(#"{"signedTransactionInfo":"\#(signed)"}"#))
            }
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<12 {
                    group.addTask {
                        _ = try await client.transactionInfo("\(3000 + index)", credentials: Self.credentials)
                    }
                }
                try await group.waitForAll()
            }
            let times = fake.received.map(\.at).sorted()
            #expect(times.count == 12)
            // Five a second, evenly: no one-second window holds more than six requests.
            for (index, start) in times.enumerated() {
                let inWindow = times[index...].prefix { start.duration(to: $0) < .seconds(1) }.count
                #expect(inWindow <= 6, "\(inWindow) requests within a second")
            }
            // Eleven turns of 200 ms between the first and the last (less what the loopback's delivery may shift).
            #expect(times.first!.duration(to: times.last!) >= .milliseconds(1_800))
        }
    }

    /// D7: an app of another account that names this app's issuer and bundle ID with a key of its own spends its own
    /// turns, not this app's: Apple refuses its key once, and it is refused here from then on without asking Apple.
    @Test func anotherTenantsAppWithTheSameIssuerTakesNoTurnFromTheApp() async throws {
        try await Self.withClient(.init(productionRequestsPerSecond: 2)) { fake, client in
            for index in 0..<4 {
                let signed = try Self.transaction(String(4000 + index))
                fake.script("production", .json(#"{"signedTransactionInfo":"\#(signed)"}"#))
            }
            var named = Self.credentials
            named.privateKeyPEM = P256.Signing.PrivateKey().pemRepresentation
            let impostor = named
            let clock = ContinuousClock()
            let started = clock.now
            // Each of the app's look-ups reports when it was answered.
            let answered = try await withThrowingTaskGroup(of: Duration?.self) { group in
                for index in 0..<30 {
                    group.addTask {
                        // Refused by Apple, then here (or out of its own turns): never answered.
                        await #expect(throws: AppStoreServerAPIError.self) {
                            try await client.transactionInfo("\(9000 + index)", credentials: impostor)
                        }
                        return nil
                    }
                }
                for index in 0..<4 {
                    group.addTask {
                        _ = try await client.transactionInfo("\(4000 + index)", credentials: Self.credentials)
                        return started.duration(to: clock.now)
                    }
                }
                return try await group.reduce(into: [Duration]()) { if let at = $1 { $0.append(at) } }
            }
            // The app's four look-ups at its own two a second: about 1.5 s, not behind the impostor's 15 s of turns.
            #expect(answered.count == 4)
            #expect(answered.allSatisfy { $0 < .seconds(4) }, "\(answered)")
            #expect(fake.badTokens <= 2, "the impostor reached Apple \(fake.badTokens) times")
        }
    }

    /// A 401 for credentials Apple has accepted before is Apple's of the moment: the next call asks Apple again.
    @Test func acceptedCredentialsAreNotHeldToAPassing401() async throws {
        try await Self.withClient(.init(cacheLifetime: .zero)) { fake, client in
            fake.script(
                "production", .json(#"{"signedTransactionInfo":"\#(try Self.transaction("5001"))"}"#), .error(401),
                .json(#"{"signedTransactionInfo":"\#(try Self.transaction("5001"))"}"#))
            _ = try await client.transactionInfo("5001", credentials: Self.credentials)
            await #expect(throws: AppStoreServerAPIError(.credentials, "")) {
                try await client.transactionInfo("5001", credentials: Self.credentials)
            }
            _ = try await client.transactionInfo("5001", credentials: Self.credentials)
            #expect(fake.received.count == 3)
        }
    }

    @Test func aBurstAboutOneTransactionCostsAppleOneRequest() async throws {
        try await Self.withClient { fake, client in
            let signed = try Self.transaction("2001")
            fake.script("production", .json(#"{"revision":"r1","hasMore":false,"signedTransactions":["\#(signed)"]}"#))
            try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<10 {
                    group.addTask {
                        try await client.transactionHistory("2001", revision: nil, credentials: Self.credentials)
                            .transactions.count
                    }
                }
                for try await count in group { #expect(count == 1) }
            }
            _ = try await client.transactionHistory("2001", revision: nil, credentials: Self.credentials)
            #expect(fake.received.count == 1)
            // Other credentials for the same app do not read the cached answer: they ask Apple (and are refused).
            var other = Self.credentials
            other.privateKeyPEM = P256.Signing.PrivateKey().pemRepresentation
            await #expect(throws: AppStoreServerAPIError(.credentials, "")) {
                try await client.transactionHistory("2001", revision: nil, credentials: other)
            }
        }
        // With the cache off, every call asks.
        try await Self.withClient(.init(cacheLifetime: .zero)) { fake, client in
            let signed = try Self.transaction("2001")
            for _ in 0..<2 {
                fake.script("production", .json(#"{"signedTransactionInfo":"\#(signed)"}"#))
                _ = try await client.transactionInfo("2001", credentials: Self.credentials)
            }
            #expect(fake.received.count == 2)
        }
    }

    @Test func notificationHistoryIsAskedOfOneEnvironmentPageByPage() async throws {
        try await Self.withClient { fake, client in
            var notification = JWSBuilder()
            notification.payload = .notification
            notification.notificationType = "REFUND"
            let signed = try notification.build(signedBy: try sharedJWSPKI.get())
            let page =
                #"{"notificationHistory":[{"signedPayload":"\#(signed)","sendAttempts":[{"attemptDate":1683675000000,"sendAttemptResult":"TIMED_OUT"}]}],"hasMore":true,"paginationToken":"p2"}"#
            fake.script("sandbox", .json(page), .json(#"{"notificationHistory":[],"hasMore":false}"#))
            let start = Date(timeIntervalSince1970: 1_683_000_000)
            let end = Date(timeIntervalSince1970: 1_684_000_000)
            let first = try await client.notificationHistory(
                from: start, to: end, onlyFailures: true, paginationToken: nil, environment: .sandbox,
                credentials: Self.credentials)
            #expect(first.notifications.count == 1)
            #expect(first.notifications.first?.signed.verified.kind == .notification)
            #expect(first.notifications.first?.signed.verified.receipt["notificationType"] == .string("REFUND"))
            #expect(first.notifications.first?.attempts.first?["sendAttemptResult"] == .string("TIMED_OUT"))
            #expect(first.hasMore && first.paginationToken == "p2")
            let second = try await client.notificationHistory(
                from: start, to: end, onlyFailures: true, paginationToken: "p2", environment: .sandbox,
                credentials: Self.credentials)
            #expect(second.notifications.isEmpty && !second.hasMore)
            // One environment only (no production first), POST with Apple's body, the page token in the query.
            let asked = fake.received
            #expect(asked.map(\.environment) == ["sandbox", "sandbox"])
            #expect(asked.allSatisfy { $0.method == "POST" && $0.path == "/inApps/v1/notifications/history" })
            #expect(asked.map(\.query) == ["", "paginationToken=p2"])
            guard case .object(let body)? = try? JSONParser.parse(Array(asked[0].body.utf8)) else {
                Issue.record("the request body is not JSON: \(asked[0].body)")
                return
            }
            #expect(body["startDate"] == .integer(1_683_000_000_000) && body["endDate"] == .integer(1_684_000_000_000))
            #expect(body["onlyFailures"] == .bool(true))
        }
    }

    @Test func finishTransactionIsPostedToTheTransactionsEnvironment() async throws {
        try await Self.withClient { fake, client in
            fake.script("production", .json(""))
            fake.script("sandbox", .error(400, appleCode: 4_000_006))
            try await client.finish("2001", environment: .production, credentials: Self.credentials)
            await #expect(throws: AppStoreServerAPIError(.refused, "")) {
                try await client.finish("2002", environment: .sandbox, credentials: Self.credentials)
            }
            #expect(fake.received.map(\.method) == ["POST", "POST"])
            #expect(
                fake.received.map { "\($0.environment)\($0.path)" } == [
                    "production/inApps/v1/transactions/2001/finish", "sandbox/inApps/v1/transactions/2002/finish",
                ])
        }
    }

    @Test func anOperatorAsksAppleWithAnAppsStoredCredentials() async throws {
        try await withTemporaryDirectory { directory in
            let cli = CLI(directory: directory, database: directory.appendingPathComponent("rv.sqlite").path)
            let keyFile = directory.appendingPathComponent("AuthKey.p8")
            try Data(Self.appKey.pemRepresentation.utf8).write(to: keyFile)
            let roots = directory.appendingPathComponent("roots")
            try FileManager.default.createDirectory(at: roots, withIntermediateDirectories: true)
            try Data(try sharedJWSPKI.get().rootDER).write(to: roots.appendingPathComponent("test-root.cer"))
            #expect(try cli("account", "create", "--name", "Acme", "--email", "ops@acme.io").status == 0)
            let added = try cli(
                "app", "add", "--account", "ops@acme.io", "--bundle-id", "com.example.app", "--apple-issuer-id",
                Self.issuerID, "--apple-key-id", "ABC123DEFG", "--apple-private-key-file", keyFile.path, "--json")
            #expect(added.status == 0, "\(added.stderr)")
            let token = try #require(added.stdout.split(separator: "\"").drop { $0 != "token" }.dropFirst(2).first)
            try await FakeAppStoreServer.run(
                publicKey: Self.appKey.publicKey, issuerID: Self.issuerID, bundleID: "com.example.app"
            ) { fake, base in
                fake.script("sandbox", .json(#"{"signedTransactionInfo":"\#(try Self.transaction("2001"))"}"#))
                let asked = try cli.run([
                    "apple", "transaction", "--app", String(token), "2001", "--production-url", base + "/production",
                    "--sandbox-url", base + "/sandbox", "--trust-anchors", roots.path, "--allow-test-data",
                ])
                #expect(asked.status == 0, "\(asked.stderr)")
                #expect(asked.stdout.contains(#""transactionId":"2001""#))
                #expect(fake.received.map(\.environment) == ["production", "sandbox"])
                #expect(fake.badTokens == 0)

                // Another key: Apple refuses it, and the command says it is the app's credentials.
                let otherKey = directory.appendingPathComponent("Other.p8")
                try Data(P256.Signing.PrivateKey().pemRepresentation.utf8).write(to: otherKey)
                #expect(
                    try cli(
                        "app", "update", String(token), "--apple-issuer-id", Self.issuerID, "--apple-key-id",
                        "ABC123DEFG",
                        "--apple-private-key-file", otherKey.path
                    ).status == 0)
                let refused = try cli.run([
                    "apple", "transaction", "--app", String(token), "2001", "--production-url", base + "/production",
                    "--sandbox-url", base + "/sandbox", "--trust-anchors", roots.path, "--allow-test-data",
                ])
                #expect(refused.status != 0)
                #expect(refused.stderr.contains("credentials"))
            }
        }
    }
}
