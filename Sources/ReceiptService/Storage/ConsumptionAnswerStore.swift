import Foundation
import ReceiptCore

/// Answers to Apple's refund requests (docs/notifications.md, "Refund requests"): each `CONSUMPTION_REQUEST` group of
/// an app whose policy answers is due once; ``ConsumptionAnswerer`` builds the body from ``consumptionFacts(of:)``,
/// sends it and records the outcome with its `consumption.answered` event. Several servers share the work as they
/// share Apple's Finish Transaction: a claim leases its rows.
public protocol ConsumptionAnswerStore: StoreLifecycle {
    /// Up to `limit` answers due by `now` (of enabled apps and accounts), oldest due first, each leased until
    /// `now + lease`.
    func claimConsumptionAnswers(dueBy now: Date, lease: Duration, limit: Int) async throws -> [ConsumptionAnswerTask]
    /// What the ledger holds of the task's transaction: its delivery, the backend's report, and how many other
    /// purchases of the same customer (its claimant, else its original transaction) are refunded.
    func consumptionFacts(of task: ConsumptionAnswerTask) async throws -> ConsumptionRules.Facts
    /// Records one attempt's outcome on the group, with its event when it is final (sent or failed), in one
    /// transaction.
    func recordConsumptionAnswer(
        _ task: ConsumptionAnswerTask, outcome: ConsumptionAnswerOutcome, event: WebhookEvent?, at date: Date
    ) async throws
    /// Keeps what the backend reported of the use of transactions of the app's ledger (in `environment`, or any);
    /// returns the ids it holds (the others are unknown).
    func reportConsumption(
        appID: UUID, environment: StoreEnvironment?, transactionIDs: [String], report: ConsumptionReport
    ) async throws -> Set<String>
    /// The answers of the app's latest refund requests, newest first.
    func consumptionAnswers(appID: UUID, limit: Int) async throws -> [ConsumptionAnswerStatus]
}

/// A refund request to answer.
public struct ConsumptionAnswerTask: Sendable, Equatable {
    public var appID: UUID
    public var environment: StoreEnvironment
    /// The transaction Apple asks about.
    public var transactionID: String
    /// Attempts made so far.
    public var attempts: Int
    /// When Apple first asked (its 12 hours run from here).
    public var requestedAt: Date

    /// Creates a task.
    public init(
        appID: UUID, environment: StoreEnvironment, transactionID: String, attempts: Int, requestedAt: Date
    ) {
        self.appID = appID
        self.environment = environment
        self.transactionID = transactionID
        self.attempts = attempts
        self.requestedAt = requestedAt
    }
}

/// What one attempt to answer came to.
public enum ConsumptionAnswerOutcome: Sendable, Equatable {
    /// Apple took `body` (HTTP `status`).
    case sent(body: String, status: Int)
    /// It failed for now; the next attempt is at `next`.
    case retry(next: Date, error: String, status: Int?)
    /// It failed for good (Apple refused it, the app no longer answers, or Apple's 12 hours passed).
    case failed(error: String, body: String?, status: Int?)
}

/// A refund request's answer, as the CLI and the account screen show it.
public struct ConsumptionAnswerStatus: Sendable, Equatable {
    public var environment: StoreEnvironment
    public var transactionID: String
    /// How many times Apple asked.
    public var requests: Int
    public var firstRequestedAt: Date
    /// `pending`, `sent` or `failed`; nil: not answered (the policy was off).
    public var state: String?
    public var attempts: Int
    /// What was sent (JSON), once sent or failed with a body.
    public var body: String?
    /// Apple's HTTP status of the last attempt.
    public var appleStatus: Int?
    public var lastError: String?
    public var answeredAt: Date?

    /// Creates a status.
    public init(
        environment: StoreEnvironment, transactionID: String, requests: Int, firstRequestedAt: Date, state: String?,
        attempts: Int, body: String?, appleStatus: Int?, lastError: String?, answeredAt: Date?
    ) {
        self.environment = environment
        self.transactionID = transactionID
        self.requests = requests
        self.firstRequestedAt = firstRequestedAt
        self.state = state
        self.attempts = attempts
        self.body = body
        self.appleStatus = appleStatus
        self.lastError = lastError
        self.answeredAt = answeredAt
    }
}
