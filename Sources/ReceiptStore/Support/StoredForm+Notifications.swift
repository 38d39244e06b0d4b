import Foundation
import ReceiptCore
import ReceiptService

extension StoredForm {
    /// A subscription status from `subscription_statuses`' columns.
    static func subscriptionStatus(_ row: some StoredRow) throws -> SubscriptionStatus {
        SubscriptionStatus(
            appID: try row.uuid("app_id"), store: try enumValue(try row.text("store")),
            environment: try enumValue(try row.text("environment")),
            originalTransactionID: try row.text("original_transaction_id"), productID: try row.text("product_id"),
            state: try enumValue(try row.text("status")),
            expiresDate: try row.optionalInt("expires_date").map(Int64.init),
            gracePeriodExpiresDate: try row.optionalInt("grace_period_expires_date").map(Int64.init),
            autoRenews: try row.optionalBool("auto_renews"),
            autoRenewProductID: try row.optionalText("auto_renew_product_id"),
            asOf: Int64(try row.int("as_of")), updatedAt: try row.date("updated_at"),
            billingIssueDetectedAt: try row.optionalInt("billing_issue_detected_at").map(Int64.init),
            unsubscribeDetectedAt: try row.optionalInt("unsubscribe_detected_at").map(Int64.init))
    }

    /// What an insert into `subscription_statuses` does to a stored status (both dialects): replaces it, unless it was
    /// signed later.
    static let statusUpsert = """
        ON CONFLICT (app_id, store, environment, original_transaction_id) DO UPDATE SET
            product_id = excluded.product_id, status = excluded.status, expires_date = excluded.expires_date,
            grace_period_expires_date = excluded.grace_period_expires_date, auto_renews = excluded.auto_renews,
            auto_renew_product_id = excluded.auto_renew_product_id, as_of = excluded.as_of,
            updated_at = excluded.updated_at, due_at = excluded.due_at,
            -- The first statement of a billing issue, or of the renewal turned off, keeps its date while later ones
            -- repeat it; a statement without it clears it.
            billing_issue_detected_at = CASE WHEN excluded.billing_issue_detected_at IS NOT NULL
                THEN COALESCE(subscription_statuses.billing_issue_detected_at, excluded.billing_issue_detected_at) END,
            unsubscribe_detected_at = CASE WHEN excluded.unsubscribe_detected_at IS NOT NULL
                THEN COALESCE(subscription_statuses.unsubscribe_detected_at, excluded.unsubscribe_detected_at) END
        WHERE subscription_statuses.as_of <= excluded.as_of
        """

    /// When the expiry scheduler should look at a status: the end of what entitles it (the grace period's end, else
    /// the expiry) while it is entitled; never otherwise.
    static func dueAt(_ status: SubscriptionStatus) -> Int64? {
        switch status.state {
        case .active: status.expiresDate
        case .gracePeriod: status.gracePeriodExpiresDate ?? status.expiresDate
        case .billingRetry, .expired, .revoked: nil
        }
    }

    /// A webhook endpoint from `webhook_endpoints`' columns.
    static func webhookEndpoint(_ row: some StoredRow) throws -> WebhookEndpoint {
        WebhookEndpoint(
            id: try row.uuid("id"), appID: try row.uuid("app_id"), url: try row.text("url"),
            environments: Set(try list(try row.text("environments")).map { try enumValue($0) }),
            eventTypes: list(try row.text("event_types")),
            forwardsSignedPayload: try row.bool("forwards_signed_payload"),
            secret: SealedSecret(bytes: try row.bytes("secret")), createdAt: try row.date("created_at"),
            isEnabled: try row.bool("enabled"),
            previousSecret: try row.optionalBytes("previous_secret").map(SealedSecret.init(bytes:)),
            previousSecretUntil: try row.optionalDate("previous_secret_until"))
    }

    /// A comma-separated list's items; none for an empty text.
    static func list(_ text: String) -> [String] {
        text.split(separator: ",").map(String.init)
    }

    /// An event from `webhook_events`' columns.
    static func webhookEvent(_ row: some StoredRow) throws -> WebhookEvent {
        let text = try row.text("data")
        let parsed: JSONValue
        do {
            parsed = try JSONParser.parse(Array(text.utf8))
        } catch {
            throw corrupt("webhook event data is not JSON")
        }
        guard case .object(let data) = parsed else { throw corrupt("webhook event data is not a JSON object") }
        return WebhookEvent(
            id: try row.uuid("id"), appID: try row.uuid("app_id"),
            environment: try enumValue(try row.text("environment")),
            type: try row.text("event_type"), createdAt: try row.date("created_at"), data: data,
            notificationUUID: try row.optionalText("notification_uuid"))
    }

    /// A claimed delivery from the claim's join of `webhook_deliveries`, `webhook_events`, `webhook_endpoints` and
    /// (for endpoints that forward it) the notification's `signed_payload`.
    static func webhookDeliveryTask(_ row: some StoredRow) throws -> WebhookDeliveryTask {
        WebhookDeliveryTask(
            event: try webhookEvent(row), endpointID: try row.uuid("endpoint_id"), url: try row.text("url"),
            secret: SealedSecret(bytes: try row.bytes("secret")), signedPayload: try row.optionalText("signed_payload"),
            attempts: try row.int("attempts"), startedAt: try row.optionalDate("started_at"),
            previousSecret: try row.optionalBytes("previous_secret").map(SealedSecret.init(bytes:)),
            previousSecretUntil: try row.optionalDate("previous_secret_until"))
    }

    /// One delivery of an event listing.
    static func webhookDelivery(_ row: some StoredRow) throws -> WebhookEventRecord.Delivery {
        WebhookEventRecord.Delivery(
            endpointID: try row.uuid("endpoint_id"), state: try enumValue(try row.text("state")),
            attempts: try row.int("attempts"), lastStatus: try row.optionalInt("last_status"),
            lastError: try row.optionalText("last_error"), nextAttemptAt: try row.optionalDate("next_attempt_at"),
            deliveredAt: try row.optionalDate("delivered_at"),
            latencyMilliseconds: try row.optionalInt("last_latency_ms"))
    }

    /// What an attempt's outcome writes: state, next attempt, status, error, delivery time.
    static func deliveryColumns(_ outcome: WebhookDeliveryOutcome, at date: Date)
        -> (state: String, next: Date?, status: Int?, error: String?, delivered: Date?)
    {
        switch outcome {
        case .delivered(let status): ("delivered", nil, status, nil, date)
        case .retry(let next, let status, let error): ("pending", next, status, String(error.prefix(500)), nil)
        case .dead(let status, let error): ("dead", nil, status, String(error.prefix(500)), nil)
        }
    }

    /// The claim's select list over `webhook_deliveries d`, `webhook_events e`, `webhook_endpoints w` and
    /// `notifications n` (left-joined on the event's notification, for endpoints that forward it; empty when it was
    /// not kept).
    static let deliverySelect = """
        SELECT e.id, e.app_id, e.environment, e.event_type, e.data, e.notification_uuid, e.created_at,
            d.endpoint_id, d.attempts, d.started_at, w.url, w.secret,
            w.previous_secret, w.previous_secret_until,
            CASE WHEN w.forwards_signed_payload THEN NULLIF(n.signed_payload, '') END AS signed_payload
        FROM webhook_deliveries d JOIN webhook_events e ON e.id = d.event_id
            JOIN webhook_endpoints w ON w.id = d.endpoint_id
            LEFT JOIN notifications n ON n.app_id = e.app_id AND n.notification_uuid = e.notification_uuid
                AND e.event_type = 'notification'
        """

    /// A recorded notification's summary.
    static func receivedNotification(_ row: some StoredRow) throws -> ReceivedNotification {
        ReceivedNotification(
            uuid: try row.text("notification_uuid"), type: try row.text("notification_type"),
            subtype: try row.optionalText("subtype"), environment: try enumValue(try row.text("environment")),
            signedDate: Date(timeIntervalSince1970: Double(try row.int("signed_date")) / 1_000),
            receivedAt: try row.date("received_at"), source: try row.text("source"))
    }
}
