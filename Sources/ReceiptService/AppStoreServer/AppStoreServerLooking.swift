import Foundation
import ReceiptCore

/// What the verification service and the ledger ask of Apple's App Store Server API; `Clients` implements it
/// over HTTP, within Apple's rate limits. Every value handed back was signed by Apple and has been verified.
///
/// Failures are ``AppStoreServerAPIError``s: `notFound` when Apple knows no such id in either environment,
/// `credentials` when Apple refused the app's key, `unavailable` and `rateLimited` when a retry later may succeed.
/// [Apple's documentation](https://developer.apple.com/documentation/appstoreserverapi)
public protocol AppStoreServerLooking: Sendable {
    /// Whether this client takes values signed by a test root (a stand-in for Apple on loopback, whose sandbox then
    /// plays Xcode's test purchases).
    var acceptsTestData: Bool { get }

    /// Get Transaction Info: the signed transaction with this id.
    func transaction(_ transactionID: String, credentials: AppStoreServerAPICredentials) async throws
        -> VerifiedReceipt

    /// Get Transaction History (v2): the customer's transactions in the app, oldest first, and the environment that
    /// answered. `id` is any transaction id, original transaction id or app transaction id of the customer;
    /// `environment` asks that one alone (nil: production, then the sandbox). `whole` reads every page (an import,
    /// offline); otherwise the newest pages up to a bound are read, newest first, so that what a long history leaves
    /// out is its oldest part, never the current periods and recent refunds (money review M5).
    func history(
        of id: String, in environment: StoreEnvironment?, credentials: AppStoreServerAPICredentials, whole: Bool
    ) async throws -> (transactions: [VerifiedReceipt], environment: StoreEnvironment)

    /// Get All Subscription Statuses: the signed renewal info of each of the customer's subscriptions, in Apple's
    /// order.
    func renewals(of id: String, credentials: AppStoreServerAPICredentials) async throws -> [VerifiedReceipt]

    /// Get Notification History, one page: the `signedPayload` of each notification Apple sent the app in
    /// `environment` between two dates (only those that never reached the app's URL when `onlyFailures`), in Apple's
    /// order, from `paginationToken` on (nil: the first page), and the token of the next page when there is one.
    func notificationHistoryPage(
        from start: Date, to end: Date, onlyFailures: Bool, paginationToken: String?, environment: StoreEnvironment,
        credentials: AppStoreServerAPICredentials
    ) async throws -> (payloads: [String], next: String?)

    /// Request a Test Notification: Apple sends a `TEST` notification to the app's URL for `environment`; returns
    /// Apple's `testNotificationToken`.
    func requestTestNotification(environment: StoreEnvironment, credentials: AppStoreServerAPICredentials)
        async throws -> String

    /// Get Test Notification Status: the result of each of Apple's attempts to send test notification `token`,
    /// oldest first (`SUCCESS`, `TIMED_OUT`, …); empty until Apple tried.
    func testNotificationStatus(
        token: String, environment: StoreEnvironment, credentials: AppStoreServerAPICredentials
    ) async throws -> [String]

    /// Finish Transaction: tells Apple the transaction's content was delivered, in the environment it was made in.
    func finish(
        _ transactionID: String, environment: StoreEnvironment, credentials: AppStoreServerAPICredentials
    ) async throws

    /// Send Consumption Information (v2): the app's answer to a refund request about the transaction, `body` as
    /// Apple documents it (``ConsumptionRules/body(_:answers:)``), in the environment it was made in.
    func sendConsumption(
        _ transactionID: String, body: [UInt8], environment: StoreEnvironment,
        credentials: AppStoreServerAPICredentials
    ) async throws

    /// Get All Subscription Statuses asked anew (never from a cache): the latest signed transaction and renewal info
    /// of each of the customer's subscriptions in `environment`, verified, in Apple's order.
    func currentStatuses(of id: String, environment: StoreEnvironment, credentials: AppStoreServerAPICredentials)
        async throws -> [VerifiedReceipt]

    /// Set App Account Token: Apple's transactions of `originalTransactionID` carry `token` from now on.
    func setAppAccountToken(
        _ token: UUID, originalTransactionID: String, environment: StoreEnvironment,
        credentials: AppStoreServerAPICredentials
    ) async throws

    /// Extend a Subscription Renewal Date of one customer's subscription. Sent once: a failure after Apple may have
    /// acted is ``AppStoreServerAPIError/Code/unavailable`` and is not retried here.
    func extendRenewalDate(
        originalTransactionID: String, _ extension: RenewalExtension, environment: StoreEnvironment,
        credentials: AppStoreServerAPICredentials
    ) async throws -> RenewalExtension.Result

    /// Extend Subscription Renewal Dates for All Active Subscribers of `productID` (in the storefronts named, or all).
    /// Sent once, as ``extendRenewalDate(originalTransactionID:_:environment:credentials:)``.
    func massExtendRenewalDate(
        productID: String, storefronts: [String], _ extension: RenewalExtension, environment: StoreEnvironment,
        credentials: AppStoreServerAPICredentials
    ) async throws

    /// Get Status of Subscription Renewal Date Extensions: where Apple is with a mass extension.
    func massExtensionStatus(
        productID: String, requestIdentifier: String, environment: StoreEnvironment,
        credentials: AppStoreServerAPICredentials
    ) async throws -> RenewalExtension.MassStatus

    /// Get App Transaction Info: the customer's signed app transaction, verified, from any of their transaction ids
    /// (`environment` nil: production, then the sandbox).
    func appTransactionInfo(
        of id: String, environment: StoreEnvironment?, credentials: AppStoreServerAPICredentials
    ) async throws -> VerifiedReceipt
}

extension AppStoreServerLooking {
    /// Not answered by a client that does not implement it.
    public func sendConsumption(
        _ transactionID: String, body: [UInt8], environment: StoreEnvironment,
        credentials: AppStoreServerAPICredentials
    ) async throws {
        throw AppStoreServerAPIError(.refused, "this client does not send consumption information")
    }
}

extension AppStoreServerLooking {
    public var acceptsTestData: Bool { false }

    /// Not answered by a client that does not implement Apple's actions.
    public func currentStatuses(
        of id: String, environment: StoreEnvironment, credentials: AppStoreServerAPICredentials
    ) async throws -> [VerifiedReceipt] {
        throw AppStoreServerAPIError(.refused, "this client does not ask subscription statuses")
    }

    public func setAppAccountToken(
        _ token: UUID, originalTransactionID: String, environment: StoreEnvironment,
        credentials: AppStoreServerAPICredentials
    ) async throws {
        throw AppStoreServerAPIError(.refused, "this client does not set app account tokens")
    }

    public func extendRenewalDate(
        originalTransactionID: String, _ extension: RenewalExtension, environment: StoreEnvironment,
        credentials: AppStoreServerAPICredentials
    ) async throws -> RenewalExtension.Result {
        throw AppStoreServerAPIError(.refused, "this client does not extend renewal dates")
    }

    public func massExtendRenewalDate(
        productID: String, storefronts: [String], _ extension: RenewalExtension, environment: StoreEnvironment,
        credentials: AppStoreServerAPICredentials
    ) async throws {
        throw AppStoreServerAPIError(.refused, "this client does not extend renewal dates")
    }

    public func massExtensionStatus(
        productID: String, requestIdentifier: String, environment: StoreEnvironment,
        credentials: AppStoreServerAPICredentials
    ) async throws -> RenewalExtension.MassStatus {
        throw AppStoreServerAPIError(.refused, "this client does not extend renewal dates")
    }

    public func appTransactionInfo(
        of id: String, environment: StoreEnvironment?, credentials: AppStoreServerAPICredentials
    ) async throws -> VerifiedReceipt {
        throw AppStoreServerAPIError(.refused, "this client does not ask app transactions")
    }
}
