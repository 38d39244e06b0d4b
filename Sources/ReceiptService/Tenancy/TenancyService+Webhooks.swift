import Foundation
import ReceiptCore

/// The operator's view of an app's webhook endpoints and events (`receiptverify webhooks …`, `events …`).
extension TenancyService {
    /// Adds an endpoint to the app; returns it with its signing secret, shown this once.
    ///
    /// - Parameters:
    ///   - environments: the environments whose events it takes; empty: every one.
    ///   - eventTypes: exact types, `prefix.*`, or `*`.
    public func addWebhookEndpoint(
        token: String, url: String, environments: Set<StoreEnvironment>, eventTypes: [String],
        forwardsSignedPayload: Bool
    ) async throws -> (endpoint: WebhookEndpoint, secret: String) {
        let app = try await app(token: token)
        try WebhookEndpoint.validate(url: url, allowsPrivate: allowsPrivateWebhookURLs)
        try WebhookEndpoint.validate(eventTypes: eventTypes)
        // Each event is written once per endpoint: the plan bounds how many an app has.
        let plan = try await plan(named: try await account(app.accountID.uuidString).planName)
        let id = UUID()
        let secret = WebhookSignature.newSecret()
        let endpoint = WebhookEndpoint(
            id: id, appID: app.id, url: url, environments: environments, eventTypes: eventTypes,
            forwardsSignedPayload: forwardsSignedPayload,
            secret: try SealedSecret.seal(
                Array(secret.utf8), context: WebhookEndpoint.secretContext(id), with: masterKey),
            createdAt: now())
        guard try await store.addWebhookEndpoint(endpoint, limit: plan.limits.webhookEndpoints) else {
            throw Self.limitReached(.webhookEndpoints, of: plan, per: "app", hint: "remove one")
        }
        try await audit(
            app.accountID, "webhook.create",
            "endpoint \(id.uuidString.lowercased()) of app \(app.id.uuidString.lowercased())")
        return (endpoint, secret)
    }

    /// The app's endpoints, oldest first.
    public func webhookEndpoints(token: String) async throws -> [WebhookEndpoint] {
        try await store.webhookEndpoints(appID: try await app(token: token).id)
    }

    /// Removes an endpoint of the app, with its pending deliveries.
    public func removeWebhookEndpoint(token: String, id: UUID) async throws {
        let app = try await app(token: token)
        guard try await store.removeWebhookEndpoint(id: id, appID: app.id) else {
            throw ServiceError(.invalidArgument, "the app has no webhook endpoint \(id.uuidString.lowercased())")
        }
        try await audit(app.accountID, "webhook.remove", "endpoint \(id.uuidString.lowercased())")
    }

    /// The app's endpoint `id`; ``ServiceError/Code/invalidArgument`` when it has none.
    public func webhookEndpoint(token: String, id: UUID) async throws -> (app: App, endpoint: WebhookEndpoint) {
        let app = try await app(token: token)
        guard let endpoint = try await store.webhookEndpoints(appID: app.id).first(where: { $0.id == id }) else {
            throw ServiceError(.invalidArgument, "the app has no webhook endpoint \(id.uuidString.lowercased())")
        }
        return (app, endpoint)
    }

    /// Pauses (`enabled` false) or resumes an endpoint: a paused endpoint's deliveries wait, unattempted, and go out
    /// once it is resumed (their budget of time keeps running: redeliver dead ones).
    public func setWebhookEndpoint(token: String, id: UUID, enabled: Bool) async throws -> WebhookEndpoint {
        var (app, endpoint) = try await webhookEndpoint(token: token, id: id)
        endpoint.isEnabled = enabled
        guard try await store.updateWebhookEndpoint(endpoint) else {
            throw ServiceError(.invalidArgument, "the app has no webhook endpoint \(id.uuidString.lowercased())")
        }
        try await audit(
            app.accountID, enabled ? "webhook.resume" : "webhook.pause", "endpoint \(id.uuidString.lowercased())")
        return endpoint
    }

    /// Queues a signed `webhook.test` event for endpoint `id` alone; the deliverer sends it like any other, so its
    /// delivery (status, latency, error) shows with the rest. Returns the event.
    public func queueTestWebhookEvent(token: String, id: UUID) async throws -> WebhookEvent {
        let (app, endpoint) = try await webhookEndpoint(token: token, id: id)
        var data = JSONObject(capacity: 3)
        data.append("message", .string("A test event for one endpoint"))
        data.append("app", .string(app.token))
        data.append("endpoint_id", .string(endpoint.id.uuidString.lowercased()))
        let event = WebhookEvent(
            appID: app.id,
            environment: app.allowedEnvironments.sorted { $0.rawValue < $1.rawValue }.first ?? .production,
            kind: .test, createdAt: now(), data: data)
        try await store.recordEvents([event])
        try await audit(app.accountID, "webhook.test", "endpoint \(id.uuidString.lowercased())")
        return event
    }

    /// The longest grace period of a rotated secret, in hours (7 days).
    public static let longestSecretGraceHours = 168

    /// Gives an endpoint a new secret, shown this once; deliveries are signed with the new and the previous secret
    /// for `graceHours` (0: at once the new one only), so the receiver can switch without losing one.
    public func rotateWebhookSecret(token: String, id: UUID, graceHours: Int) async throws -> (
        endpoint: WebhookEndpoint, secret: String
    ) {
        guard (0...Self.longestSecretGraceHours).contains(graceHours) else {
            throw ServiceError(
                .invalidArgument, "the grace period is from 0 to \(Self.longestSecretGraceHours) hours")
        }
        var (app, endpoint) = try await webhookEndpoint(token: token, id: id)
        let secret = WebhookSignature.newSecret()
        let graceSeconds = Double(graceHours * 3_600)
        endpoint.previousSecret = graceSeconds > 0 ? endpoint.secret : nil
        endpoint.previousSecretUntil = graceSeconds > 0 ? now().addingTimeInterval(graceSeconds) : nil
        endpoint.secret = try SealedSecret.seal(
            Array(secret.utf8), context: WebhookEndpoint.secretContext(id), with: masterKey)
        guard try await store.updateWebhookEndpoint(endpoint) else {
            throw ServiceError(.invalidArgument, "the app has no webhook endpoint \(id.uuidString.lowercased())")
        }
        try await audit(
            app.accountID, "webhook.rotate_secret",
            "endpoint \(id.uuidString.lowercased()), previous secret signs for \(Int(graceSeconds)) s")
        return (endpoint, secret)
    }

    /// The signing secret of an endpoint (sealed under its id).
    public func webhookSecret(_ sealed: SealedSecret, endpointID: UUID) throws -> [UInt8] {
        try sealed.open(context: WebhookEndpoint.secretContext(endpointID), with: masterKey)
    }

    /// The app's events with their deliveries, newest first.
    public func webhookEvents(
        token: String, state: WebhookDeliveryState?, since: Date?, eventIDs: [UUID]?, limit: Int
    ) async throws -> [WebhookEventRecord] {
        guard (1...10_000).contains(limit) else {
            throw ServiceError(.invalidArgument, "the limit must be from 1 to 10000")
        }
        return try await store.webhookEvents(
            WebhookEventQuery(
                appID: try await app(token: token).id, state: state, since: since, eventIDs: eventIDs, limit: limit))
    }

    /// Makes the deliveries of the app's chosen events due again now (those not delivered, or those in `state`);
    /// returns how many.
    public func redeliverWebhookEvents(
        token: String, state: WebhookDeliveryState?, since: Date?, eventIDs: [UUID]?, limit: Int
    ) async throws -> Int {
        guard (1...100_000).contains(limit) else {
            throw ServiceError(.invalidArgument, "the limit must be from 1 to 100000")
        }
        guard eventIDs != nil || state != nil || since != nil else {
            throw ServiceError(.invalidArgument, "name the events: ids, --state or --since")
        }
        let app = try await app(token: token)
        var count = try await store.redeliverWebhookEvents(
            WebhookEventQuery(appID: app.id, state: state, since: since, eventIDs: eventIDs, limit: limit), at: now())
        // Events named by id are sent again whatever their deliveries' state, delivered ones too (the store's default
        // is pending and dead).
        if eventIDs != nil, state == nil {
            count += try await store.redeliverWebhookEvents(
                WebhookEventQuery(appID: app.id, state: .delivered, since: since, eventIDs: eventIDs, limit: limit),
                at: now())
        }
        try await audit(
            app.accountID, "webhook.redeliver", "\(count) deliveries of app \(app.id.uuidString.lowercased())")
        return count
    }
}
