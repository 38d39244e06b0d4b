import Foundation
import ReceiptCore

extension SubscriptionStatus {
    /// The status a notification states for its subscription, or nil when it is not about an auto-renewable
    /// subscription (a consumable's `ONE_TIME_CHARGE`, `TEST`, `RESCIND_CONSENT`, …).
    ///
    /// The state follows Apple's meaning of each type
    /// ([notificationType](https://developer.apple.com/documentation/appstoreservernotifications/notificationtype)):
    /// `EXPIRED` ends it, `DID_FAIL_TO_RENEW` puts it in the grace period (subtype `GRACE_PERIOD`) or billing retry,
    /// `GRACE_PERIOD_EXPIRED` in billing retry, `REFUND` and `REVOKE` revoke it; every other type (`SUBSCRIBED`,
    /// `DID_RENEW`, `OFFER_REDEEMED`, `REFUND_REVERSED`, `DID_CHANGE_RENEWAL_STATUS`, …) states it by the signed
    /// transaction's expiry against `now`, and by the renewal info's billing retry flag once that passed.
    public init?(notification: ServerNotification, appID: UUID, now: Date) {
        let transaction = notification.transaction
        let renewal = notification.renewalInfo
        let isSubscription =
            transaction?["type"]?.stringValue == "Auto-Renewable Subscription"
            || (transaction == nil && renewal != nil)
        guard isSubscription, let original = notification.originalTransactionID else { return nil }
        let purchase = notification.purchase
        let expires = purchase?.expiresDate
        let grace = Self.milliseconds(renewal?["gracePeriodExpiresDate"])
        let nowMilliseconds = now.millisecondsSince1970
        let state: State
        switch notification.type {
        case "EXPIRED":
            state = .expired
        case "GRACE_PERIOD_EXPIRED":
            state = .billingRetry
        case "DID_FAIL_TO_RENEW":
            state = notification.subtype == "GRACE_PERIOD" ? .gracePeriod : .billingRetry
        case "REFUND", "REVOKE":
            state = .revoked
        default:
            // Renewal info alone (a change of renewal preference) has no expiry to judge by.
            guard
                let stated = Self.state(
                    expires: expires, revoked: purchase?.revocationDate != nil, renewal: renewal, grace: grace,
                    now: nowMilliseconds)
            else { return nil }
            state = stated
        }
        self.init(
            appID: appID, environment: notification.environment, originalTransactionID: original,
            productID: purchase?.productID ?? renewal?["productId"]?.stringValue ?? "",
            state: state, expiresDate: expires, gracePeriodExpiresDate: grace,
            autoRenews: Self.autoRenews(renewal), autoRenewProductID: renewal?["autoRenewProductId"]?.stringValue,
            asOf: notification.signedDate, updatedAt: now)
    }

    /// The status a renewal info from the App Store Server API (Get All Subscription Statuses) states, with the
    /// subscription's latest period among `purchases` (Apple's history beside it): nil when the renewal info names no
    /// original transaction or signed date, or no expiry can be judged by. Dated by the renewal info's `signedDate`,
    /// so it replaces only a status signed no later, and the expiry is the later of the latest period's and the
    /// renewal info's `renewalDate`.
    public init?(
        renewal: JSONObject, purchases: [PurchaseTransaction], appID: UUID, environment: StoreEnvironment,
        now: Date
    ) {
        guard let original = renewal["originalTransactionId"]?.stringValue, !original.isEmpty,
            let signedDate = Self.milliseconds(renewal["signedDate"])
        else { return nil }
        let latest = purchases.filter { $0.originalTransactionID == original }.max { a, b in
            (a.expiresDate ?? 0, a.purchaseDate ?? 0) < (b.expiresDate ?? 0, b.purchaseDate ?? 0)
        }
        let renewalDate = Self.milliseconds(renewal["renewalDate"])
        let expires = [latest?.expiresDate, renewalDate].compactMap { $0 }.max()
        let grace = Self.milliseconds(renewal["gracePeriodExpiresDate"])
        guard
            let state = Self.state(
                expires: expires, revoked: latest?.revocationDate != nil, renewal: renewal, grace: grace,
                now: now.millisecondsSince1970)
        else { return nil }
        self.init(
            appID: appID, environment: environment, originalTransactionID: original,
            productID: latest?.productID ?? renewal["productId"]?.stringValue ?? "", state: state,
            expiresDate: expires, gracePeriodExpiresDate: grace, autoRenews: Self.autoRenews(renewal),
            autoRenewProductID: renewal["autoRenewProductId"]?.stringValue, asOf: signedDate, updatedAt: now)
    }

    /// The state a subscription's latest transaction and renewal info state at `now`: revoked, active until the
    /// expiry, then in the grace period or billing retry when the renewal info says Apple is retrying, else expired;
    /// nil when not revoked, not in billing retry and no expiry is known.
    static func state(expires: Int64?, revoked: Bool, renewal: JSONObject?, grace: Int64?, now: Int64) -> State? {
        if revoked { return .revoked }
        if let expires, expires > now { return .active }
        if renewal?["isInBillingRetryPeriod"] == .bool(true) {
            return (grace ?? 0) > now ? .gracePeriod : .billingRetry
        }
        return expires == nil ? nil : .expired
    }

    /// A renewal info's `autoRenewStatus` (1: on, 0: off); nil when it states none.
    static func autoRenews(_ renewal: JSONObject?) -> Bool? {
        switch renewal?["autoRenewStatus"] {
        case .integer(let value)?: value == 1
        default: nil
        }
    }

    private static func milliseconds(_ value: JSONValue?) -> Int64? {
        switch value {
        case .integer(let number)?: number
        case .double(let number)? where number.isFinite && abs(number) < 1e17: Int64(number)
        default: nil
        }
    }
}
