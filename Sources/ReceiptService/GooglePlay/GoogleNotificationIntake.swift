import Foundation
import Logging
import ReceiptCore

/// Receives Google Play's Real-time Developer Notifications for an app (docs/google-play.md, "Real-time Developer
/// Notifications"), once their push's OIDC token was checked: notifications carry no state, so the purchase each names
/// is read from the Google Play Developer API (never from a kept answer) and recorded through the ledger's own
/// recording, as a verification's is (each effect idempotent); then the message is recorded once by its `messageId`
/// with its `notification` event. A message whose effect could not be made (Google or our database failed) is not
/// recorded: the push is answered 5xx and Pub/Sub sends it again.
public struct GoogleNotificationIntake: Sendable {
    /// What receiving a message came to.
    public enum Received: Sendable, Equatable {
        /// Recorded before: nothing was asked or changed.
        case duplicate
        /// Recorded now, with its effect: `recorded` (the purchase's state is on the ledger), `pending`, `cancelled`,
        /// `revoked`, `voided_unknown` (an order the ledger never saw), `voided_not_listed` (Google does not list it
        /// yet: the reconciliation will), `unknown_purchase` (Google does not know the token),
        /// `environment_not_allowed`, or `none` (a test, or a kind this server does not know).
        case recorded(effect: String)
    }

    /// Why a message is refused (4xx): it is not the app's.
    public struct Refusal: Error, Sendable, Equatable {
        public let reason: String
        init(_ reason: String) { self.reason = reason }
    }

    /// How far back a voided purchase is looked for in Google's list, before the notification's event time.
    public static let voidedLookBack: Int64 = 3 * 86_400_000
    /// The most pages of Google's voided list read for one notification.
    public static let voidedPages = 5

    let store: any DataStore
    let googlePlay: any GooglePlayLooking
    let deadline: StoreDeadline

    /// Creates an intake.
    public init(store: any DataStore, googlePlay: any GooglePlayLooking, deadline: StoreDeadline) {
        self.store = store
        self.googlePlay = googlePlay
        self.deadline = deadline
    }

    /// Receives one notification of `app`, whose Google service account is `account` (nil: the app has none, and a
    /// notification naming a purchase cannot be read: ``GooglePlayError`` `credentials`).
    public func receive(
        _ notification: GoogleDeveloperNotification, app: App, account: GoogleServiceAccount?, now: Date
    ) async throws -> Received {
        guard app.packageNames.contains(notification.packageName) else {
            throw Refusal("package '\(notification.packageName)' is not one of the app's")
        }
        let known = try await deadline.run("a Google notification's message id") { [store] in
            try await store.isGoogleNotificationRecorded(appID: app.id, messageID: notification.messageID)
        }
        if known { return .duplicate }
        var environment = StoreEnvironment.production
        let effect: String
        switch notification.content {
        case .test, .other:
            effect = "none"
        case .subscription(let type, let token, _):
            guard let account else { throw Self.noKey }
            (effect, environment) = try await recordSubscription(
                token: token, revokedAt: type == 12 ? notification.eventTime : nil, notification: notification,
                app: app, account: account, now: now)
        case .oneTimeProduct(_, let token, let productID):
            guard let account else { throw Self.noKey }
            (effect, environment) = try await recordProduct(
                token: token, productID: productID, notification: notification, app: app, account: account, now: now)
        case .voidedPurchase(_, let orderID, _, _):
            guard let account else { throw Self.noKey }
            effect = try await revokeVoided(orderID, notification: notification, app: app, account: account, now: now)
        }
        let record = GoogleNotificationRecord(
            appID: app.id, messageID: notification.messageID, packageName: notification.packageName,
            type: notification.typeName, purchaseToken: notification.purchaseToken, environment: environment,
            eventTime: Date(millisecondsSince1970: notification.eventTime), receivedAt: now)
        let event = WebhookEvent(
            appID: app.id, environment: environment, kind: .notification, createdAt: now,
            data: notification.eventData(outcome: effect), notificationUUID: notification.messageID)
        let recorded = try await deadline.run("a Google notification") { [store] in
            try await store.recordGoogleNotification(record, events: [event])
        }
        return recorded ? .recorded(effect: effect) : .duplicate
    }

    static let noKey = GooglePlayError(.credentials, "the app has no Google service account key")

    /// Reads the subscription and records its orders and status; `revokedAt` revokes its latest orders
    /// (`SUBSCRIPTION_REVOKED`: the customer lost it before its expiry).
    private func recordSubscription(
        token: String, revokedAt: Int64?, notification: GoogleDeveloperNotification, app: App,
        account: GoogleServiceAccount, now: Date
    ) async throws -> (String, StoreEnvironment) {
        let answer: GooglePlayAnswer
        do {
            answer = try await googlePlay.subscriptionPurchase(
                packageName: notification.packageName, token: token, account: account, fresh: true)
        } catch let error as GooglePlayError where error.code == .notFound {
            return ("unknown_purchase", .production)
        }
        var purchase = try GooglePlayPurchase.subscription(
            answer.resource, token: token, packageName: notification.packageName)
        // The push's body is not bound to its token (security review S8): a revocation is taken only when Google's own
        // state says the subscription ended (a revoked subscription reads EXPIRED at once), and never later than now.
        if revokedAt != nil, purchase.subscriptionState != "SUBSCRIPTION_STATE_EXPIRED" {
            let recorded = try await record(
                purchase, asOf: answer.fetchedAt, notification: notification, app: app, now: now)
            return (recorded == "recorded" ? "revocation_unconfirmed" : recorded, purchase.environment)
        }
        if let revokedAt = revokedAt.map({ min($0, now.millisecondsSince1970) }) {
            for index in purchase.transactions.indices {
                purchase.transactions[index].revocationDate = revokedAt
                purchase.transactions[index].revocationType = "REVOKED"
                purchase.transactions[index].signedDate = revokedAt
            }
        }
        return (
            try await record(purchase, asOf: answer.fetchedAt, notification: notification, app: app, now: now),
            purchase.environment
        )
    }

    /// Reads the one-time purchase and records it.
    private func recordProduct(
        token: String, productID: String, notification: GoogleDeveloperNotification, app: App,
        account: GoogleServiceAccount, now: Date
    ) async throws -> (String, StoreEnvironment) {
        let answer: GooglePlayAnswer
        do {
            answer = try await googlePlay.productPurchase(
                packageName: notification.packageName, productID: productID, token: token, account: account,
                fresh: true)
        } catch let error as GooglePlayError where error.code == .notFound {
            return ("unknown_purchase", .production)
        }
        let purchase = try GooglePlayPurchase.product(
            answer.resource, productID: productID, token: token, packageName: notification.packageName)
        return (
            try await record(purchase, asOf: answer.fetchedAt, notification: notification, app: app, now: now),
            purchase.environment
        )
    }

    /// Records a paid purchase's orders and status as a verification would, but delivering nothing (the backend's
    /// answer does) and claiming nothing: a notification names at most Google's `obfuscatedExternalAccountId`, which
    /// Google advises be a hash, so only the backend's own request claims (money review M1).
    private func record(
        _ purchase: GooglePlayPurchase, asOf: Date, notification: GoogleDeveloperNotification, app: App, now: Date
    ) async throws -> String {
        switch purchase.state {
        case .pending: return "pending"
        case .cancelled: return "cancelled"
        case .purchased: break
        }
        guard app.allowedEnvironments.contains(purchase.environment) else { return "environment_not_allowed" }
        var recording = LedgerRecording(
            appID: app.id, store: .googlePlay, environment: purchase.environment, transactions: purchase.transactions,
            user: nil, movesClaims: false, deliversNew: false,
            requestID: "google:\(notification.messageID)", now: now)
        recording.catalog = app.catalog
        recording.statuses = [purchase.status(appID: app.id, asOf: asOf.millisecondsSince1970, now: now)].compactMap {
            $0
        }
        let writing = recording
        let outcome = try await deadline.run("recording a Google notification's purchase") { [store] in
            try await store.record(writing)
        }
        return outcome.contains(where: \.revokedNow) ? "revoked" : "recorded"
    }

    /// Finds the voided order in Google's list (from a little before the notification's event) and revokes its row.
    private func revokeVoided(
        _ orderID: String, notification: GoogleDeveloperNotification, app: App, account: GoogleServiceAccount,
        now: Date
    ) async throws -> String {
        var pageToken: String?
        // Never before the oldest time Google lists: an older start is refused.
        let start = max(GoogleVoiding.oldestStart(now: now), notification.eventTime - Self.voidedLookBack)
        for _ in 0..<Self.voidedPages {
            let page = try await googlePlay.voidedPurchases(
                packageName: notification.packageName, startTime: start, pageToken: pageToken, account: account)
            // Every void of the order on the page (a purchase refunded in parts is listed once per part).
            let voids = page.purchases.compactMap(GoogleVoiding.void(of:)).filter { $0.orderID == orderID }
            if !voids.isEmpty {
                var result = "unknown"
                for (orderID, void) in voids {
                    result = try await GoogleVoiding.revoke(
                        orderID, void, app: app, store: store, deadline: deadline, now: now)
                }
                return result == "unknown" ? "voided_unknown" : "revoked"
            }
            guard let next = page.nextPageToken else { break }
            pageToken = next
        }
        return "voided_not_listed"
    }
}
