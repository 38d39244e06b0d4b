import CoreMetrics
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import ReceiptCore
import ReceiptService

/// `POST /notifications/google/{app token}`: Google Play's Real-time Developer Notifications, pushed by the app's Cloud
/// Pub/Sub push subscription with authentication on (docs/google-play.md, "Real-time Developer Notifications").
///
/// Pub/Sub takes any 2xx as the message's acknowledgement and pushes any other answer again, with backoff, for as long
/// as the subscription keeps messages. 200 once the message is recorded (or was before); 401 for an unknown or disabled
/// token; 403 for an app without the Pub/Sub setting, a push whose OIDC token is not Google's for the app's audience
/// and service account, or a package that is not the app's; 400 for a body that is not a developer notification; 500
/// when the app's Google key is missing or refused (fixed by the customer, the retries then succeed); 503 when Google or
/// our database failed for the moment. Refusals are budgeted per address and per app as Apple's are
/// (``FailedNotifications``).
struct GoogleNotificationEndpoint: Sendable {
    let intake: GoogleNotificationIntake
    let googlePlay: any GooglePlayLooking
    let tenancy: TenancyService
    let authenticator: Authenticator
    let failedAuthentications: FailedAuthentications
    let failedNotifications: FailedNotifications
    let bodies: BodyBudget
    let metrics: any MetricsFactory
    let logger: Logger

    /// A push that is not taken (4xx, nothing recorded).
    struct Refused: Error {
        let status: Int
        let label: String
        let description: String
        let reason: String
    }

    func respond(to request: Request, context: ServerContext) async -> Response {
        var body = VerificationEndpoint.BodyReading()
        defer { bodies.release(body.reserved, for: body.address) }
        var type = "none"
        let outcomeLabel: String
        var response: Response
        do {
            let token = context.parameters.get("token")
            context.record.token = token
            let app = try await failedAuthentications.guarding(context.clientAddress) { mayQueryStore in
                try await authenticator.app(token: token, mayQueryStore: mayQueryStore)
            }
            let spent = try failedNotifications.spend(address: context.clientAddress, app: app.id)
            let received: GoogleNotificationIntake.Received
            let notification: GoogleDeveloperNotification
            do {
                notification = try await authentic(request, for: app, context: context, body: &body)
                type = notification.typeName
                received = try await intake.receive(
                    notification, app: app, account: try tenancy.googleCredentials(of: app), now: Date())
            } catch {
                // A refusal keeps what it spent; a failure of Google's or ours gives it back.
                if !(error is Refused) && !(error is GoogleNotificationIntake.Refusal) {
                    failedNotifications.giveBack(spent)
                }
                throw error
            }
            failedNotifications.giveBack(spent)
            var answer = JSONObject(capacity: 5)
            answer.append("status", .integer(0))
            answer.append("description", .string("Notification recorded"))
            answer.append("message_id", .string(notification.messageID))
            switch received {
            case .duplicate:
                answer.append("duplicate", .bool(true))
                outcomeLabel = "duplicate"
            case .recorded(let effect):
                answer.append("duplicate", .bool(false))
                answer.append("effect", .string(effect))
                outcomeLabel = "recorded"
            }
            response = VerificationEndpoint.response(answer, requestID: context.requestID)
            context.record.outcome = RequestRecord.Outcome(
                status: 0, source: .googlePlay, input: "google_notification", detail: notification.typeName)
        } catch let refused as Refused {
            outcomeLabel = refused.label
            var outcome = VerificationOutcome.failure(refused.status, detail: refused.reason)
            outcome.body["description"] = .string(refused.description)
            response = answer(outcome, context: context)
        } catch let refusal as GoogleNotificationIntake.Refusal {
            outcomeLabel = "not_the_apps"
            var outcome = VerificationOutcome.failure(ResponseStatus.rejected, detail: refusal.reason)
            outcome.body["description"] = .string("The notification is not for one of the app's Android packages")
            response = answer(outcome, context: context)
        } catch let error as GooglePlayError {
            outcomeLabel = "google_error"
            var outcome: VerificationOutcome
            switch error.code {
            case .credentials, .permission:
                outcome = .failure(ResponseStatus.internalError, source: .googlePlay, detail: error.reason)
                outcome.body["description"] = .string(
                    "The app's Google service account key is missing, refused or without access to the package; once it is fixed, Pub/Sub's next push is taken"
                )
            case .notFound, .rateLimited, .unavailable, .invalidResponse:
                outcome = .failure(
                    ResponseStatus.serviceUnavailable, source: .googlePlay, retryable: true, detail: error.reason)
                outcome.body["description"] = .string("Google Play could not be asked right now; push again later")
            }
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
            label: "receiptverify_google_notifications_total",
            dimensions: [("type", Self.metricType(type)), ("outcome", outcomeLabel)], factory: metrics
        ).increment()
        return response
    }

    /// The push's notification, once its OIDC token is checked against Google's keys and the app's setting.
    private func authentic(
        _ request: Request, for app: App, context: ServerContext, body: inout VerificationEndpoint.BodyReading
    ) async throws -> GoogleDeveloperNotification {
        guard let setting = app.googlePubSub else {
            throw Refused(
                status: ResponseStatus.rejected, label: "not_configured",
                description:
                    "The app takes no Real-time Developer Notifications: set its Pub/Sub audience and service account",
                reason: "the app has no Pub/Sub push setting")
        }
        let authorization = request.headers[.authorization]
        let token = authorization.map { String($0.dropFirst(7)) } ?? ""
        let keys = try await googlePlay.pushKeys(forKeyID: JSONWebKeySet.keyID(of: token))
        do {
            try PubSubPushToken.verify(authorization: authorization, keys: keys, expected: setting, now: Date())
        } catch let refusal as PubSubPushToken.Refusal {
            throw Refused(
                status: ResponseStatus.rejected, label: "inauthentic",
                description: "The push is not authenticated as the app's Pub/Sub subscription", reason: refusal.reason)
        }
        let bytes = try await VerificationEndpoint.collect(
            request, limit: GoogleDeveloperNotification.maximumBodySize, bodies: bodies,
            address: context.clientAddress, into: &body)
        do {
            return try GoogleDeveloperNotification.parse(pushBody: bytes.readableBytesView)
        } catch let malformed as GoogleDeveloperNotification.Malformed {
            throw Refused(
                status: ResponseStatus.badRequest, label: "malformed",
                description: "The body is not a Pub/Sub push of a Google Play developer notification",
                reason: malformed.reason)
        }
    }

    /// A type as a metric label: Google's documented names, anything else `other`.
    static func metricType(_ type: String) -> String { knownTypes.contains(type) ? type : "other" }

    /// The types Google documents, as metric labels.
    static let knownTypes =
        Set(GoogleDeveloperNotification.subscriptionTypes.values)
        .union(GoogleDeveloperNotification.oneTimeProductTypes.values)
        .union(["VOIDED_PURCHASE", "TEST", "none"])

    private func answer(_ outcome: VerificationOutcome, context: ServerContext) -> Response {
        NotificationEndpoint.answer(outcome, context: context, input: "google_notification")
    }
}
