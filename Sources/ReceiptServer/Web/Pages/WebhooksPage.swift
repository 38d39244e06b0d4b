import Foundation
import Hummingbird
import ReceiptCore
import ReceiptService

/// `/account/apps/{id}/webhooks`: an app's webhook endpoints, run by the customer: add one (its secret shown once),
/// pause, resume, send a test event, rotate the secret with a grace period, remove; the latest deliveries with their
/// status, latency and answer, the dead ones, and redelivery of one event or of every dead delivery. Each action goes
/// through the same ``TenancyService`` function as the CLI's and is audited.
enum WebhooksPage {
    struct View: PageView {
        struct Endpoint: Sendable {
            var id: String
            var url: String
            var events: String
            var state: String
            var paused: Bool
            var rotation: String?
        }

        struct Delivery: Sendable {
            var eventID: String
            var type: String
            var created: String
            var endpoint: String
            var state: String
            var attempts: Int
            var status: String
            var latency: String
            var error: String
            var dead: Bool
        }

        var layout: LayoutView
        var appID: String
        var appName: String
        var endpoints: [Endpoint]
        var deliveries: [Delivery]
        var deadOnly: Bool
        var secret: String?
        var message: String?
        var error: String?
    }

    /// The most events the page lists.
    static let listed = 50

    static func register(on router: Router<ServerContext>, site: WebSite) {
        router.get("/account/apps/:id/webhooks") { request, context in
            await site.signedInPage(request, context: context) { signedIn, scope in
                let deadOnly = request.uri.queryParameters["dead"] == "1"
                return site.page(
                    "webhooks",
                    try await view(
                        signedIn: signedIn, scope: scope, appID: try AppsPage.appID(context), deadOnly: deadOnly))
            }
        }

        router.post("/account/apps/:id/webhooks") { request, context in
            await site.signedInForm(request, context: context) { signedIn, scope, form in
                let appID = try AppsPage.appID(context)
                let types = (form["events"] ?? "*").split(whereSeparator: { $0 == "," || $0 == " " || $0 == "\n" })
                    .map(String.init)
                return try await acting(signedIn: signedIn, scope: scope, appID: appID, site: site) {
                    let added = try await scope.addWebhookEndpoint(
                        appID: appID, url: form.text("url") ?? "", eventTypes: types.isEmpty ? ["*"] : types)
                    return ("Endpoint added. Its signing secret is shown this once:", added.secret)
                }
            }
        }

        for action in ["pause", "resume", "test", "rotate", "remove"] {
            router.post("/account/apps/:id/webhooks/:endpoint/\(action)") { request, context in
                await site.signedInForm(request, context: context) { signedIn, scope, form in
                    let appID = try AppsPage.appID(context)
                    guard let id = context.parameters.get("endpoint").flatMap(UUID.init(uuidString:)) else {
                        throw ServiceError(.unknownApp)
                    }
                    return try await acting(signedIn: signedIn, scope: scope, appID: appID, site: site) {
                        switch action {
                        case "pause", "resume":
                            _ = try await scope.setWebhookEndpoint(appID: appID, id: id, enabled: action == "resume")
                            return (action == "pause" ? "Endpoint paused." : "Endpoint resumed.", nil)
                        case "test":
                            let event = try await scope.queueTestWebhookEvent(appID: appID, id: id)
                            return ("Test event \(event.idText) queued: its delivery shows below within seconds.", nil)
                        case "rotate":
                            let hours = Int(form.text("grace_hours") ?? "24") ?? -1
                            let rotated = try await scope.rotateWebhookSecret(appID: appID, id: id, graceHours: hours)
                            return (
                                "Secret rotated; deliveries are signed with the new and the previous secret for "
                                    + "\(hours) hours. The new secret is shown this once:", rotated.secret
                            )
                        default:
                            guard form.isChecked("confirm") else {
                                throw ServiceError(.invalidArgument, "Tick the box to confirm first.")
                            }
                            try await scope.removeWebhookEndpoint(appID: appID, id: id)
                            return ("Endpoint removed, with its pending deliveries.", nil)
                        }
                    }
                }
            }
        }

        router.post("/account/apps/:id/webhooks/redeliver") { request, context in
            await site.signedInForm(request, context: context) { signedIn, scope, form in
                let appID = try AppsPage.appID(context)
                return try await acting(signedIn: signedIn, scope: scope, appID: appID, site: site) {
                    let eventID = try form.text("event_id").map { text in
                        guard let id = UUID(uuidString: text) else {
                            throw ServiceError(.invalidArgument, "not an event id")
                        }
                        return id
                    }
                    let count = try await scope.redeliverWebhookEvents(appID: appID, eventID: eventID)
                    return ("\(count) deliver\(count == 1 ? "y" : "ies") queued again.", nil)
                }
            }
        }
    }

    /// Runs an action and shows the page with its message (and a secret to show once), or with its refusal.
    static func acting(
        signedIn: SignedIn, scope: CustomerScope, appID: UUID, site: WebSite,
        _ action: () async throws -> (message: String, secret: String?)
    ) async throws -> Response {
        do {
            let (message, secret) = try await action()
            var page = try await view(signedIn: signedIn, scope: scope, appID: appID, deadOnly: false)
            page.message = message
            page.secret = secret
            return site.page("webhooks", page)
        } catch let error as ServiceError where error.code == .invalidArgument {
            var page = try await view(signedIn: signedIn, scope: scope, appID: appID, deadOnly: false)
            page.error = error.reason
            return site.page("webhooks", page, status: .unprocessableContent)
        }
    }

    /// The page's values.
    static func view(signedIn: SignedIn, scope: CustomerScope, appID: UUID, deadOnly: Bool) async throws -> View {
        let app = try await scope.app(id: appID)
        let endpoints = try await scope.webhookEndpoints(appID: appID)
        let urls = Dictionary(uniqueKeysWithValues: endpoints.map { ($0.id, $0.url) })
        let records = try await scope.webhookEvents(appID: appID, deadOnly: deadOnly, limit: listed)
        return View(
            layout: LayoutView(title: "Webhooks of \(app.name)", signedIn: signedIn),
            appID: appID.uuidString.lowercased(), appName: app.name,
            endpoints: endpoints.map { endpoint in
                View.Endpoint(
                    id: endpoint.id.uuidString.lowercased(), url: endpoint.url,
                    events: endpoint.eventTypes.joined(separator: ", "),
                    state: endpoint.isEnabled ? "active" : "paused", paused: !endpoint.isEnabled,
                    rotation: endpoint.previousSecretUntil.flatMap { until in
                        until > Date() ? "the previous secret signs too until \(Format.time(until))" : nil
                    })
            },
            deliveries: records.flatMap { record in
                record.deliveries.filter { !deadOnly || $0.state == .dead }.map { delivery in
                    View.Delivery(
                        eventID: record.event.idText, type: record.event.type,
                        created: Format.time(record.event.createdAt),
                        endpoint: urls[delivery.endpointID] ?? "removed endpoint", state: delivery.state.rawValue,
                        attempts: delivery.attempts, status: delivery.lastStatus.map(String.init) ?? "—",
                        latency: delivery.latencyMilliseconds.map { "\($0) ms" } ?? "—",
                        error: delivery.lastError ?? "", dead: delivery.state == .dead)
                }
            }, deadOnly: deadOnly)
    }
}
