import Foundation
import ReceiptCore

/// Which events are kept and which deliveries they get: one pending delivery per endpoint of the event's app that
/// takes its type and environment (docs/webhooks.md). The stores write the result with one statement for the events
/// and one for the deliveries.
public struct WebhookFanOut: Sendable {
    /// One delivery to make: the event, and the endpoint it goes to (due at the event's creation).
    public struct Delivery: Sendable {
        /// The event.
        public let event: WebhookEvent
        /// The endpoint's id.
        public let endpointID: UUID
    }

    /// The events to insert.
    public private(set) var events: [WebhookEvent] = []
    /// Their deliveries.
    public private(set) var deliveries: [Delivery] = []

    /// The fan-out of `events` over their apps' endpoints, which `endpoints` reads once per app. With `onlyTaken`,
    /// an event no endpoint takes is dropped (a ledger change without a receiver: the ledger itself is the record);
    /// otherwise it is kept for `events list` and later redelivery.
    public init(
        _ events: [WebhookEvent], onlyTaken: Bool, endpoints: (UUID) async throws -> [WebhookEndpoint]
    ) async throws {
        var byApp: [UUID: [WebhookEndpoint]] = [:]
        for event in events {
            let appEndpoints: [WebhookEndpoint]
            if let known = byApp[event.appID] {
                appEndpoints = known
            } else {
                appEndpoints = try await endpoints(event.appID)
                byApp[event.appID] = appEndpoints
            }
            // A test event sent to one endpoint (its `data.endpoint_id`) goes to that endpoint alone, whatever it takes.
            let target = event.type == WebhookEvent.Kind.test.rawValue ? event.data["endpoint_id"]?.stringValue : nil
            let takers = appEndpoints.filter { endpoint in
                if let target { return endpoint.id.uuidString.lowercased() == target }
                return endpoint.accepts(type: event.type, environment: event.environment)
            }
            if onlyTaken && takers.isEmpty { continue }
            self.events.append(event)
            deliveries += takers.map { Delivery(event: event, endpointID: $0.id) }
        }
    }
}
