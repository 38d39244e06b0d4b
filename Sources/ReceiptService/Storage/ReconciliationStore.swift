import Foundation

/// Where each app's reconciliation with Apple's Notification History stands: a lease, so that one server at a time
/// reconciles an app, and a cursor, so that a reconciliation cut short (a page budget spent, a stop, a failure)
/// resumes where it was instead of starting over or stopping silently.
public protocol ReconciliationStore: StoreLifecycle {
    /// Takes the app's reconciliation until `until`, unless another server holds it (nil then); returns its saved
    /// cursor (nil: start afresh) and when it last finished.
    func claimReconciliation(appID: UUID, now: Date, until: Date) async throws -> ReconciliationState?
    /// Saves the app's cursor (nil once finished, with `now` as the finish), and holds the lease until `leaseUntil`
    /// (nil gives it up).
    func saveReconciliation(appID: UUID, cursor: String?, now: Date, leaseUntil: Date?) async throws
}

/// An app's reconciliation as stored.
public struct ReconciliationState: Sendable, Equatable {
    /// Where an interrupted reconciliation was (``NotificationReconciler/Cursor`` as JSON), or nil.
    public var cursor: String?
    /// When one last finished.
    public var finishedAt: Date?

    /// Creates a state.
    public init(cursor: String?, finishedAt: Date?) {
        self.cursor = cursor
        self.finishedAt = finishedAt
    }
}
