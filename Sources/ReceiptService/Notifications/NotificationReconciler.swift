import Foundation
import ReceiptCore

/// Recovers the notifications that never reached us (docs/notifications.md, "Reconciliation"): asks Apple's Get
/// Notification History (failures only) with the app's App Store Server API credentials, for each of its bundle IDs in
/// each environment the app allows, and feeds every notification found through the same intake as Apple's own POSTs;
/// those already recorded are recognised by their UUID and change nothing. At most ``maximumPages`` pages are read
/// in one run: a run cut short reports where it stopped (``Cursor``), and the next one resumes there.
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
        /// Pages read.
        public var pages = 0
        /// Where the run stopped when it read its most pages before the end (resume from it); nil when it finished.
        public var remaining: Cursor?

        /// An empty report.
        public init() {}
    }

    /// Where a reconciliation stands: the bundle ID and environment being read, the window, and Apple's token of the
    /// next page (nil: that leg's first page).
    public struct Cursor: Codable, Sendable, Equatable {
        public var bundleID: String
        public var environment: String
        /// The window, in milliseconds since 1970.
        public var since: Int64
        public var until: Int64
        public var token: String?

        /// The cursor as stored.
        public var text: String { String(decoding: (try? JSONEncoder().encode(self)) ?? Data(), as: UTF8.self) }

        /// The cursor `text` holds, if it is one.
        public init?(text: String?) {
            guard let text, let cursor = try? JSONDecoder().decode(Cursor.self, from: Data(text.utf8)) else {
                return nil
            }
            self = cursor
        }

        init(bundleID: String, environment: String, since: Int64, until: Int64, token: String?) {
            self.bundleID = bundleID
            self.environment = environment
            self.since = since
            self.until = until
            self.token = token
        }
    }

    let intake: NotificationIntake
    let storeKit: any AppStoreServerLooking
    let tenancy: TenancyService
    /// The most pages one run reads (20 notifications each).
    public var maximumPages: Int

    /// Creates a reconciler.
    public init(
        intake: NotificationIntake, storeKit: any AppStoreServerLooking, tenancy: TenancyService,
        maximumPages: Int = 100
    ) {
        self.intake = intake
        self.storeKit = storeKit
        self.tenancy = tenancy
        self.maximumPages = maximumPages
    }

    /// Reconciles `app` between `since` and `until`, or from `cursor` (an earlier run cut short: its window and
    /// place); `progress` gets the cursor after each page (where a run stopped now would resume). Throws
    /// ``ServiceError/Code/notConfigured`` for an app without credentials and ``AppStoreServerAPIError`` when Apple
    /// cannot be asked.
    public func reconcile(
        _ app: App, since: Date, until: Date, resuming cursor: Cursor? = nil, now: Date = Date(),
        progress: (Cursor) async throws -> Void = { _ in }
    ) async throws -> Report {
        guard let base = try tenancy.serverAPICredentials(of: app) else {
            throw ServiceError(.notConfigured, "app \(app.token) has no App Store Server API credentials")
        }
        guard since < until else { throw ServiceError(.invalidArgument, "the start must be before the end") }
        let window = cursor.map { ($0.since, $0.until) } ?? (since.millisecondsSince1970, until.millisecondsSince1970)
        let legs: [(bundleID: String, environment: StoreEnvironment)] = app.bundleIDs.flatMap { bundle in
            [StoreEnvironment.production, .sandbox].filter { app.allowedEnvironments.contains($0) }.map {
                (bundle.value, $0)
            }
        }
        // A cursor of a leg the app no longer has starts over from the first.
        let first =
            cursor.flatMap { cursor in
                legs.firstIndex { $0.bundleID == cursor.bundleID && $0.environment.rawValue == cursor.environment }
            } ?? 0
        var report = Report()
        for (index, leg) in legs.enumerated() where index >= first {
            var credentials = base
            credentials.bundleID = leg.bundleID
            var token = index == first ? cursor?.token : nil
            repeat {
                guard report.pages < maximumPages else {
                    report.remaining = Cursor(
                        bundleID: leg.bundleID, environment: leg.environment.rawValue, since: window.0,
                        until: window.1, token: token)
                    return report
                }
                let page = try await storeKit.notificationHistoryPage(
                    from: Date(millisecondsSince1970: window.0), to: Date(millisecondsSince1970: window.1),
                    onlyFailures: true, paginationToken: token, environment: leg.environment, credentials: credentials)
                report.pages += 1
                report.found += page.payloads.count
                for payload in page.payloads {
                    do {
                        let received = try await intake.receive(
                            signedPayload: payload, for: app, source: .history, now: now)
                        if received.recorded == .duplicate { report.duplicates += 1 } else { report.recorded += 1 }
                    } catch let refusal as NotificationIntake.Refusal {
                        report.refused.append(refusal.reason)
                    }
                }
                token = page.next
                if let token {
                    try await progress(
                        Cursor(
                            bundleID: leg.bundleID, environment: leg.environment.rawValue, since: window.0,
                            until: window.1, token: token))
                }
            } while token != nil
        }
        return report
    }
}
