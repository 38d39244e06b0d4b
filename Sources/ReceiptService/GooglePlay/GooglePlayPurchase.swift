import Crypto
import Foundation
import ReceiptCore

/// A Google Play purchase as the Google Play Developer API states it, read into the ledger's terms: its state, its
/// environment (a license tester's purchase is `Sandbox`), its orders as transactions, the user it names and, for a
/// subscription, its status. Reads the documented resources of androidpublisher v3: `ProductPurchase`
/// (`purchases.products.get`) and `SubscriptionPurchaseV2` (`purchases.subscriptionsv2.get`).
public struct GooglePlayPurchase: Sendable {
    /// Which resource it was read from.
    public enum Kind: String, Sendable {
        /// A one-time product (`purchases.products`).
        case product
        /// A subscription (`purchases.subscriptionsv2`).
        case subscription
    }

    /// Where the purchase stands.
    public enum State: String, Sendable {
        /// Paid (a subscription in any state after its first payment: active, in grace, on hold, paused, cancelled or
        /// expired).
        case purchased
        /// Awaiting payment (a pending transaction): nothing may be delivered yet.
        case pending
        /// Cancelled before it was ever paid: nothing may be delivered.
        case cancelled
    }

    /// Which resource.
    public var kind: Kind
    /// Where it stands.
    public var state: State
    /// `Sandbox` for a test purchase (a license tester's), `Production` otherwise.
    public var environment: StoreEnvironment
    /// Its orders: a product's one order, a subscription's latest order of each line item. The transaction id is the
    /// order id (``tokenOrderID(_:)`` where Google gives no order id); the original transaction id is the order id
    /// without its renewal suffix (`..N`), so that every renewal of a subscription is one original's.
    public var transactions: [PurchaseTransaction]
    /// The user the app set at purchase (`obfuscatedExternalAccountId`), if any.
    public var user: String?
    /// Whether the purchase is acknowledged (Google refunds one left unacknowledged for three days).
    public var isAcknowledged: Bool
    /// A subscription's previous purchase token (`linkedPurchaseToken`: an upgrade, downgrade or re-subscription).
    public var linkedPurchaseToken: String?
    /// Google's subscription state (`SUBSCRIPTION_STATE_…`), for a subscription.
    public var subscriptionState: String?
    /// Whether a subscription renews (`autoRenewingPlan.autoRenewEnabled` of its line item).
    public var autoRenews: Bool?

    /// The purchase token of one purchase: Google's are letters, digits, `.`, `_` and `-`, far below this length.
    public static let maximumTokenLength = 2_048

    /// Whether `text` has a purchase token's form.
    public static func isPurchaseToken(_ text: String) -> Bool {
        (1...maximumTokenLength).contains(text.utf8.count)
            && text.utf8.allSatisfy { Validation.isASCIIAlphanumeric($0) || $0 == 0x2E || $0 == 0x5F || $0 == 0x2D }
    }

    /// Whether `text` has a product id's form (Google's: lower-case letters, digits, `.` and `_`, starting with a
    /// letter or digit; upper-case letters are taken too, as older products have them).
    public static func isProductID(_ text: String) -> Bool {
        (1...VerificationRequest.maximumFieldLength).contains(text.utf8.count)
            && text.utf8.allSatisfy { Validation.isASCIIAlphanumeric($0) || $0 == 0x2E || $0 == 0x5F }
    }

    /// Reads a `ProductPurchase` of `productID` bought with `token`.
    public static func product(_ resource: JSONObject, productID: String, token: String, packageName: String? = nil)
        throws -> GooglePlayPurchase
    {
        guard case .integer(let purchaseState)? = resource["purchaseState"] else {
            throw GooglePlayError(.invalidResponse, "Google's ProductPurchase has no purchaseState")
        }
        let state: State
        switch purchaseState {
        case 0: state = .purchased
        case 1: state = .cancelled
        case 2: state = .pending
        default:
            throw GooglePlayError(.invalidResponse, "Google's ProductPurchase has purchaseState \(purchaseState)")
        }
        let orderID = resource["orderId"]?.stringValue.flatMap { $0.isEmpty ? nil : $0 } ?? tokenOrderID(token)
        let purchased = try millis(resource["purchaseTimeMillis"], "purchaseTimeMillis")
        var quantity = 1
        if case .integer(let stated)? = resource["quantity"], stated > 0, stated <= 1_000_000 { quantity = Int(stated) }
        var transaction = PurchaseTransaction(
            transactionID: orderID, originalTransactionID: orderID, productID: productID, purchaseDate: purchased,
            originalPurchaseDate: purchased, quantity: quantity, inAppOwnershipType: "PURCHASED")
        var isTest = false
        if case .integer(let type)? = resource["purchaseType"] { isTest = type == 0 }
        var acknowledged = false
        if case .integer(let value)? = resource["acknowledgementState"] { acknowledged = value == 1 }
        transaction.purchaseToken = token
        transaction.packageName = packageName
        transaction.isAcknowledged = acknowledged
        return GooglePlayPurchase(
            kind: .product, state: state, environment: isTest ? .sandbox : .production,
            transactions: state == .purchased ? [transaction] : [],
            user: resource["obfuscatedExternalAccountId"]?.stringValue, isAcknowledged: acknowledged)
    }

    /// Reads a `SubscriptionPurchaseV2` bought with `token`.
    public static func subscription(_ resource: JSONObject, token: String, packageName: String? = nil) throws
        -> GooglePlayPurchase
    {
        guard let subscriptionState = resource["subscriptionState"]?.stringValue else {
            throw GooglePlayError(.invalidResponse, "Google's SubscriptionPurchaseV2 has no subscriptionState")
        }
        let state: State =
            switch subscriptionState {
            case "SUBSCRIPTION_STATE_PENDING": .pending
            case "SUBSCRIPTION_STATE_PENDING_PURCHASE_CANCELED": .cancelled
            default: .purchased
            }
        let started = try resource["startTime"].map { try time($0, "startTime") }
        let acknowledged = resource["acknowledgementState"]?.stringValue == "ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED"
        let linked = resource["linkedPurchaseToken"]?.stringValue
        var transactions: [PurchaseTransaction] = []
        var autoRenews: Bool?
        for item in resource["lineItems"]?.arrayValue ?? [] {
            guard case .object(let line) = item, let productID = line["productId"]?.stringValue else {
                throw GooglePlayError(
                    .invalidResponse, "a line item of Google's SubscriptionPurchaseV2 has no productId")
            }
            // An item not owned yet (a deferred replacement) has no order.
            guard let orderID = line["latestSuccessfulOrderId"]?.stringValue, !orderID.isEmpty else { continue }
            let original = baseOrderID(orderID)
            var renewing = false
            if case .object(let plan)? = line["autoRenewingPlan"] {
                renewing = true
                if case .bool(let enabled)? = plan["autoRenewEnabled"] { autoRenews = enabled }
            }
            var transaction = PurchaseTransaction(
                transactionID: orderID, originalTransactionID: original, productID: productID,
                purchaseDate: original == orderID ? started : nil, originalPurchaseDate: started,
                expiresDate: try line["expiryTime"].map { try time($0, "expiryTime") },
                inAppOwnershipType: "PURCHASED",
                productType: renewing ? "Auto-Renewable Subscription" : "Non-Renewing Subscription")
            transaction.purchaseToken = token
            transaction.packageName = packageName
            transaction.linkedPurchaseToken = linked
            transaction.isAcknowledged = acknowledged
            transactions.append(transaction)
        }
        guard state != .purchased || !transactions.isEmpty else {
            throw GooglePlayError(.invalidResponse, "Google's SubscriptionPurchaseV2 names no order of a paid item")
        }
        var user: String?
        if case .object(let identifiers)? = resource["externalAccountIdentifiers"] {
            user = identifiers["obfuscatedExternalAccountId"]?.stringValue
        }
        return GooglePlayPurchase(
            kind: .subscription, state: state, environment: resource["testPurchase"] == nil ? .production : .sandbox,
            transactions: state == .purchased ? transactions : [], user: user,
            isAcknowledged: acknowledged, linkedPurchaseToken: linked, subscriptionState: subscriptionState,
            autoRenews: autoRenews)
    }

    /// The subscription's status as of `asOf` (milliseconds since 1970: Google's state is the state when it was
    /// fetched), for the latest order of its first line item; nil for a product or an unpaid subscription.
    public func status(appID: UUID, asOf: Int64, now: Date) -> SubscriptionStatus? {
        guard kind == .subscription, state == .purchased, let latest = transactions.first,
            let subscriptionState
        else { return nil }
        let expires = latest.expiresDate
        let statusState: SubscriptionStatus.State =
            switch subscriptionState {
            case "SUBSCRIPTION_STATE_ACTIVE": .active
            case "SUBSCRIPTION_STATE_IN_GRACE_PERIOD": .gracePeriod
            case "SUBSCRIPTION_STATE_ON_HOLD": .billingRetry
            // Cancelled by the customer: paid up to its expiry, renewing no more.
            case "SUBSCRIPTION_STATE_CANCELED": (expires ?? 0) > now.millisecondsSince1970 ? .active : .expired
            // Paused: no access until it resumes; expired: over.
            default: .expired
            }
        return SubscriptionStatus(
            appID: appID, store: .googlePlay, environment: environment,
            originalTransactionID: latest.originalTransactionID, productID: latest.productID, state: statusState,
            expiresDate: expires, autoRenews: subscriptionState == "SUBSCRIPTION_STATE_CANCELED" ? false : autoRenews,
            asOf: asOf, updatedAt: now)
    }

    /// The transaction id of a purchase Google gives no order id (a license tester's, in some cases): `GPT.` and the
    /// first 32 hex digits of the token's SHA-256, short enough for a ledger cursor (a token may be kilobytes) and, like
    /// an order id, never Apple's form (digits).
    public static func tokenOrderID(_ token: String) -> String {
        "GPT." + Hex.encode(SHA256.hash(data: Array(token.utf8)).prefix(16))
    }

    /// An order id without its renewal suffix: `GPA.1234-5678-9012-34567..3` is a renewal of `GPA.1234-5678-9012-34567`.
    public static func baseOrderID(_ orderID: String) -> String {
        guard let range = orderID.range(of: "..", options: .backwards),
            !orderID[range.upperBound...].isEmpty,
            orderID[range.upperBound...].utf8.allSatisfy({ (0x30...0x39).contains($0) })
        else { return orderID }
        return String(orderID[..<range.lowerBound])
    }

    /// Google's milliseconds, sent as a decimal string (or a number).
    public static func millis(_ value: JSONValue?, _ field: String) throws -> Int64? {
        switch value {
        case nil: return nil
        case .integer(let number)?: return number
        case .string(let text)?:
            guard let number = Int64(text), number >= 0 else {
                throw GooglePlayError(.invalidResponse, "Google's \(field) is not milliseconds")
            }
            return number
        default: throw GooglePlayError(.invalidResponse, "Google's \(field) is not milliseconds")
        }
    }

    /// An RFC 3339 time of Google's (`2026-01-02T03:04:05.678Z`, any digits of fraction, `Z` or an offset), in
    /// milliseconds since 1970.
    static func time(_ value: JSONValue, _ field: String) throws -> Int64 {
        guard let text = value.stringValue, let millis = RFC3339.milliseconds(text) else {
            throw GooglePlayError(.invalidResponse, "Google's \(field) is not an RFC 3339 time")
        }
        return millis
    }
}

/// RFC 3339 times, as Google's APIs write them.
public enum RFC3339 {
    /// Milliseconds since 1970 of `text` (`YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)`); nil when it is not such a time.
    public static func milliseconds(_ text: String) -> Int64? {
        let bytes = Array(text.utf8)
        guard bytes.count >= 20, bytes.count <= 40 else { return nil }
        func number(_ start: Int, _ count: Int) -> Int64? {
            var value: Int64 = 0
            for index in start..<(start + count) {
                guard (0x30...0x39).contains(bytes[index]) else { return nil }
                value = value * 10 + Int64(bytes[index] - 0x30)
            }
            return value
        }
        guard bytes[4] == 0x2D, bytes[7] == 0x2D, bytes[10] == 0x54 || bytes[10] == 0x74, bytes[13] == 0x3A,
            bytes[16] == 0x3A, let year = number(0, 4), let month = number(5, 2), let day = number(8, 2),
            let hour = number(11, 2), let minute = number(14, 2), let second = number(17, 2),
            (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 61
        else { return nil }
        var index = 19
        var fraction: Int64 = 0
        if bytes[index] == 0x2E {
            index += 1
            var digits = 0
            while index < bytes.count, (0x30...0x39).contains(bytes[index]) {
                if digits < 3 { fraction = fraction * 10 + Int64(bytes[index] - 0x30) }
                digits += 1
                index += 1
            }
            guard digits > 0 else { return nil }
            for _ in min(digits, 3)..<3 { fraction *= 10 }
        }
        guard index < bytes.count else { return nil }
        var offsetMinutes: Int64 = 0
        switch bytes[index] {
        case 0x5A, 0x7A:
            guard index + 1 == bytes.count else { return nil }
        case 0x2B, 0x2D:
            guard index + 6 == bytes.count, bytes[index + 3] == 0x3A, let hours = number(index + 1, 2),
                let minutes = number(index + 4, 2), hours < 24, minutes < 60
            else { return nil }
            offsetMinutes = (hours * 60 + minutes) * (bytes[index] == 0x2B ? 1 : -1)
        default: return nil
        }
        // Days from the civil date (Howard Hinnant's algorithm).
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        let days = era * 146_097 + dayOfEra - 719_468
        let seconds = days * 86_400 + hour * 3_600 + minute * 60 + second - offsetMinutes * 60
        return seconds * 1_000 + fraction
    }
}
