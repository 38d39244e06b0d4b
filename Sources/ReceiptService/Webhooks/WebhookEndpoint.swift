import Foundation
import ReceiptCore

/// A customer's receiver of events: one URL of an app, the environments and event types it takes, and the secret its
/// deliveries are signed with (sealed at rest) (docs/webhooks.md).
public struct WebhookEndpoint: Sendable, Equatable {
    /// The endpoint's id.
    public var id: UUID
    /// The app whose events it receives.
    public var appID: UUID
    /// Where deliveries are POSTed: `https://…` (or `http://…`).
    public var url: String
    /// The environments whose events it takes; empty takes every one.
    public var environments: Set<StoreEnvironment>
    /// The event types it takes: exact types, `prefix.*`, or `*` for every type.
    public var eventTypes: [String]
    /// Whether a `notification` event carries Apple's own `signedPayload` too, for receivers that verify it
    /// themselves.
    public var forwardsSignedPayload: Bool
    /// The signing secret, sealed with the master key under ``secretContext``.
    public var secret: SealedSecret
    /// When it was added.
    public var createdAt: Date
    /// Whether deliveries go out; a paused endpoint's wait (and are not counted as failures) until it is resumed.
    public var isEnabled: Bool
    /// The secret before the last rotation, sealed like ``secret``: deliveries are signed with both until
    /// ``previousSecretUntil``, so a receiver switches over without losing one.
    public var previousSecret: SealedSecret?
    /// When the previous secret stops signing.
    public var previousSecretUntil: Date?

    /// Creates an endpoint.
    public init(
        id: UUID, appID: UUID, url: String, environments: Set<StoreEnvironment>, eventTypes: [String],
        forwardsSignedPayload: Bool, secret: SealedSecret, createdAt: Date, isEnabled: Bool = true,
        previousSecret: SealedSecret? = nil, previousSecretUntil: Date? = nil
    ) {
        self.isEnabled = isEnabled
        self.previousSecret = previousSecret
        self.previousSecretUntil = previousSecretUntil?.roundedToMilliseconds
        self.id = id
        self.appID = appID
        self.url = url
        self.environments = environments
        self.eventTypes = eventTypes
        self.forwardsSignedPayload = forwardsSignedPayload
        self.secret = secret
        self.createdAt = createdAt.roundedToMilliseconds
    }

    /// The associated data the secret is sealed under: it opens for this endpoint only.
    public var secretContext: String { Self.secretContext(id) }

    /// The associated data of endpoint `id`'s secret.
    public static func secretContext(_ id: UUID) -> String { "webhook:\(id.uuidString.lowercased()):secret" }

    /// Whether the endpoint takes events of `type` in `environment`.
    public func accepts(type: String, environment: StoreEnvironment) -> Bool {
        guard environments.isEmpty || environments.contains(environment) else { return false }
        return eventTypes.contains { pattern in
            pattern == "*" || pattern == type
                || (pattern.hasSuffix(".*") && type.hasPrefix(pattern.dropLast(1)))
        }
    }

    /// Checks a URL a customer gives: http or https, a host, no credentials or fragment, at most 2,048 bytes.
    public static func validate(url text: String, allowsPrivate: Bool) throws {
        guard text.utf8.count <= 2_048, let url = URL(string: text), let scheme = url.scheme?.lowercased(),
            scheme == "https" || scheme == "http", let host = url.host, !host.isEmpty
        else {
            throw ServiceError(.invalidArgument, "a webhook URL is an http or https URL with a host")
        }
        guard url.user == nil, url.password == nil, url.fragment == nil else {
            throw ServiceError(.invalidArgument, "a webhook URL has no user, password or fragment")
        }
        if let refusal = WebhookAddress.refusal(ofURL: text, allowsPrivate: allowsPrivate) {
            throw ServiceError(.invalidArgument, refusal)
        }
    }

    /// Checks event type patterns: each a known type, a known prefix followed by `.*`, or `*`.
    public static func validate(eventTypes: [String]) throws {
        guard !eventTypes.isEmpty else { throw ServiceError(.invalidArgument, "name at least one event type, or *") }
        for pattern in eventTypes {
            let known = WebhookEvent.Kind.allCases.map(\.rawValue)
            let prefixes = Set(known.compactMap { $0.split(separator: ".").first.map { "\($0).*" } })
            guard pattern == "*" || known.contains(pattern) || prefixes.contains(pattern) else {
                throw ServiceError(
                    .invalidArgument,
                    "unknown event type \(pattern); known: \(known.joined(separator: ", ")), a prefix.*, or *")
            }
        }
    }
}

extension WebhookEndpoint {
    /// The endpoint as `webhooks list --json` shows it (never its secret).
    public var json: JSONObject {
        var object = JSONObject(capacity: 6)
        object.append("id", .string(id.uuidString.lowercased()))
        object.append("url", .string(url))
        object.append(
            "environments", .array(environments.map(\.configurationName).sorted().map { .string($0) }))
        object.append("event_types", .array(eventTypes.map { .string($0) }))
        object.append("forwards_signed_payload", .bool(forwardsSignedPayload))
        object.append("enabled", .bool(isEnabled))
        object.append(
            "previous_secret_until", previousSecretUntil.map { .string(LedgerEntry.rfc3339($0)) } ?? .null)
        object.append("created_at", .string(LedgerEntry.rfc3339(createdAt)))
        return object
    }
}
