import CoreMetrics
import Foundation
import ReceiptCore

/// Receives App Store Server Notifications V2 for an app (docs/notifications.md): verifies the signed payload and
/// every signed item in it at their signing dates, checks it is the app's (bundle ID, environment, test data), and
/// records it with its effects and events in one step (``NotificationStore/recordNotification(_:)``).
///
/// Apple retries a notification until it gets a 2xx, so the answer tells Apple what to do: a refusal (4xx) for a body
/// that is not an authentic notification of this app, which is stored nowhere; a storage failure is ours and
/// transient (5xx, Apple retries); anything recorded, or recorded before, is a 2xx.
public struct NotificationIntake: Sendable {
    /// Why a notification is refused (4xx, nothing stored).
    public struct Refusal: Error, Sendable, Equatable {
        /// What is wrong.
        public enum Kind: String, Sendable {
            /// The body is not `{"signedPayload": "…"}` with a notification in it.
            case malformed
            /// A signature or certificate chain does not verify.
            case inauthentic
            /// The notification is another app's, or of an environment (or test data) the app does not take.
            case notTheApps = "not_the_apps"
        }

        /// What is wrong.
        public let kind: Kind
        /// Details for the log (never a secret).
        public let reason: String

        /// Creates a refusal.
        public init(_ kind: Kind, _ reason: String) {
            self.kind = kind
            self.reason = reason
        }

        public static func == (lhs: Refusal, rhs: Refusal) -> Bool { lhs.kind == rhs.kind }
    }

    /// The intake's answer for one notification.
    public struct Received: Sendable {
        /// The verified notification.
        public let notification: ServerNotification
        /// What recording it came to.
        public let recorded: NotificationRecorded
    }

    /// The longest `signedPayload` taken, in bytes: Apple's are a few kilobytes (three certificate chains at most).
    public static let maximumPayloadLength = 64 << 10

    let verifier: ReceiptVerifier
    let store: any NotificationStore
    let deadline: StoreDeadline
    /// How long recorded notifications are kept (nil: for ever). A notification signed longer ago than that may have
    /// been recorded and purged since, so it is answered as a duplicate and changes nothing (security review S14): a
    /// genuine old `signedPayload` from a log cannot be taken in twice.
    let kept: Duration?

    /// A day's margin for Apple's clock against ours.
    static let clockMargin: Int64 = 86_400_000

    /// Creates an intake; notifications are kept `kept` (nil: for ever, or an operator's deliberate replay).
    public init(verifier: ReceiptVerifier, store: any NotificationStore, deadline: StoreDeadline, kept: Duration? = nil)
    {
        self.verifier = verifier
        self.store = store
        self.deadline = deadline
        self.kept = kept
    }

    /// Reads Apple's request body, `{"signedPayload": "…"}`, and receives the notification in it.
    public func receive(body: some Collection<UInt8>, for app: App, source: NotificationRecord.Source, now: Date)
        async throws -> Received
    {
        let parsed: JSONValue
        do {
            parsed = try JSONParser.parse(body, maximumDepth: 4, maximumMembers: 16)
        } catch {
            throw Refusal(.malformed, "the body is not JSON")
        }
        guard case .string(let signedPayload)? = parsed["signedPayload"] else {
            throw Refusal(.malformed, "the body has no signedPayload string")
        }
        return try await receive(signedPayload: signedPayload, for: app, source: source, now: now)
    }

    /// Verifies, checks and records one `signedPayload`.
    public func receive(signedPayload: String, for app: App, source: NotificationRecord.Source, now: Date)
        async throws -> Received
    {
        guard signedPayload.utf8.count <= Self.maximumPayloadLength else {
            throw Refusal(.malformed, "the signedPayload is over \(Self.maximumPayloadLength) bytes")
        }
        let notification: ServerNotification
        do {
            notification = try verifier.verifyNotification(
                Array(signedPayload.utf8), testData: app.testDataTrust)
        } catch let error as ReceiptError where error.code == .testDataNotAllowed {
            throw Refusal(.notTheApps, "test-signed data under a root the app does not trust: \(error)")
        } catch let error as ReceiptError {
            throw Refusal(error.isMalformed ? .malformed : .inauthentic, "\(error)")
        }
        if let refusal = Self.refusal(of: notification, for: app) { throw refusal }
        if let kept,
            notification.signedDate < now.millisecondsSince1970 - kept.components.seconds * 1_000 + Self.clockMargin
        {
            return Received(notification: notification, recorded: .duplicate)
        }
        var draft = NotificationRecord(
            notification: notification, signedPayload: signedPayload, appID: app.id, source: source, receivedAt: now)
        draft.catalog = app.catalog
        draft.answersConsumption = app.refundAnswers.answers
        let record = draft
        let recorded = try await deadline.run("a notification") { [store] in
            try await store.recordNotification(record)
        }
        return Received(notification: notification, recorded: recorded)
    }

    /// Why a verified notification is not the app's to take, or nil when it is: its bundle ID must be one of the
    /// app's, its environment one the app allows (test data aside, which the verifier let through only for an app that
    /// takes it), and, for a Production notification of an app whose Apple ID is bound, its `appAppleId` that ID.
    static func refusal(of notification: ServerNotification, for app: App) -> Refusal? {
        guard app.bundleIDs.contains(where: { $0.value == notification.bundleID }) else {
            return Refusal(.notTheApps, "bundle ID '\(notification.bundleID)' is not one of the app's")
        }
        guard notification.isTestData || app.allowedEnvironments.contains(notification.environment) else {
            return Refusal(.notTheApps, "environment \(notification.environment.rawValue) is not allowed for the app")
        }
        // As Apple's library: a Production notification of an app whose Apple ID is bound must state that ID.
        if let appleAppID = app.appleAppID, notification.environment == .production,
            notification.appAppleID != appleAppID
        {
            return Refusal(
                .notTheApps, "appAppleId \(notification.appAppleID.map(String.init) ?? "none") is not the app's")
        }
        return nil
    }
}
