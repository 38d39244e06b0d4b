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

    @Test func answersAreJudged() {
        let policy = RetryPolicy(first: .seconds(30))
        let now = Self.created.addingTimeInterval(1)
        #expect(
            Self.task(attempts: 0).outcome(status: 204, error: nil, policy: policy, now: now) == .delivered(status: 204)
        )
        #expect(
            Self.task(attempts: 0).outcome(status: 302, error: nil, policy: policy, now: now)
                == .retry(next: now.addingTimeInterval(30), status: 302, error: "redirects are not followed"))
        #expect(
            Self.task(attempts: 1).outcome(status: 500, error: nil, policy: policy, now: now)
                == .retry(next: now.addingTimeInterval(60), status: 500, error: "HTTP 500"))
        #expect(
            Self.task(attempts: 0).outcome(status: nil, error: "connection refused", policy: policy, now: now)
                == .retry(next: now.addingTimeInterval(30), status: nil, error: "connection refused"))
        let late = Self.created.addingTimeInterval(72 * 3_600)
        #expect(
            Self.task(attempts: 20).outcome(status: 503, error: nil, policy: policy, now: late)
                == .dead(status: 503, error: "HTTP 503"))
    }
}
