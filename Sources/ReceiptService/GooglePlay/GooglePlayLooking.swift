import Foundation
import ReceiptCore

/// The Google Play Developer API's purchase resources, as ``VerificationService`` asks for them (the client in
/// `Clients/Google` answers; tests put a fake Google behind it). Each answer is Google's resource as it came; a
/// failure is a ``GooglePlayError``.
public protocol GooglePlayLooking: Sendable {
    /// `purchases.products.get`: the `ProductPurchase` of `productID` bought with `token` in `packageName`.
    /// `fresh` asks Google even when an answer about the purchase is kept (a notification says it changed).
    func productPurchase(
        packageName: String, productID: String, token: String, account: GoogleServiceAccount, fresh: Bool
    ) async throws -> GooglePlayAnswer
    /// `purchases.subscriptionsv2.get`: the `SubscriptionPurchaseV2` bought with `token` in `packageName`.
    func subscriptionPurchase(packageName: String, token: String, account: GoogleServiceAccount, fresh: Bool)
        async throws -> GooglePlayAnswer
    /// `purchases.voidedpurchases.list`: one page of the package's voided purchases (refunds, chargebacks,
    /// cancellations), one-time products and subscriptions, voided at `startTime` or later (nil: Google's default,
    /// 30 days back), from `pageToken`.
    func voidedPurchases(
        packageName: String, startTime: Int64?, pageToken: String?, account: GoogleServiceAccount
    ) async throws -> (purchases: [JSONObject], nextPageToken: String?)
    /// `purchases.products.acknowledge` or `purchases.subscriptions.acknowledge`: acknowledges the purchase of
    /// `productID` bought with `token` (Google refunds one left unacknowledged for three days).
    func acknowledge(
        packageName: String, productID: String, token: String, isSubscription: Bool, account: GoogleServiceAccount
    ) async throws
    /// `purchases.products.consume`: consumes the one-time purchase of `productID` bought with `token`, so that the
    /// customer may buy it again (a consumption also acknowledges it).
    func consume(packageName: String, productID: String, token: String, account: GoogleServiceAccount) async throws
    /// Google's OIDC signing keys, which sign Pub/Sub's push tokens, fresh enough for a token naming `keyID`.
    func pushKeys(forKeyID keyID: String?) async throws -> JSONWebKeySet
}

extension GooglePlayLooking {
    /// The purchase, from a kept answer when there is one.
    public func productPurchase(packageName: String, productID: String, token: String, account: GoogleServiceAccount)
        async throws -> GooglePlayAnswer
    {
        try await productPurchase(
            packageName: packageName, productID: productID, token: token, account: account, fresh: false)
    }

    /// The subscription, from a kept answer when there is one.
    public func subscriptionPurchase(packageName: String, token: String, account: GoogleServiceAccount) async throws
        -> GooglePlayAnswer
    {
        try await subscriptionPurchase(packageName: packageName, token: token, account: account, fresh: false)
    }
}

/// A resource of Google's and when Google gave it: a kept answer states the purchase as of its fetch, and a status
/// read from it is dated so (never later), so that it cannot overwrite a fresher one read since.
public struct GooglePlayAnswer: Sendable {
    /// Google's resource, as it came.
    public var resource: JSONObject
    /// When Google answered.
    public var fetchedAt: Date

    /// Creates an answer.
    public init(resource: JSONObject, fetchedAt: Date) {
        self.resource = resource
        self.fetchedAt = fetchedAt
    }
}
