import Foundation

/// The endpoint a billable call was made to, as usage records name it.
public enum UsageEndpoint: String, Sendable, Hashable, CaseIterable, Codable {
    /// `POST /api`.
    case api
    /// `POST /apiencrypted`.
    case apiEncrypted = "apiencrypted"
    /// `POST /api/transactions`: a ledger look-up.
    case transactions
    /// `POST /api/customers`: a customer's entitlements.
    case customers
    /// `POST /api/offers/signature`: an offer signed with the app's key.
    case offers
    /// `GET /api/export`: an export of the app's data, counted once whatever its size.
    case export
}

/// What a billable call ended in: the outcome classes usage is counted by.
public enum UsageOutcome: String, Sendable, Hashable, CaseIterable, Codable {
    /// Status 0: the receipt is valid.
    case valid
    /// One of Apple's verdict codes (21002 malformed, 21003 not authentic, 21006 expired, …).
    case appleCode = "apple_code"
    /// Status 403: authentic, but it failed the app's checks.
    case rejected

    /// The class of an answer with `status`, or nil when the call is not billable.
    ///
    /// Billable calls are the ones that reached a verdict. Not billable: 4xx refusals other than 403 (401, 402, 413,
    /// 429, …), 500, and Apple's own failure codes (21005, 21009, 21100-21199), which say Apple could not answer,
    /// not what the receipt is.
    public init?(status: Int) {
        switch status {
        case 0: self = .valid
        case ResponseStatus.rejected: self = .rejected
        case 21005, 21009, 21100...21199: return nil
        case 21000...21099: self = .appleCode
        default: return nil
        }
    }
}

/// What one usage counter counts: billable calls of one account's app, to one endpoint, with one outcome, on one day.
public struct UsageKey: Sendable, Hashable, Comparable {
    /// The account billed.
    public let accountID: UUID
    /// The app the call named.
    public let appID: UUID
    /// The endpoint called.
    public let endpoint: UsageEndpoint
    /// The outcome class.
    public let outcome: UsageOutcome
    /// The UTC day of the call.
    public let day: UsageDay

    /// Creates a key.
    public init(accountID: UUID, appID: UUID, endpoint: UsageEndpoint, outcome: UsageOutcome, day: UsageDay) {
        self.accountID = accountID
        self.appID = appID
        self.endpoint = endpoint
        self.outcome = outcome
        self.day = day
    }

    /// The account's month the call counts towards.
    public var accountMonth: UsageMeter.AccountMonth {
        UsageMeter.AccountMonth(accountID: accountID, month: day.usageMonth)
    }

    /// Orders keys the way a flush writes them, so that concurrent flushes from several servers take row locks in
    /// the same order and cannot deadlock.
    public static func < (lhs: UsageKey, rhs: UsageKey) -> Bool {
        (lhs.accountID.uuidString, lhs.day, lhs.appID.uuidString, lhs.endpoint.rawValue, lhs.outcome.rawValue)
            < (rhs.accountID.uuidString, rhs.day, rhs.appID.uuidString, rhs.endpoint.rawValue, rhs.outcome.rawValue)
    }
}

/// One stored usage counter, as reports read it.
public struct UsageRecord: Sendable, Hashable {
    /// What is counted.
    public let key: UsageKey
    /// How many billable calls.
    public let calls: Int

    /// Creates a record.
    public init(key: UsageKey, calls: Int) {
        self.key = key
        self.calls = calls
    }
}

/// An account's standing for one call: whether it is enabled, its plan now, and its billable calls this month as
/// the shared database knows them (every server's flushed counts).
public struct AccountStanding: Sendable, Equatable {
    /// Whether the account may be used.
    public let isEnabled: Bool
    /// The account's plan as stored now.
    public let plan: Plan
    /// Billable calls of the month already flushed to the database by all servers.
    public let monthCalls: Int

    /// Creates a standing.
    public init(isEnabled: Bool, plan: Plan, monthCalls: Int) {
        self.isEnabled = isEnabled
        self.plan = plan
        self.monthCalls = monthCalls
    }
}
