import Foundation
import ReceiptCore

/// A Cloud Pub/Sub push request carrying a Google Play Real-time Developer Notification: the push's `message`
/// (`messageId`, base64 `data`) and, decoded from its data, the `DeveloperNotification`. Notifications carry no state:
/// each names a purchase whose state is read from the Google Play Developer API before anything is done with it.
/// [Pub/Sub push](https://cloud.google.com/pubsub/docs/push),
/// [RTDN reference](https://developer.android.com/google/play/billing/rtdn-reference)
public struct GoogleDeveloperNotification: Sendable, Equatable {
    /// What the notification is about.
    public enum Content: Sendable, Equatable {
        /// `subscriptionNotification`: a subscription's `notificationType` (1 RECOVERED … 22) and purchase token.
        case subscription(type: Int, purchaseToken: String, subscriptionID: String?)
        /// `oneTimeProductNotification`: 1 purchased, 2 cancelled (a pending purchase), with the product (`sku`).
        case oneTimeProduct(type: Int, purchaseToken: String, productID: String)
        /// `voidedPurchaseNotification`: a refund, chargeback or revocation of an order; `productType` 1 is a
        /// subscription, 2 a one-time product; `refundType` 1 a full refund, 2 a partial one (some of a quantity).
        case voidedPurchase(purchaseToken: String, orderID: String, productType: Int, refundType: Int?)
        /// `testNotification`: sent from Play Console to check the set-up.
        case test
        /// A kind this server does not know (recorded and announced, with no effect).
        case other
    }

    /// Pub/Sub's `messageId`: the notification is recorded once by it.
    public var messageID: String
    /// The package the notification is about.
    public var packageName: String
    /// When it happened (`eventTimeMillis`).
    public var eventTime: Int64
    /// What it is about.
    public var content: Content

    /// The largest push body taken: Google's notifications are a few hundred bytes.
    public static let maximumBodySize = 64 * 1_024

    /// Why a body is refused.
    public struct Malformed: Error, Sendable, Equatable {
        public let reason: String
        init(_ reason: String) { self.reason = reason }
    }

    /// Reads a push request's body.
    public static func parse(pushBody body: some Collection<UInt8>) throws -> GoogleDeveloperNotification {
        guard body.count <= maximumBodySize else { throw Malformed("the body is over \(maximumBodySize) bytes") }
        guard case .object(let push)? = try? JSONParser.parse(body, maximumDepth: 6, maximumMembers: 64) else {
            throw Malformed("the body is not JSON")
        }
        guard case .object(let message)? = push["message"] else {
            throw Malformed("the body is not a Pub/Sub push: no message")
        }
        guard let messageID = message["messageId"]?.stringValue ?? message["message_id"]?.stringValue,
            (1...128).contains(messageID.utf8.count), messageID.utf8.allSatisfy({ (0x21...0x7E).contains($0) })
        else { throw Malformed("the Pub/Sub message has no messageId") }
        guard let data = message["data"]?.stringValue, let decoded = Data(base64Encoded: data).map(Array.init) else {
            throw Malformed("the Pub/Sub message's data is not base64")
        }
        guard case .object(let notification)? = try? JSONParser.parse(decoded, maximumDepth: 4, maximumMembers: 32)
        else { throw Malformed("the message's data is not a developer notification") }
        guard let packageName = notification["packageName"]?.stringValue,
            GoogleServiceAccountKey.isPackageName(packageName)
        else { throw Malformed("the developer notification has no packageName") }
        let eventTime: Int64
        do {
            guard let time = try GooglePlayPurchase.millis(notification["eventTimeMillis"], "eventTimeMillis") else {
                throw Malformed("the developer notification has no eventTimeMillis")
            }
            eventTime = time
        } catch {
            throw Malformed("the developer notification's eventTimeMillis is not a time")
        }
        return GoogleDeveloperNotification(
            messageID: messageID, packageName: packageName, eventTime: eventTime,
            content: try content(of: notification))
    }

    private static func content(of notification: JSONObject) throws -> Content {
        func token(_ object: JSONObject) throws -> String {
            guard let token = object["purchaseToken"]?.stringValue, GooglePlayPurchase.isPurchaseToken(token) else {
                throw Malformed("the notification's purchaseToken is not a purchase token")
            }
            return token
        }
        func integer(_ value: JSONValue?, _ field: String) throws -> Int {
            switch value {
            case .integer(let number)? where (0...1_000).contains(number): return Int(number)
            case .string(let text)?: if let number = Int(text), (0...1_000).contains(number) { return number }
            default: break
            }
            throw Malformed("the notification's \(field) is not a number")
        }
        func product(_ value: JSONValue?) -> String? {
            guard let id = value?.stringValue, GooglePlayPurchase.isProductID(id) else { return nil }
            return id
        }
        if case .object(let subscription)? = notification["subscriptionNotification"] {
            return .subscription(
                type: try integer(subscription["notificationType"], "notificationType"),
                purchaseToken: try token(subscription), subscriptionID: product(subscription["subscriptionId"]))
        }
        if case .object(let oneTime)? = notification["oneTimeProductNotification"] {
            guard let sku = product(oneTime["sku"]) else { throw Malformed("the notification's sku is not a product") }
            return .oneTimeProduct(
                type: try integer(oneTime["notificationType"], "notificationType"), purchaseToken: try token(oneTime),
                productID: sku)
        }
        if case .object(let voided)? = notification["voidedPurchaseNotification"] {
            guard let orderID = voided["orderId"]?.stringValue, (1...128).contains(orderID.utf8.count),
                orderID.utf8.allSatisfy({ (0x21...0x7E).contains($0) })
            else { throw Malformed("the voided purchase notification has no orderId") }
            return .voidedPurchase(
                purchaseToken: try token(voided), orderID: orderID,
                productType: try integer(voided["productType"], "productType"),
                refundType: voided["refundType"] == nil ? nil : try integer(voided["refundType"], "refundType"))
        }
        if notification["testNotification"] != nil { return .test }
        return .other
    }

    /// The purchase token it names (none for a test).
    public var purchaseToken: String? {
        switch content {
        case .subscription(_, let token, _), .oneTimeProduct(_, let token, _), .voidedPurchase(let token, _, _, _):
            token
        case .test, .other: nil
        }
    }

    /// Google's name of its kind and type: `SUBSCRIPTION_RENEWED`, `ONE_TIME_PRODUCT_PURCHASED`, `VOIDED_PURCHASE`,
    /// `TEST`; a type Google added later is `SUBSCRIPTION_<n>` or `ONE_TIME_PRODUCT_<n>`.
    public var typeName: String {
        switch content {
        case .subscription(let type, _, _): Self.subscriptionTypes[type] ?? "SUBSCRIPTION_\(type)"
        case .oneTimeProduct(let type, _, _): Self.oneTimeProductTypes[type] ?? "ONE_TIME_PRODUCT_\(type)"
        case .voidedPurchase: "VOIDED_PURCHASE"
        case .test: "TEST"
        case .other: "OTHER"
        }
    }

    /// Google's `SubscriptionNotification.notificationType`s.
    public static let subscriptionTypes: [Int: String] = [
        1: "SUBSCRIPTION_RECOVERED", 2: "SUBSCRIPTION_RENEWED", 3: "SUBSCRIPTION_CANCELED",
        4: "SUBSCRIPTION_PURCHASED", 5: "SUBSCRIPTION_ON_HOLD", 6: "SUBSCRIPTION_IN_GRACE_PERIOD",
        7: "SUBSCRIPTION_RESTARTED", 8: "SUBSCRIPTION_PRICE_CHANGE_CONFIRMED", 9: "SUBSCRIPTION_DEFERRED",
        10: "SUBSCRIPTION_PAUSED", 11: "SUBSCRIPTION_PAUSE_SCHEDULE_CHANGED", 12: "SUBSCRIPTION_REVOKED",
        13: "SUBSCRIPTION_EXPIRED", 17: "SUBSCRIPTION_ITEMS_CHANGED", 18: "SUBSCRIPTION_CANCELLATION_SCHEDULED",
        19: "SUBSCRIPTION_PRICE_CHANGE_UPDATED", 20: "SUBSCRIPTION_PENDING_PURCHASE_CANCELED",
        22: "SUBSCRIPTION_PRICE_STEP_UP_CONSENT_UPDATED",
    ]

    /// Google's `OneTimeProductNotification.notificationType`s.
    public static let oneTimeProductTypes: [Int: String] = [
        1: "ONE_TIME_PRODUCT_PURCHASED", 2: "ONE_TIME_PRODUCT_CANCELED",
    ]

    /// The `data` of its `notification` event.
    public func eventData(outcome: String) -> JSONObject {
        var data = JSONObject(capacity: 9)
        data.append("store", .string(Store.googlePlay.rawValue))
        data.append("message_id", .string(messageID))
        data.append("notification_type", .string(typeName))
        data.append("package_name", .string(packageName))
        data.append("event_time", .string(AppleDate.rfc3339(milliseconds: eventTime)))
        if let purchaseToken { data.append("purchase_token", .string(purchaseToken)) }
        switch content {
        case .subscription(_, _, let product?), .oneTimeProduct(_, _, let product):
            data.append("product_id", .string(product))
        case .voidedPurchase(_, let orderID, _, let refundType):
            data.append("order_id", .string(orderID))
            if let refundType { data.append("refund_type", .integer(Int64(refundType))) }
        default: break
        }
        data.append("effect", .string(outcome))
        data.append("source", .string("google"))
        return data
    }
}
