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
/// and counted against the address), and a body is read only for a known token. Refused notifications are budgeted
/// per address and per app (``FailedNotifications``): past either budget the answer is 429 with `Retry-After`, and
/// nothing is verified.
struct NotificationEndpoint: Sendable {
    let intake: NotificationIntake
    let authenticator: Authenticator
    let failedAuthentications: FailedAuthentications
    let failedNotifications: FailedNotifications
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
        defer { bodies.release(body.reserved, for: body.address) }
        var type = "none"
        let outcomeLabel: String
        var response: Response
        do {
            let token = context.parameters.get("token")
            context.record.token = token
            let app = try await appOf(token, from: context)
            // A verification spends a unit of the address's and the app's budgets of refused notifications before
            // it runs, given back when the notification is taken.
            let spent = try failedNotifications.spend(address: context.clientAddress, app: app.id)
            let bytes = try await VerificationEndpoint.collect(
                request, limit: Self.maximumBodySize, bodies: bodies, address: context.clientAddress, into: &body)
            let received: NotificationIntake.Received
            do {
                received = try await intake.receive(
                    body: bytes.readableBytesView, for: app, source: .apple, now: Date())
            } catch {
                // A refusal keeps what it spent; our own failure (the database) gives it back.
                if !(error is NotificationIntake.Refusal) { failedNotifications.giveBack(spent) }
                throw error
            }
            failedNotifications.giveBack(spent)
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
        Self.answer(outcome, context: context, input: "notification")
    }

    /// A refusal or failure of a notification route, logged as `input` and answered with the request's id.
    static func answer(_ outcome: VerificationOutcome, context: ServerContext, input: String) -> Response {
        var outcome = outcome
        outcome.requestID = context.requestID
        context.record.outcome = RequestRecord.Outcome(
            status: outcome.status, source: outcome.source, input: input, detail: outcome.detail)
        return VerificationEndpoint.response(outcome, sealed: nil, requestID: context.requestID)
    }
}

/// Refused notifications (malformed, not authentic, not the app's) per client address and per app: each verification
/// spends a unit of both before it runs, a notification taken gives them back, and past either budget the route
/// answers 429 without verifying, so that a stranger who knows a token cannot make the server check signatures at
/// will. Apple's notifications are not refused and spend nothing; the app's budget is larger than an address's
/// (``appMultiple``), and what Apple is refused meanwhile it retries, or the reconciliation takes in.
struct FailedNotifications: Sendable {
    /// Refusals per second per address; nil for no limit. An app may take ``appMultiple`` times as many.
    let perSecond: Int?
    private let addresses = RateLimiter<String>(capacity: 10_000)
    private let apps = RateLimiter<UUID>(capacity: 10_000)

    /// How many times an address's budget an app's is.
    static let appMultiple = 10

    init(perSecond: Int?) {
        self.perSecond = perSecond
    }

    /// What ``spend(address:app:)`` took.
    struct Spent: Sendable {
        let address: String
        let app: UUID
    }

    /// Takes a unit of the address's and the app's budgets; throws ``Throttled`` when either has none.
    func spend(address: String, app: UUID) throws -> Spent? {
        guard let perSecond else { return nil }
        if let wait = addresses.acquire(address, rate: perSecond, now: .now) { throw Throttled(wait: wait) }
        if let wait = apps.acquire(app, rate: perSecond * Self.appMultiple, now: .now) {
            addresses.giveBack(address, rate: perSecond)
            throw Throttled(wait: wait)
        }
        return Spent(address: address, app: app)
    }

    /// Gives back what a notification that was not refused spent.
    func giveBack(_ spent: Spent?) {
        guard let perSecond, let spent else { return }
        addresses.giveBack(spent.address, rate: perSecond)
        apps.giveBack(spent.app, rate: perSecond * Self.appMultiple)
    }
}
