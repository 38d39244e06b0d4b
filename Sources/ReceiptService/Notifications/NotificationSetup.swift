import Foundation
import ReceiptCore

/// What a customer does to set up and prove Apple's notifications for an app: see the latest ones received, have
/// Apple send a test notification and read its result, and recover what Apple could not deliver (Notification
/// History). The account screen's counterpart of `receiptverify notifications list|test|recover`.
public struct NotificationSetup: Sendable {
    let storeKit: any AppStoreServerLooking
    let reconciler: NotificationReconciler

    /// Creates it over the App Store Server API client and the reconciler the server runs.
    public init(storeKit: any AppStoreServerLooking, reconciler: NotificationReconciler) {
        self.storeKit = storeKit
        self.reconciler = reconciler
    }

    /// The app's credentials, or a refusal the customer can act on.
    func credentials(of app: App, tenancy: TenancyService) throws -> AppStoreServerAPICredentials {
        guard let credentials = try tenancy.serverAPICredentials(of: app) else {
            throw ServiceError(
                .invalidArgument, "the app has no App Store Server API credentials: add them in its settings first")
        }
        return credentials
    }

    /// Has Apple send a test notification to the app's URL in `environment`; Apple's token.
    func requestTest(_ app: App, environment: StoreEnvironment, tenancy: TenancyService) async throws -> String {
        try await storeKit.requestTestNotification(
            environment: environment, credentials: try credentials(of: app, tenancy: tenancy))
    }

    /// Apple's attempts at test notification `token` so far.
    func testStatus(_ app: App, token: String, environment: StoreEnvironment, tenancy: TenancyService)
        async throws -> [String]
    {
        try await storeKit.testNotificationStatus(
            token: token, environment: environment, credentials: try credentials(of: app, tenancy: tenancy))
    }

    /// Takes in what Apple's Notification History lists as not delivered in the last `days` days.
    func recover(_ app: App, days: Int, tenancy: TenancyService) async throws -> NotificationReconciler.Report {
        _ = try credentials(of: app, tenancy: tenancy)
        let now = Date()
        return try await reconciler.reconcile(app, since: now.addingTimeInterval(-Double(days) * 86_400), until: now)
    }
}
