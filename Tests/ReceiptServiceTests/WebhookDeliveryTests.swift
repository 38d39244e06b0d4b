import Foundation
import ReceiptCore
import Testing

@testable import ReceiptService

/// How a delivery attempt is judged: 2xx delivered, a redirect or any other answer retried, dead once the policy
/// gives up.
@Suite struct WebhookDeliveryTests {
    static let created = Date(timeIntervalSince1970: 1_790_000_000)

    static func task(attempts: Int) -> WebhookDeliveryTask {
        WebhookDeliveryTask(
            event: WebhookEvent(
                appID: UUID(), environment: .production, kind: .test, createdAt: created, data: JSONObject()),
            endpointID: UUID(), url: "https://hooks.example.com/", secret: SealedSecret(bytes: [1]),
            signedPayload: nil, attempts: attempts)
    }

    /// The retry's time and what it says, the time checked to lie within the jitter (80–120 % of the wait).
    static func expectRetry(
        _ outcome: WebhookDeliveryOutcome, after wait: TimeInterval, from now: Date, status: Int?, error: String,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        guard case .retry(let next, let gotStatus, let gotError) = outcome else {
            Issue.record("not a retry: \(outcome)", sourceLocation: sourceLocation)
            return
        }
        let waited = next.timeIntervalSince(now)
        #expect(waited >= wait * 0.8 && waited <= wait * 1.2, "waited \(waited)", sourceLocation: sourceLocation)
        #expect(gotStatus == status && gotError == error, sourceLocation: sourceLocation)
    }

    @Test func answersAreJudged() {
        let policy = RetryPolicy(first: .seconds(30))
        let now = Self.created.addingTimeInterval(1)
        #expect(
            Self.task(attempts: 0).outcome(status: 204, error: nil, policy: policy, now: now) == .delivered(status: 204)
        )
        Self.expectRetry(
            Self.task(attempts: 0).outcome(status: 302, error: nil, policy: policy, now: now), after: 30, from: now,
            status: 302, error: "redirects are not followed")
        Self.expectRetry(
            Self.task(attempts: 1).outcome(status: 500, error: nil, policy: policy, now: now), after: 60, from: now,
            status: 500, error: "HTTP 500")
        Self.expectRetry(
            Self.task(attempts: 0).outcome(status: nil, error: "connection refused", policy: policy, now: now),
            after: 30, from: now, status: nil, error: "connection refused")
        let late = Self.created.addingTimeInterval(72 * 3_600)
        #expect(
            Self.task(attempts: 20).outcome(status: 503, error: nil, policy: policy, now: late)
                == .dead(status: 503, error: "HTTP 503"))
        // A redelivered event's time counts from its redelivery: the same failure is retried.
        var redelivered = Self.task(attempts: 0)
        redelivered.startedAt = late.addingTimeInterval(-60)
        Self.expectRetry(
            redelivered.outcome(status: 503, error: nil, policy: policy, now: late), after: 30, from: late,
            status: 503, error: "HTTP 503")
    }

    @Test func retriesAreJitteredAcrossTheirRange() {
        let policy = RetryPolicy(first: .seconds(100))
        let now = Self.created
        let waits = Set(
            (0..<50).compactMap { _ in
                policy.nextAttempt(afterFailures: 1, since: now, now: now).map { Int($0.timeIntervalSince(now)) }
            })
        #expect(waits.allSatisfy { (80...120).contains($0) })
        #expect(waits.count > 10, "the waits are spread, not one wave: \(waits.sorted())")
        #expect(policy.nextAttempt(afterFailures: 1, since: now, now: now, jitter: 0) == now.addingTimeInterval(80))
        #expect(policy.nextAttempt(afterFailures: 2, since: now, now: now, jitter: 1) == now.addingTimeInterval(240))
    }

    /// Google's acknowledgements wait at most an hour between attempts, so that a purchase delivered late is not
    /// left six hours from Google's three days (money review M14).
    @Test func aPolicyKeepsItsLongestWait() {
        let now = Self.created
        let hourly = RetryPolicy(first: .seconds(60), longestWait: 3_600)
        #expect(
            hourly.nextAttempt(afterFailures: 20, since: now, now: now, jitter: 0.5) == now.addingTimeInterval(3_600))
        let plain = RetryPolicy(first: .seconds(60))
        #expect(
            plain.nextAttempt(afterFailures: 20, since: now, now: now, jitter: 0.5) == now.addingTimeInterval(21_600))
        // The work's start is what gives up: bought 71 hours ago, a retry an hour from now is past 72 hours.
        #expect(hourly.nextAttempt(afterFailures: 20, since: now - 71 * 3_600, now: now, jitter: 1) == nil)
    }

    @Test func anEndpointThatKeepsFailingIsPausedLongerEachRound() {
        let breaker = WebhookCircuitBreaker(threshold: 5, firstPause: .seconds(30), longestPause: .seconds(3_600))
        #expect(breaker.pause(afterFailures: 4, jitter: 0.5) == nil)
        #expect(breaker.pause(afterFailures: 5, jitter: 0.5) == .seconds(30))
        // Two may be in flight when the pause ends: the next round of two failures doubles it.
        #expect(breaker.pause(afterFailures: 7, jitter: 0.5) == .seconds(60))
        #expect(breaker.pause(afterFailures: 9, jitter: 0) == .seconds(96))
        #expect(breaker.pause(afterFailures: 200, jitter: 1) == .seconds(4_320))
    }
}
