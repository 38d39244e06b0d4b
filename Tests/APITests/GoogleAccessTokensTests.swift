import AsyncHTTPClient
import Clients
import Fakes
import Foundation
import Logging
import ReceiptService
import Testing

/// The Google service account grant against a fake token endpoint that checks the assertion as Google does: a token
/// is granted once and reused, one grant serves concurrent callers, a refused key is not asked again in a loop, and
/// Google's failures are told apart from a refused key.
@Suite struct GoogleAccessTokensTests {
    static func withTokens(
        _ fake: FakeGoogle, pause: Duration = .seconds(300),
        _ body: @Sendable (GoogleAccessTokens) async throws -> Void
    ) async throws {
        try await withLoopbackServer(fake.router(), label: "fake-google") { base in
            let http = HTTPClient(eventLoopGroupProvider: .singleton)
            let tokens = GoogleAccessTokens(
                configuration: GooglePlayConfiguration(tokenURL: base + "/token", refusedCredentialsPause: pause),
                http: http, logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
            do {
                try await body(tokens)
                try await http.shutdown()
            } catch {
                try? await http.shutdown()
                throw error
            }
        }
    }

    static var deadline: ContinuousClock.Instant { .now + .seconds(10) }

    @Test func aTokenIsGrantedOnceAndReusedByConcurrentCallers() async throws {
        let fake = FakeGoogle()
        let account = try FakeGoogle.Account.make()
        fake.add(account)
        try await Self.withTokens(fake) { tokens in
            let concurrent = try await withThrowingTaskGroup(of: String.self) { group in
                for _ in 0..<8 {
                    group.addTask { try await tokens.token(for: account.credentials, deadline: Self.deadline) }
                }
                return try await group.reduce(into: Set<String>()) { $0.insert($1) }
            }
            #expect(concurrent.count == 1)
            let token = try #require(concurrent.first)
            #expect(fake.issued(token))
            #expect(try await tokens.token(for: account.credentials, deadline: Self.deadline) == token)
            #expect(fake.grants == 1 && fake.refusedAssertions.isEmpty)
            // Forgotten (Google refused it on a resource): the next call is a new grant.
            tokens.forget(account.credentials)
            let next = try await tokens.token(for: account.credentials, deadline: Self.deadline)
            #expect(next != token && fake.grants == 2)
        }
    }

    /// A short-lived token is used for half its life at most: one of a second is granted anew on the next call.
    @Test func aTokenCloseToItsEndIsGrantedAnew() async throws {
        let fake = FakeGoogle()
        let account = try FakeGoogle.Account.make()
        fake.add(account)
        fake.script(.token(expiresIn: 1))
        try await Self.withTokens(fake) { tokens in
            let short = try await tokens.token(for: account.credentials, deadline: Self.deadline)
            let fresh = try await tokens.token(for: account.credentials, deadline: Self.deadline)
            #expect(short != fresh && fake.grants == 2)
        }
    }

    @Test func aRefusedKeyIsReportedAndNotAskedAgainInALoop() async throws {
        let fake = FakeGoogle()
        let known = try FakeGoogle.Account.make("known")
        fake.add(known)
        // A key Google does not know (deleted in the Cloud console): Google checks the signature and refuses it.
        let stranger = try FakeGoogle.Account.make("stranger")
        try await Self.withTokens(fake) { tokens in
            for _ in 0..<5 {
                await #expect {
                    try await tokens.token(for: stranger.credentials, deadline: Self.deadline)
                } throws: { error in
                    (error as? GooglePlayError)?.code == .credentials
                }
            }
            #expect(fake.grants == 1 && fake.refusedAssertions == ["unknown service account"])
            // Another app's account is not held against it.
            _ = try await tokens.token(for: known.credentials, deadline: Self.deadline)
            #expect(fake.grants == 2)
        }
        // After the pause, it is asked again (the operator may have fixed the key in Play Console).
        let paused = FakeGoogle()
        paused.add(known)
        paused.script(.error(400, "invalid_grant"))
        try await Self.withTokens(paused, pause: .milliseconds(300)) { tokens in
            await #expect(throws: GooglePlayError.self) {
                try await tokens.token(for: known.credentials, deadline: Self.deadline)
            }
            await #expect(throws: GooglePlayError.self) {
                try await tokens.token(for: known.credentials, deadline: Self.deadline)
            }
            #expect(paused.grants == 1)
            try await Task.sleep(for: .milliseconds(400))
            _ = try await tokens.token(for: known.credentials, deadline: Self.deadline)
            #expect(paused.grants == 2)
        }
    }

    /// Google's 5xx and 429 say nothing of the key: the next call asks again.
    @Test func googlesFailuresAreNotARefusedKey() async throws {
        let fake = FakeGoogle()
        let account = try FakeGoogle.Account.make()
        fake.add(account)
        fake.script(.error(503, "backend_error"), .error(429, "rate_limit_exceeded"))
        try await Self.withTokens(fake) { tokens in
            await #expect {
                try await tokens.token(for: account.credentials, deadline: Self.deadline)
            } throws: { ($0 as? GooglePlayError)?.code == .unavailable }
            await #expect {
                try await tokens.token(for: account.credentials, deadline: Self.deadline)
            } throws: { ($0 as? GooglePlayError)?.code == .rateLimited }
            _ = try await tokens.token(for: account.credentials, deadline: Self.deadline)
            #expect(fake.grants == 3)
        }
    }
}
