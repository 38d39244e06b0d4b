import Foundation
import Synchronization

/// What a plan allows, enforced call by call: the account's current standing, the endpoint gate, the rate limit and
/// the monthly quota before a verification, and the metering after it.
///
/// The account's standing (enabled flag, plan, the month's flushed count) comes from one indexed read of the store.
/// A read is reused only while the store's ``StoreLifecycle/changeMarker()`` is unchanged (a count of the plan and
/// account changes every process announces: SQLite appends to a change file, PostgreSQL sends a notification, heard on
/// a connection kept listening) and for at most ``standingMaxAge``, which bounds how old other servers' counts may
/// be. So a plan or account change made with the CLI applies to the next call on every server (on PostgreSQL, once
/// its notification has arrived), and a busy account costs no database round trip per call.
///
/// A finite quota is shared by all servers through quota grants claimed from the store (``QuotaClaim``): a call
/// takes a unit of this server's grant, so the servers together never answer more verdicts than the quota.
public struct UsageGate: Sendable {
    /// The store the standing is read from and the meter flushes to.
    public let store: any UsageStore
    /// This server's counts.
    public let meter: UsageMeter
    /// This server's rate limits.
    public let rateLimiter: RateLimiter<UUID>
    /// The time limit on the standing's read and on quota claims.
    public let deadline: StoreDeadline
    /// How this server holds quota grants, so that every server together stays within each finite quota.
    public let grants: QuotaGrantPolicy
    /// The wall clock, for days and months (UTC).
    public let now: @Sendable () -> Date
    /// How long a standing read may be reused while the store reports no change.
    public let standingMaxAge: Duration

    private let cache: StandingCache
    /// The quota claim running for each account's month: one at a time per month on this server.
    private let claims = RunningClaims()

    /// Store reads that overlapped a flush are retried this many times before the conservative count is used.
    static let cleanReadAttempts = 3

    /// Creates a gate.
    public init(
        store: any UsageStore, meter: UsageMeter = UsageMeter(), rateLimiter: RateLimiter<UUID> = RateLimiter(),
        standingMaxAge: Duration = .seconds(1), deadline: StoreDeadline = StoreDeadline(nil),
        grants: QuotaGrantPolicy = QuotaGrantPolicy(), now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.store = store
        self.deadline = deadline
        self.grants = grants
        self.meter = meter
        self.rateLimiter = rateLimiter
        self.standingMaxAge = standingMaxAge
        self.now = now
        self.cache = StandingCache()
    }

    /// A call let through: settle it with ``settle(_:status:)`` whatever happens next.
    public struct Ticket: Sendable {
        let accountID: UUID
        let appID: UUID
        let endpoint: UsageEndpoint
        let day: UsageDay
        /// Whether the call took a unit of this server's quota grant (given back if it ends unbilled).
        let fromGrant: Bool
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
        /// Let through, with a reservation against the quota.
        case admitted(Ticket)
        /// Refused before verification; nothing reserved or counted.
        case refused(Refusal)
    }

    /// Checks the caller's account against its plan for one call to `endpoint` and reserves it against the quota.
    public func admit(_ caller: Caller, to endpoint: UsageEndpoint) async throws -> Admission {
        let date = now()
        let day = UsageDay(containing: date)
        let accountMonth = UsageMeter.AccountMonth(accountID: caller.account.id, month: day.usageMonth)
        let (standing, mark) = try await standing(of: accountMonth)
        guard let standing, standing.isEnabled else { return .refused(.accountDisabled) }
        let plan = standing.plan
        if endpoint == .apiEncrypted, !plan.includesEncryptedEndpoint {
            return .refused(.notInPlan(plan: plan.name))
        }
        if let wait = rateLimiter.acquire(caller.account.id, rate: plan.rateLimitPerSecond, now: .now) {
            return .refused(.rateLimited(plan: plan.name, perSecond: plan.rateLimitPerSecond, retryAfter: wait))
        }
        let exhausted = Refusal.quotaExhausted(
            plan: plan.name, quota: plan.monthlyQuota ?? 0, resetsAt: day.usageMonth.next.start)
        // A finite quota is shared by every server through grants claimed from the store; a claim answers for all
        // calls of this server waiting on it, and is repeated while other calls took what it granted.
        for _ in 0..<Self.claimRounds {
            switch meter.reserve(
                accountMonth, stored: standing.monthCalls, since: mark, quota: plan.monthlyQuota, grantsAt: .now)
            {
            case .admitted(let fromGrant):
                return .admitted(
                    Ticket(
                        accountID: caller.account.id, appID: caller.app.id, endpoint: endpoint, day: day,
                        fromGrant: fromGrant))
            case .quotaUsedUp:
                return .refused(exhausted)
            case .needsGrant:
                let granted = try await claimGrant(
                    accountMonth, quota: plan.monthlyQuota ?? 0, maximum: max(1, plan.rateLimitPerSecond))
                if granted == 0 { return .refused(exhausted) }
            }
        }
        return .refused(exhausted)
    }

    /// Claims this server tries per call before it answers that the quota is used up.
    static let claimRounds = 8

    /// Claims a grant of the account's month from the store (or waits for the claim already running), records it in
    /// the meter, and returns the calls granted.
    private func claimGrant(_ accountMonth: UsageMeter.AccountMonth, quota: Int, maximum: Int) async throws -> Int {
        let task: Task<Int, any Error> = claims.running.withLock { running in
            if let claim = running[accountMonth] { return claim }
            let claim = Task { [self] in
                defer { _ = claims.running.withLock { $0.removeValue(forKey: accountMonth) } }
                let instant = ContinuousClock.now
                let date = now()
                let (holding, flushed) = meter.holding(accountMonth)
                let claim = QuotaClaim(
                    accountMonth: accountMonth, server: grants.server, quota: quota, holding: holding,
                    flushed: flushed, maximumGrant: maximum, expiresAt: grants.expiry(from: date))
                let granted = try await deadline.run("a quota claim") { [store] in
                    try await store.claimQuota(claim, now: date)
                }
                meter.setGrant(accountMonth, remaining: granted, validUntil: grants.validity(from: instant))
                return granted
            }
            running[accountMonth] = claim
            return claim
        }
        return try await task.value
    }

    /// Ends an admitted call: counts it when `status` is a verdict (see ``UsageOutcome/init(status:)``), or only
    /// releases its reservation. `status` is nil when the call failed before an answer was made.
    public func settle(_ ticket: Ticket, status: Int?) {
        let key = status.flatMap(UsageOutcome.init(status:)).map { outcome in
            UsageKey(
                accountID: ticket.accountID, appID: ticket.appID, endpoint: ticket.endpoint, outcome: outcome,
                day: ticket.day)
        }
        meter.settle(
            UsageMeter.AccountMonth(accountID: ticket.accountID, month: ticket.day.usageMonth), counting: key,
            returningGrant: ticket.fromGrant)
    }

    /// The account's standing, reused from an earlier read when nothing can have changed since.
    ///
    /// A reused read keeps its ``UsageMeter/ReadMark``: the counts it holds are still exactly the ones committed before it,
    /// so the meter's arithmetic stays exact. Only reads that no flush overlapped are kept.
    private func standing(of accountMonth: UsageMeter.AccountMonth) async throws -> (
        AccountStanding?, UsageMeter.ReadMark
    ) {
        // Taken before the read: a change committed while it runs moves the marker, so the read is not reused.
        let marker = store.changeMarker()
        let instant = ContinuousClock.now
        if let marker, let cached = cache.entry(for: accountMonth, marker: marker, notBefore: instant - standingMaxAge)
        {
            return (cached.standing, cached.mark)
        }
        var (standing, mark) = try await read(accountMonth)
        for _ in 1..<Self.cleanReadAttempts where !meter.readWasClean(mark) {
            (standing, mark) = try await read(accountMonth)
        }
        if let marker, let standing, meter.readWasClean(mark) {
            cache.store(
                StandingCache.Entry(standing: standing, mark: mark, marker: marker, readAt: instant), for: accountMonth)
        }
        return (standing, mark)
    }

    private func read(_ accountMonth: UsageMeter.AccountMonth) async throws -> (AccountStanding?, UsageMeter.ReadMark) {
        let mark = meter.beginRead(accountMonth)
        let standing = try await deadline.run("the account's standing") { [store] in
            try await store.standing(accountID: accountMonth.accountID, month: accountMonth.month)
        }
        return (standing, mark)
    }
}

/// The quota claims in flight, by account and month.
private final class RunningClaims: Sendable {
    let running = Mutex<[UsageMeter.AccountMonth: Task<Int, any Error>]>([:])
}

/// Standing reads by account and month, each with the store's change marker it was read under.
private final class StandingCache: Sendable {
    struct Entry: Sendable {
        let standing: AccountStanding
        let mark: UsageMeter.ReadMark
        let marker: Int
        let readAt: ContinuousClock.Instant
    }

    /// Entries kept at most; the cache is emptied when it would grow beyond this.
    static let capacity = 100_000

    private let entries = Mutex<[UsageMeter.AccountMonth: Entry]>([:])

    func entry(for key: UsageMeter.AccountMonth, marker: Int, notBefore: ContinuousClock.Instant) -> Entry? {
        entries.withLock { entries in
            guard let entry = entries[key], entry.marker == marker, entry.readAt >= notBefore else { return nil }
            return entry
        }
    }

    func store(_ entry: Entry, for key: UsageMeter.AccountMonth) {
        entries.withLock { entries in
            if entries.count >= Self.capacity { entries.removeAll(keepingCapacity: true) }
            entries[key] = entry
        }
    }
}
