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
            if purchase?.revocationDate != nil {
                state = .revoked
            } else if let expires, expires > nowMilliseconds {
                state = .active
            } else if renewal?["isInBillingRetryPeriod"] == .bool(true) {
                state = (grace ?? 0) > nowMilliseconds ? .gracePeriod : .billingRetry
            } else if expires == nil {
                // Renewal info alone (a change of renewal preference): no expiry to judge by.
                return nil
            } else {
                state = .expired
            }
        }
        let autoRenews: Bool? =
            switch renewal?["autoRenewStatus"] {
            case .integer(let value)?: value == 1
            default: nil
            }
        self.init(
            appID: appID, environment: notification.environment, originalTransactionID: original,
            productID: purchase?.productID ?? renewal?["productId"]?.stringValue ?? "",
            state: state, expiresDate: expires, gracePeriodExpiresDate: grace, autoRenews: autoRenews,
            autoRenewProductID: renewal?["autoRenewProductId"]?.stringValue, asOf: notification.signedDate,
            updatedAt: now)
    }

    private static func milliseconds(_ value: JSONValue?) -> Int64? {
        switch value {
        case .integer(let number)?: number
        case .double(let number)? where number.isFinite && abs(number) < 1e17: Int64(number)
        default: nil
        }
    }
}
