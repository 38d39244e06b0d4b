import Foundation
import ReceiptCore

/// Recovers the notifications that never reached us (docs/notifications.md, "Reconciliation"): asks Apple's Get
/// Notification History (failures only) with the app's App Store Server API credentials, in each environment the app
/// allows, and feeds every notification found through the same intake as Apple's own POSTs; those already recorded
/// are recognised by their UUID and change nothing.
public struct NotificationReconciler: Sendable {
    /// What one reconciliation found and did.
    public struct Report: Sendable, Equatable {
        /// Notifications Apple listed.
        public var found = 0
        /// Recorded now (they had been missed).
        public var recorded = 0
        /// Recorded before.
        public var duplicates = 0
        /// Refused by the intake (another app's, a disallowed environment), with the reasons.
        public var refused: [String] = []

        /// An empty report.
        public init() {}
    }

    let intake: NotificationIntake
    let storeKit: any AppStoreServerLooking
    let tenancy: TenancyService

    /// Creates a reconciler.
    public init(intake: NotificationIntake, storeKit: any AppStoreServerLooking, tenancy: TenancyService) {
        self.intake = intake
        self.storeKit = storeKit
        self.tenancy = tenancy
    }

    /// Reconciles `app` between `since` and `until`; throws ``ServiceError/Code/notConfigured`` for an app without
    /// credentials and ``AppStoreServerAPIError`` when Apple cannot be asked.
    public func reconcile(_ app: App, since: Date, until: Date, now: Date = Date()) async throws -> Report {
        guard let credentials = try tenancy.serverAPICredentials(of: app) else {
            throw ServiceError(.notConfigured, "app \(app.token) has no App Store Server API credentials")
        }
        guard since < until else { throw ServiceError(.invalidArgument, "the start must be before the end") }
        var report = Report()
        for environment in [AppStoreEnvironment.production, .sandbox]
        where app.allowedEnvironments.contains(environment) {
            let payloads = try await storeKit.notificationHistory(
                from: since, to: until, onlyFailures: true, environment: environment, credentials: credentials)
            report.found += payloads.count
            for payload in payloads {
                do {
                    let received = try await intake.receive(
                        signedPayload: payload, for: app, source: .history, now: now)
                    if received.recorded == .duplicate { report.duplicates += 1 } else { report.recorded += 1 }
                } catch let refusal as NotificationIntake.Refusal {
                    report.refused.append(refusal.reason)
                }
            }
        }
        return report
    }
}
