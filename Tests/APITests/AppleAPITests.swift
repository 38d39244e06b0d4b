import Foundation
import ReceiptCore
import ReceiptTestKit
import TestSupport
import Testing

/// Apps verified by Apple's `verifyReceipt` (a fake Apple on loopback replaying Apple's recorded answers and
/// scripted failures), and `local-then-apple` falling back to it.
@Suite(.serialized) struct AppleAPITests {
    static func recorded(_ name: String) throws -> String? {
        guard let fixtures = SharedFixtures.directory else {
            if SharedFixtures.isCI { Issue.record("fixtures missing under CI") }
            return nil
        }
        return try String(contentsOf: fixtures.appendingPathComponent(name), encoding: .utf8)
    }

    @Test(
        "apple mode: Apple's answer passes through; secrets, redirects, retries and failures",
        arguments: StoreKind.available)
    func appleMode(kind: StoreKind) async throws {
        guard let revenuecat = try Self.recorded("apple-responses/revenuecat_status0_unified_sandbox_2020.json"),
            let expired = try Self.recorded("apple-responses/mbaasy_status21006_ios6_expired_subscription_2015.json")
        else { return }
        try await withLiveService(kind) { service in
            let tenant = try service.tenant(appArguments: [
                "--bundle-id", "com.revenuecat.sampleapp", "--environment", "sandbox", "--environment", "production",
                "--mode", "apple", "--shared-secret", "0123456789abcdef0123456789abcdef",
            ])
            let receipt = try service.receipt(count: 2)
            let fields = [("apikey", tenant.apiKey), ("token", tenant.token), ("receipt", receipt)]
            func verify(_ extra: [(String, String)] = []) async throws -> (LiveService.Answer, JSONObject) {
                let answer = try await service.post(form: fields + extra)
                return (answer, try answer.json())
            }

            // Production answers 0: Apple's JSON unchanged, our fields after it.
            service.apple.reset()
            service.apple.script("production", .json(revenuecat))
            var answer = try await service.post(form: fields + [("exclude_old_transactions", "true")])
            var body = try answer.json()
            let apple = try #require(try JSONParser.parse(Array(revenuecat.utf8)).objectValue)
            #expect(answer.httpStatus == 200)
            #expect(Array(body.keys.prefix(apple.keys.count)) == apple.keys)
            for key in apple.keys { #expect(body[key] == apple[key], "\(key)") }
            #expect(
                Array(body.keys.dropFirst(apple.keys.count)) == [
                    "description", "assurance", "transactions", "request_id",
                ])
            let sent = try #require(service.apple.received.first)
            #expect(sent.environment == "production")
            #expect(sent.receiptData == receipt)
            #expect(sent.password == "0123456789abcdef0123456789abcdef")
            #expect(sent.excludeOldTransactions == true)

            // The request's password overrides the app's secret.
            service.apple.reset()
            service.apple.script("production", .json(revenuecat))
            _ = try await service.post(form: fields + [("password", "overridesecret1")])
            #expect(service.apple.received.first?.password == "overridesecret1")

            // 21007: the sandbox answers.
            service.apple.reset()
            service.apple.script("production", .status(21007))
            service.apple.script("sandbox", .json(revenuecat))
            answer = try await service.post(form: fields)
            #expect(try answer.json()["status"] == .integer(0))
            #expect(service.apple.received.map(\.environment) == ["production", "sandbox"])

            // 21005 twice, then 0: retried with backoff.
            service.apple.reset()
            service.apple.script("production", .status(21005), .status(21005), .json(revenuecat))
            answer = try await service.post(form: fields)
            #expect(try answer.json()["status"] == .integer(0))
            #expect(service.apple.received.count == 3)

            // 21100 that Apple says is not retryable: one request, Apple's status passed on.
            service.apple.reset()
            service.apple.script("production", .status(21100, isRetryable: false))
            answer = try await service.post(form: fields)
            body = try answer.json()
            #expect(answer.httpStatus == 200)
            #expect(body["status"] == .integer(21100))
            #expect(body["is-retryable"] == .bool(false))
            #expect(service.apple.received.count == 1)

            // 21006 (iOS 6 subscription expired): Apple's answer, receipt included, passes through.
            service.apple.reset()
            service.apple.script("production", .json(expired))
            (answer, body) = try await verify()
            #expect(body["status"] == .integer(21006))
            #expect(body["receipt"]?["product_id"] == .string("yearly"))

            // HTTP 503 on every attempt: 500, retryable, after the configured three attempts.
            service.apple.reset()
            service.apple.script("production", .http(503), .http(503), .http(503), .http(503))
            answer = try await service.post(form: fields)
            #expect(answer.httpStatus == 500)
            #expect(try answer.json()["retryable"] == .bool(true))
            #expect(try answer.json()["receipt"] == nil)
            #expect(service.apple.received.count == 3)

            // Not JSON: 500 at once.
            service.apple.reset()
            service.apple.script("production", .garbage)
            answer = try await service.post(form: fields)
            #expect(answer.httpStatus == 500)
            #expect(try answer.json()["retryable"] == .bool(true))
            #expect(service.apple.received.count == 1)

            // A hang past the total timeout (10 s here): 500, retryable, in about that time.
            service.apple.reset()
            service.apple.script("production", .delay(.seconds(60)))
            let started = ContinuousClock.now
            answer = try await service.post(form: fields)
            #expect(answer.httpStatus == 500)
            #expect(try answer.json()["retryable"] == .bool(true))
            #expect(started.duration(to: .now) < .seconds(30))

            // Apple says valid, but for another app: 403.
            let other = try service.tenant(appArguments: ["--bundle-id", "com.example.app", "--mode", "apple"])
            service.apple.reset()
            service.apple.script("production", .json(revenuecat))
            answer = try await service.post(form: [
                ("apikey", other.apiKey), ("token", other.token), ("receipt", receipt),
            ])
            #expect(answer.httpStatus == 403)

            // A StoreKit 2 JWS never goes to Apple.
            service.apple.reset()
            let jwsTenant = try service.tenant(appArguments: ["--mode", "apple", "--allow-test-data"])
            let jws = try JWSBuilder().build(signedBy: service.jwsPKI)
            answer = try await service.post(form: [
                ("apikey", jwsTenant.apiKey), ("token", jwsTenant.token), ("receipt", jws),
            ])
            #expect(try answer.json()["status"] == .integer(0))
            #expect(service.apple.received.isEmpty)

            // The shared secret never reaches the log.
            #expect(!service.logText.contains("0123456789abcdef0123456789abcdef"))
        }
    }

    @Test(
        "local-then-apple asks Apple when no local verdict can be reached (iOS 6, built-in roots replaced by test roots)",
        arguments: StoreKind.available)
    func fallback(kind: StoreKind) async throws {
        guard let receipt = try Self.recorded("receipts/ios6_sandbox_mindmob_2012.b64"),
            let recorded = try Self.recorded("apple-responses/itunesiap_vcr_status0_ios6_mindmob_sandbox_2015.json")
        else { return }
        try await withLiveService(kind, serveArguments: ["--replace-built-in-roots"]) { service in
            let arguments = ["--bundle-id", "com.mindmobapp.MindMob", "--environment", "sandbox"]
            let local = try service.tenant(appArguments: arguments)
            let fallback = try service.tenant(appArguments: arguments + ["--mode", "local-then-apple"])

            service.apple.script("production", .status(21007))
            service.apple.script("sandbox", .json(recorded))
            let answer = try await service.post(form: [
                ("apikey", fallback.apiKey), ("token", fallback.token), ("receipt", receipt),
            ])
            let body = try answer.json()
            #expect(body["status"] == .integer(0))
            #expect(body["receipt"]?["bid"] == .string("com.mindmobapp.MindMob"))
            #expect(service.apple.received.map(\.environment) == ["production", "sandbox"])

            // In local mode the same receipt cannot be authenticated here, and Apple is not asked.
            service.apple.reset()
            let refused = try await service.post(form: [
                ("apikey", local.apiKey), ("token", local.token), ("receipt", receipt),
            ])
            #expect(try refused.json()["status"] == .integer(21003))
            #expect(service.apple.received.isEmpty)
        }
    }

    @Test("SIGTERM lets an in-flight request finish", arguments: [StoreKind.sqlite])
    func gracefulShutdown(kind: StoreKind) async throws {
        guard let revenuecat = try Self.recorded("apple-responses/revenuecat_status0_unified_sandbox_2020.json") else {
            return
        }
        try await withLiveService(kind) { service in
            let tenant = try service.tenant(appArguments: [
                "--bundle-id", "com.revenuecat.sampleapp", "--environment", "sandbox", "--mode", "apple",
            ])
            service.apple.script("production", .delay(.milliseconds(1_500), then: revenuecat))
            let receipt = try service.receipt(count: 1)
            async let answer = service.post(form: [
                ("apikey", tenant.apiKey), ("token", tenant.token), ("receipt", receipt),
            ])
            try await Task.sleep(for: .milliseconds(500))
            kill(service.processID, SIGTERM)
            let finished = try await answer
            #expect(finished.httpStatus == 200)
            #expect(try finished.json()["status"] == .integer(0))
        }
    }
}
