import Foundation
import ReceiptCore
import ReceiptService

/// `POST /api/webhooks` (docs/webhooks.md, "From your own scripts"): the app's webhook endpoints, run with the
/// account's API key and the app's token, for customers who script their set-up. One route, an `action` per call;
/// each goes through the same ``TenancyService`` function as the CLI's and the account screen's, and is audited
/// under the key that made it. Rate limited as a ledger look-up, never billed.
extension VerificationEndpoint {
    /// The actions `/api/webhooks` takes.
    static let webhookActions = [
        "list", "add", "pause", "resume", "remove", "test", "rotate_secret", "deliveries", "redeliver",
    ]

    func manageWebhooks(_ request: VerificationRequest, for caller: Caller, address: String) async throws
        -> VerificationOutcome
    {
        let tenancy = tenancy.acting(
            as: AuditActor(name: "API key \(caller.apiKeyID.uuidString.lowercased())", address: address))
        let token = caller.app.token
        var body = JSONObject(capacity: 4)
        body.append("status", .integer(0))
        do {
            switch request.action ?? "" {
            case "list":
                body.append("description", .string("The app's webhook endpoints"))
                body.append(
                    "endpoints", .array(try await tenancy.webhookEndpoints(token: token).map { .object($0.json) }))
            case "add":
                let added = try await tenancy.addWebhookEndpoint(
                    token: token, url: request.url ?? "", environments: [],
                    eventTypes: request.eventTypes.flatMap { $0.isEmpty ? nil : $0 } ?? ["*"],
                    forwardsSignedPayload: false)
                body.append("description", .string("Endpoint added; its secret is shown this once"))
                body.append("endpoint", .object(added.endpoint.json))
                body.append("secret", .string(added.secret))
            case "pause", "resume":
                let endpoint = try await tenancy.setWebhookEndpoint(
                    token: token, id: try endpointID(request), enabled: request.action == "resume")
                body.append("description", .string(request.action == "pause" ? "Endpoint paused" : "Endpoint resumed"))
                body.append("endpoint", .object(endpoint.json))
            case "remove":
                try await tenancy.removeWebhookEndpoint(token: token, id: try endpointID(request))
                body.append("description", .string("Endpoint removed"))
            case "test":
                let event = try await tenancy.queueTestWebhookEvent(token: token, id: try endpointID(request))
                body.append("description", .string("Test event queued"))
                body.append("event_id", .string(event.idText))
            case "rotate_secret":
                guard let hours = Int(request.graceHours ?? "24") else {
                    throw ServiceError(.invalidArgument, "grace_hours is a whole number of hours")
                }
                let rotated = try await tenancy.rotateWebhookSecret(
                    token: token, id: try endpointID(request), graceHours: hours)
                body.append("description", .string("Secret rotated; the new one is shown this once"))
                body.append("endpoint", .object(rotated.endpoint.json))
                body.append("secret", .string(rotated.secret))
            case "deliveries":
                let records = try await tenancy.webhookEvents(
                    token: token, state: try state(request), since: nil, eventIDs: nil,
                    limit: request.limit ?? Self.defaultPageSize)
                body.append("description", .string("The app's latest events and their deliveries"))
                body.append("events", .array(records.map { .object($0.json) }))
            case "redeliver":
                let eventIDs = try request.eventID.map { text in
                    guard let id = UUID(uuidString: text) else {
                        throw ServiceError(.invalidArgument, "event_id is not an event id")
                    }
                    return [id]
                }
                guard eventIDs != nil || request.state != nil else {
                    throw ServiceError(.invalidArgument, "redeliver needs event_id or state (dead, delivered, pending)")
                }
                let count = try await tenancy.redeliverWebhookEvents(
                    token: token, state: try state(request), since: nil, eventIDs: eventIDs, limit: 10_000)
                body.append("description", .string("Deliveries queued again"))
                body.append("queued", .integer(Int64(count)))
            default:
                throw ServiceError(
                    .invalidArgument, "action must be one of \(Self.webhookActions.joined(separator: ", "))")
            }
        } catch let error as ServiceError where error.code == .invalidArgument {
            var refused = JSONObject(capacity: 2)
            refused.append("status", .integer(Int64(ResponseStatus.badRequest)))
            refused.append("description", .string(error.reason))
            return VerificationOutcome(
                status: ResponseStatus.badRequest, body: refused, source: .none, detail: error.reason)
        }
        return VerificationOutcome(status: 0, body: body, source: .none)
    }

    private func endpointID(_ request: VerificationRequest) throws -> UUID {
        guard let id = request.endpointID.flatMap(UUID.init(uuidString:)) else {
            throw ServiceError(.invalidArgument, "endpoint_id is required: an endpoint's id from action=list")
        }
        return id
    }

    private func state(_ request: VerificationRequest) throws -> WebhookDeliveryState? {
        guard let text = request.state, !text.isEmpty else { return nil }
        guard let state = WebhookDeliveryState(rawValue: text) else {
            throw ServiceError(.invalidArgument, "state must be pending, delivered or dead")
        }
        return state
    }
}
