import Foundation

/// What a plan allows, enforced call by call: the account's current standing, the endpoint gate, the rate limit and
/// the monthly quota before a verification, and the metering after it.
///
/// Every call reads the account's standing from the store (one indexed read that joins the account, its plan and the
/// month's flushed count), so a plan or account change made with the CLI applies to the next call on every server.
public struct UsageGate: Sendable {
    /// The store the standing is read from and the meter flushes to.
    public let store: any TenancyStore
    /// This server's counts.
    public let meter: Meter
    /// This server's rate limits.
    public let rateLimiter: RateLimiter
    /// The wall clock, for days and months (UTC).
    public let now: @Sendable () -> Date

    /// Store reads that overlapped a flush are retried this many times before the conservative count is used.
    static let cleanReadAttempts = 3

    /// Creates a gate.
    public init(
        store: any TenancyStore, meter: Meter = Meter(), rateLimiter: RateLimiter = RateLimiter(),
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.store = store
        self.meter = meter
        self.rateLimiter = rateLimiter
        self.now = now
    }

    /// A call let through: settle it with ``settle(_:status:)`` whatever happens next.
    public struct Ticket: Sendable {
        /// The account's plan as read for this call.
        public let plan: Plan
        let accountMonth: Meter.AccountMonth
        let accountID: UUID
        let appID: UUID
        let endpoint: UsageEndpoint
        let day: UsageDay
    }

    /// Why a call was not let through.
    public enum Refusal: Error, Sendable, Equatable {
        /// The account was disabled or removed after authentication.
        case accountDisabled
        /// The plan does not include the endpoint.
        case notInPlan(plan: String)
        /// Over the plan's requests per second; retry after the duration.
        case rateLimited(plan: String, perSecond: Int, retryAfter: Duration)
        /// The month's quota is used up until `resetsAt`.
        case quotaExhausted(plan: String, quota: Int, resetsAt: Date)
    }

    /// The gate's answer.
    public enum Admission: Sendable {
        case admitted(Ticket)
        case refused(Refusal)
    }

    /// Checks the caller's account against its plan for one call to `endpoint` and reserves it against the quota.
    public func admit(_ caller: Caller, to endpoint: UsageEndpoint) async throws -> Admission {
        let date = now()
        let day = UsageDay(containing: date)
        let accountMonth = Meter.AccountMonth(accountID: caller.account.id, month: day.usageMonth)
        var (standing, mark) = try await read(accountMonth)
        for _ in 1..<Self.cleanReadAttempts where !meter.readWasClean(mark) {
            (standing, mark) = try await read(accountMonth)
        }
        guard let standing, standing.isEnabled else { return .refused(.accountDisabled) }
        let plan = standing.plan
        if endpoint == .apiEncrypted, !plan.includesEncryptedEndpoint {
            return .refused(.notInPlan(plan: plan.name))
        }
        if let wait = rateLimiter.acquire(accountID: caller.account.id, rate: plan.rateLimitPerSecond, now: .now) {
            return .refused(.rateLimited(plan: plan.name, perSecond: plan.rateLimitPerSecond, retryAfter: wait))
        }
        guard meter.reserve(accountMonth, stored: standing.monthCalls, since: mark, quota: plan.monthlyQuota) else {
            return .refused(
                .quotaExhausted(plan: plan.name, quota: plan.monthlyQuota ?? 0, resetsAt: day.usageMonth.next.start))
        }
        return .admitted(
            Ticket(
                plan: plan, accountMonth: accountMonth, accountID: caller.account.id, appID: caller.app.id,
                endpoint: endpoint, day: day))
    }

    /// Ends an admitted call: counts it when `status` is a verdict (see ``UsageOutcome/init(status:)``), or only
    /// releases its reservation. `status` is nil when the call failed before an answer was made.
    public func settle(_ ticket: Ticket, status: Int?) {
        let key = status.flatMap(UsageOutcome.init(status:)).map { outcome in
            UsageKey(
                accountID: ticket.accountID, appID: ticket.appID, endpoint: ticket.endpoint, outcome: outcome,
                day: ticket.day)
        }
        meter.settle(ticket.accountMonth, counting: key)
    }

    private func read(_ accountMonth: Meter.AccountMonth) async throws -> (AccountStanding?, Meter.ReadMark) {
        let mark = meter.beginRead(accountMonth)
        let standing = try await store.standing(accountID: accountMonth.accountID, month: accountMonth.month)
        return (standing, mark)
    }
}
