import Foundation
import ReceiptCore

/// Apple's Finish Transaction for confirmed deliveries (docs/app-store-server-api.md, "Finish Transaction"): the
/// store holds each one's state on its ledger row, written by the same statement that confirms the delivery, so a
/// confirmation is never without its finish; ``AppleFinisher`` calls Apple and records each attempt.
///
/// Several servers on one database share the work: a claim leases the due rows it returns (their next attempt moves
/// past the lease), so another server does not take them meanwhile; PostgreSQL skips rows another claim has locked.
public protocol AppleFinishStore: StoreLifecycle {
    /// Up to `limit` pending finishes due by `now`, oldest due first, each leased until `now + lease`.
    func claimAppleFinishes(dueBy now: Date, lease: Duration, limit: Int) async throws -> [AppleFinishTask]
    /// Records one attempt's outcome on the task's ledger row: finished, a retry at a later time, or failed for good.
    func recordAppleFinish(_ task: AppleFinishTask, outcome: AppleFinishOutcome, at date: Date) async throws
}

/// A confirmed delivery to finish with Apple.
public struct AppleFinishTask: Sendable, Equatable {
    /// The app whose ledger holds the transaction.
    public var appID: UUID
    /// The environment the transaction was made in (Apple's Finish Transaction is asked of that environment).
    public var environment: StoreEnvironment
    /// The transaction.
    public var transactionID: String
    /// Attempts made so far.
    public var attempts: Int
    /// When the delivery was confirmed.
    public var confirmedAt: Date

    /// Creates a task.
    public init(
        appID: UUID, environment: StoreEnvironment, transactionID: String, attempts: Int, confirmedAt: Date
    ) {
        self.appID = appID
        self.environment = environment
        self.transactionID = transactionID
        self.attempts = attempts
        self.confirmedAt = confirmedAt
    }
}

/// What one attempt at Finish Transaction came to.
public enum AppleFinishOutcome: Sendable, Equatable {
    /// Apple took it.
    case finished
    /// It failed for now (`error`, without secrets); the next attempt is at `next`.
    case retry(next: Date, error: String)
    /// It failed for good (Apple refused the request, or retries ran out).
    case failed(error: String)
}

/// A ledger row's Finish Transaction, as the ledger look-up shows it.
public struct AppleFinishStatus: Sendable, Equatable {
    /// Where it stands.
    public enum State: String, Sendable {
        case pending, finished, failed
    }

    /// Where it stands.
    public var state: State
    /// Attempts made so far.
    public var attempts: Int
    /// The last attempt's error, when it failed.
    public var lastError: String?
    /// When Apple took it.
    public var finishedAt: Date?

    /// Creates a status.
    public init(state: State, attempts: Int, lastError: String?, finishedAt: Date?) {
        self.state = state
        self.attempts = attempts
        self.lastError = lastError
        self.finishedAt = finishedAt
    }
}
