import Foundation
import ReceiptCore
import Testing

@testable import ReceiptService

/// Google's purchase resources read into the ledger's terms: states, environments, orders and renewals, the user,
/// subscription statuses, and Google's RFC 3339 times.
@Suite struct GooglePlayPurchaseTests {
    static func object(_ text: String) throws -> JSONObject {
        guard case .object(let object) = try JSONParser.parse(Array(text.utf8)) else {
            throw GooglePlayError(.invalidResponse, "x")
        }
        return object
    }

    @Test func rfc3339TimesAreReadToTheMillisecond() {
        #expect(RFC3339.milliseconds("1970-01-01T00:00:00Z") == 0)
        #expect(RFC3339.milliseconds("2026-11-26T14:10:16.5Z") == 1_795_702_216_500)
        #expect(RFC3339.milliseconds("2026-11-26T14:10:16.123456789Z") == 1_795_702_216_123)
        #expect(RFC3339.milliseconds("2026-11-26T15:10:16+01:00") == 1_795_702_216_000)
        #expect(RFC3339.milliseconds("2000-02-29T00:00:00Z") == 951_782_400_000)
        for bad in ["2026-11-26 14:10:16Z", "2026-13-01T00:00:00Z", "2026-11-26T14:10:16", "2026-11-26T14:10:16.Z", ""]
        {
            #expect(RFC3339.milliseconds(bad) == nil, "\(bad)")
        }
    }

    @Test func renewalsShareTheirFirstOrdersOriginal() {
        #expect(GooglePlayPurchase.baseOrderID("GPA.3391-5555-6666-77777..12") == "GPA.3391-5555-6666-77777")
        #expect(GooglePlayPurchase.baseOrderID("GPA.3391-5555-6666-77777") == "GPA.3391-5555-6666-77777")
        #expect(GooglePlayPurchase.baseOrderID("GPA.1..x") == "GPA.1..x")
        #expect(GooglePlayPurchase.baseOrderID("GPA.1..") == "GPA.1..")
    }

    @Test func aProductsStateEnvironmentAndUserAreRead() throws {
        let paid = try GooglePlayPurchase.product(
            Self.object(
                #"{"purchaseState":0,"orderId":"GPA.1","purchaseTimeMillis":"1790000000123","quantity":3,"acknowledgementState":1,"obfuscatedExternalAccountId":"u1"}"#
            ), productID: "coins", token: "tok")
        #expect(paid.state == .purchased && paid.environment == .production && paid.isAcknowledged)
        #expect(paid.user == "u1")
        #expect(paid.transactions.map(\.transactionID) == ["GPA.1"])
        #expect(paid.transactions.first?.purchaseDate == 1_790_000_000_123 && paid.transactions.first?.quantity == 3)
        // A license tester's purchase, without an order id: Sandbox, an id made from the token.
        let tester = try GooglePlayPurchase.product(
            Self.object(#"{"purchaseState":0,"purchaseType":0,"purchaseTimeMillis":"1"}"#), productID: "coins",
            token: "tok")
        #expect(tester.environment == .sandbox)
        #expect(tester.transactions.map(\.transactionID) == [GooglePlayPurchase.tokenOrderID("tok")])
        #expect(GooglePlayPurchase.tokenOrderID("tok").utf8.count == 36)
        #expect(GooglePlayPurchase.tokenOrderID("tok") != GooglePlayPurchase.tokenOrderID("tok2"))
        let pending = try GooglePlayPurchase.product(Self.object(#"{"purchaseState":2}"#), productID: "c", token: "t")
        #expect(pending.state == .pending && pending.transactions.isEmpty)
        let cancelled = try GooglePlayPurchase.product(Self.object(#"{"purchaseState":1}"#), productID: "c", token: "t")
        #expect(cancelled.state == .cancelled && cancelled.transactions.isEmpty)
        #expect(throws: GooglePlayError.self) {
            try GooglePlayPurchase.product(Self.object(#"{"purchaseState":7}"#), productID: "c", token: "t")
        }
        #expect(throws: GooglePlayError.self) {
            try GooglePlayPurchase.product(
                Self.object(#"{"purchaseState":0,"purchaseTimeMillis":"soon"}"#), productID: "c", token: "t")
        }
    }

    @Test func aSubscriptionsStatesBecomeStatuses() throws {
        func subscription(_ state: String, expires: String = "2099-01-01T00:00:00Z", renews: Bool = true) throws
            -> GooglePlayPurchase
        {
            try GooglePlayPurchase.subscription(
                Self.object(
                    """
                    {"subscriptionState":"\(state)","startTime":"2026-01-01T00:00:00Z",\
                    "externalAccountIdentifiers":{"obfuscatedExternalAccountId":"u2"},"testPurchase":{},\
                    "lineItems":[{"productId":"monthly","expiryTime":"\(expires)","latestSuccessfulOrderId":"GPA.9..4",\
                    "autoRenewingPlan":{"autoRenewEnabled":\(renews)}}]}
                    """), token: "tok")
        }
        let now = Date(timeIntervalSince1970: 1_795_702_216)
        let active = try subscription("SUBSCRIPTION_STATE_ACTIVE")
        #expect(active.environment == .sandbox && active.user == "u2")
        let period = try #require(active.transactions.first)
        #expect(period.transactionID == "GPA.9..4" && period.originalTransactionID == "GPA.9")
        #expect(period.purchaseDate == nil && period.originalPurchaseDate == 1_767_225_600_000)
        #expect(period.productType == "Auto-Renewable Subscription")
        let status = try #require(active.status(appID: UUID(), asOf: 5, now: now))
        #expect(status.store == .googlePlay && status.state == .active && status.autoRenews == true)
        #expect(status.originalTransactionID == "GPA.9" && status.asOf == 5)
        let states: [(String, SubscriptionStatus.State)] = [
            ("SUBSCRIPTION_STATE_IN_GRACE_PERIOD", .gracePeriod), ("SUBSCRIPTION_STATE_ON_HOLD", .billingRetry),
            ("SUBSCRIPTION_STATE_PAUSED", .expired), ("SUBSCRIPTION_STATE_EXPIRED", .expired),
            ("SUBSCRIPTION_STATE_CANCELED", .active),
        ]
        for (google, ours) in states {
            #expect(try subscription(google).status(appID: UUID(), asOf: 1, now: now)?.state == ours, "\(google)")
        }
        // Cancelled: paid to its expiry, renewing no more; past it, expired.
        let cancelled = try subscription("SUBSCRIPTION_STATE_CANCELED").status(appID: UUID(), asOf: 1, now: now)
        #expect(cancelled?.autoRenews == false)
        #expect(
            try subscription("SUBSCRIPTION_STATE_CANCELED", expires: "2020-01-01T00:00:00Z").status(
                appID: UUID(), asOf: 1, now: now)?.state == .expired)
        let pending = try subscription("SUBSCRIPTION_STATE_PENDING")
        #expect(pending.state == .pending && pending.status(appID: UUID(), asOf: 1, now: now) == nil)
        #expect(try subscription("SUBSCRIPTION_STATE_PENDING_PURCHASE_CANCELED").state == .cancelled)
    }

    @Test func tokensAndProductIDsAreCheckedBeforeGoogleIsAsked() {
        #expect(GooglePlayPurchase.isPurchaseToken("opaque-token.AO-J1Oy_x"))
        #expect(!GooglePlayPurchase.isPurchaseToken("a/b") && !GooglePlayPurchase.isPurchaseToken(""))
        #expect(!GooglePlayPurchase.isPurchaseToken(String(repeating: "a", count: 2_049)))
        #expect(GooglePlayPurchase.isProductID("premium.monthly_1") && !GooglePlayPurchase.isProductID("a b"))
    }
}
