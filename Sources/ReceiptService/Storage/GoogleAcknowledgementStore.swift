import Foundation
import ReceiptCore

/// Google Play's acknowledgement of delivered purchases (docs/google-play.md, "Acknowledgement"): Google refunds a
/// purchase not acknowledged within three days. The store holds each one's state on its ledger row, made pending by
/// the statement that delivers the purchase (a first answer in `once` mode, the backend's confirmation in `confirm`
/// mode), so a delivery is never without its acknowledgement; ``GoogleAcknowledger`` asks Google and records each
/// attempt. Several servers share the work as with ``AppleFinishStore``: a claim leases the rows it returns.
public protocol GoogleAcknowledgementStore: StoreLifecycle {
    /// Up to `limit` pending acknowledgements due by `now`, oldest due first, each leased until `now + lease`.
    func claimGoogleAcknowledgements(dueBy now: Date, lease: Duration, limit: Int) async throws
        -> [GoogleAcknowledgementTask]
    /// Records one attempt's outcome on the task's ledger row.
    func recordGoogleAcknowledgement(_ task: GoogleAcknowledgementTask, outcome: AppleFinishOutcome, at date: Date)
        async throws
    /// How many acknowledgements are still pending for purchases bought (else, their date unknown, delivered) before
    /// `date`: the alert of purchases nearing Google's three days, which run from the purchase (money review M14).
    func pendingGoogleAcknowledgements(purchasedBefore date: Date) async throws -> Int
}

/// A delivered Google Play purchase to acknowledge.
public struct GoogleAcknowledgementTask: Sendable, Equatable {
    /// The app whose ledger holds the purchase.
    public var appID: UUID
    /// The environment of the purchase.
    public var environment: StoreEnvironment
    /// The ledger row's transaction (an order id).
    public var transactionID: String
    /// The package, product and token Google's acknowledge names.
    public var packageName: String
    public var productID: String
    public var purchaseToken: String
    /// Whether it is a subscription (`purchases.subscriptions.acknowledge`) rather than a one-time product.
    public var isSubscription: Bool
    /// Attempts made so far.
    public var attempts: Int
    /// When the purchase was delivered.
    public var deliveredAt: Date
    /// When it was bought: Google refunds a purchase not acknowledged three days after it.
    public var purchasedAt: Date?

    /// Creates a task.
    public init(
        appID: UUID, environment: StoreEnvironment, transactionID: String, packageName: String, productID: String,
        purchaseToken: String, isSubscription: Bool, attempts: Int, deliveredAt: Date, purchasedAt: Date? = nil
    ) {
        self.appID = appID
        self.environment = environment
        self.transactionID = transactionID
        self.packageName = packageName
        self.productID = productID
        self.purchaseToken = purchaseToken
        self.isSubscription = isSubscription
        self.attempts = attempts
        self.deliveredAt = deliveredAt
        self.purchasedAt = purchasedAt
    }
}
