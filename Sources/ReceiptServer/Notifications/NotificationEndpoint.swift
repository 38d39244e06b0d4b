import CoreMetrics
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import ReceiptCore
import ReceiptService

/// `POST /notifications/{app token}`: App Store Server Notifications V2, the URL a developer pastes into App Store
/// Connect (docs/notifications.md).
///
/// The answer tells Apple what to do. 200 once the notification is recorded (or was before: Apple's retries are
/// idempotent by `notificationUUID`); 400 for a body that is not Apple's `{"signedPayload": …}`, 403 for one that
/// does not verify or is not this app's, 401 for an unknown or disabled token, 413 for a body over the limit: Apple's
/// retries of those cannot succeed, and nothing of them is stored. A database that does not answer in time is our
/// transient fault: 503, and Apple retries. An unknown token costs a stranger what it costs on `/api` (remembered,
/// and counted against the address), and a body is read only for a known token.
struct NotificationEndpoint: Sendable {
    let intake: NotificationIntake
    let authenticator: Authenticator
    let failedAuthentications: FailedAuthentications
    let bodies: BodyBudget
    let metrics: any MetricsFactory
    let logger: Logger

    /// The largest body taken: a signed payload at its limit in Apple's JSON.
    static let maximumBodySize = NotificationIntake.maximumPayloadLength + 1_024

    /// The notification types Apple documents, as metric labels; any other type is counted as `other`.
    static let knownTypes: Set<String> = [
        "CONSUMPTION_REQUEST", "DID_CHANGE_RENEWAL_PREF", "DID_CHANGE_RENEWAL_STATUS", "DID_FAIL_TO_RENEW",
        "DID_RENEW", "EXPIRED", "EXTERNAL_PURCHASE_TOKEN", "GRACE_PERIOD_EXPIRED", "METADATA_UPDATE", "MIGRATION",
        "OFFER_REDEEMED", "ONE_TIME_CHARGE", "PRICE_CHANGE", "PRICE_INCREASE", "REFUND", "REFUND_DECLINED",
        "REFUND_REVERSED", "RENEWAL_EXTENDED", "RENEWAL_EXTENSION", "RESCIND_CONSENT", "REVOKE", "SUBSCRIBED", "TEST",
    ]

    /// The fixed sentence of each refusal.
    static let descriptions: [NotificationIntake.Refusal.Kind: String] = [
        .malformed: "The body is not an App Store Server Notification",
        .inauthentic: "The notification is not authentic",
        .notTheApps: "The notification is not for this app or one of its environments",
    ]

    func respond(to request: Request, context: ServerContext) async -> Response {
        let requestID = context.requestID
        var body = VerificationEndpoint.BodyReading()
        defer { bodies.release(body.reserved) }
        var type = "none"
        let outcomeLabel: String
        var response: Response
        do {
            let token = context.parameters.get("token")
            context.record.token = token
            let app = try await appOf(token, from: context)
            let bytes = try await VerificationEndpoint.collect(
                request, limit: Self.maximumBodySize, bodies: bodies, into: &body)
            let received = try await intake.receive(
                body: bytes.readableBytesView, for: app, source: .apple, now: Date())
            type = Self.knownTypes.contains(received.notification.type) ? received.notification.type : "other"
            var answer = JSONObject(capacity: 5)
            answer.append("status", .integer(0))
            answer.append("description", .string("Notification recorded"))
            answer.append("notification_uuid", .string(received.notification.uuid))
            switch received.recorded {
            case .duplicate:
                answer.append("duplicate", .bool(true))
                outcomeLabel = "duplicate"
            case .recorded(let events):
                answer.append("duplicate", .bool(false))
                answer.append("events", .integer(Int64(events.count)))
                outcomeLabel = "recorded"
            }
            response = VerificationEndpoint.response(answer, requestID: requestID)
            context.record.outcome = RequestRecord.Outcome(
                status: 0, source: .local, input: "notification", detail: received.notification.type)
        } catch let refusal as NotificationIntake.Refusal {
            let status = refusal.kind == .malformed ? ResponseStatus.badRequest : ResponseStatus.rejected
            outcomeLabel = refusal.kind.rawValue
            var outcome = VerificationOutcome.failure(status, detail: refusal.reason)
            outcome.body["description"] = .string(Self.descriptions[refusal.kind] ?? "")
            response = answer(outcome, context: context)
        } catch {
            let outcome = VerificationEndpoint.outcome(for: error)
            outcomeLabel =
                outcome.status == ResponseStatus.unauthorized
                ? "unknown_token" : outcome.status >= 500 ? "error" : "refused"
            response = answer(outcome, context: context)
        }
        if !body.isComplete, VerificationEndpoint.hasBody(request) { response.headers[.connection] = "close" }
        Counter(
            label: "receiptverify_notifications_total", dimensions: [("type", type), ("outcome", outcomeLabel)],
            factory: metrics
        ).increment()
        return response
    }

    /// The enabled app of the path's token, under the address's budget of failed authentications.
    private func appOf(_ token: String?, from context: ServerContext) async throws -> App {
        try await failedAuthentications.guarding(context.clientAddress) { mayQueryStore in
            try await authenticator.app(token: token, mayQueryStore: mayQueryStore)
        }
    }

    private func answer(_ outcome: VerificationOutcome, context: ServerContext) -> Response {
        var outcome = outcome
        outcome.requestID = context.requestID
        context.record.outcome = RequestRecord.Outcome(
            status: outcome.status, source: outcome.source, input: "notification", detail: outcome.detail)
        return VerificationEndpoint.response(outcome, sealed: nil, requestID: context.requestID)
    }
}
