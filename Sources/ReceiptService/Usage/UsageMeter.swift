import Foundation
import Synchronization

/// This server's billable-call counts: counted in memory, written to the store in batches by ``flush(to:)``, and
/// reserved against the monthly quota so that one server never lets an account past it.
///
/// A quota decision adds three things: the month's calls the store holds (every server's flushed counts), this
/// server's counts the store does not hold yet, and calls admitted here that are still running. The second needs
/// care around a flush: a store read that overlaps a flush cannot tell whether the flushed counts are in it, so
/// ``beginRead(_:)``/``readWasClean(_:)`` let the caller detect that and read again, and the count assumed to be
/// in the store is always the lower bound (the total committed when the read began), so a decision errs towards
/// refusing, never towards letting a call past the quota.
public final class UsageMeter: Sendable {
    /// One account's month: the unit a quota is counted in and a monthly total is stored under.
    public struct AccountMonth: Sendable, Hashable, Comparable {
        /// The account.
        public let accountID: UUID
        /// The UTC month.
        public let month: UsageMonth

        /// Creates one.
        public init(accountID: UUID, month: UsageMonth) {
            self.accountID = accountID
            self.month = month
        }

        /// The order a flush writes monthly totals in, for the same reason as ``UsageKey``'s order.
        public static func < (lhs: AccountMonth, rhs: AccountMonth) -> Bool {
            (lhs.accountID.uuidString, lhs.month) < (rhs.accountID.uuidString, rhs.month)
        }
    }

    /// Where a store read started, for ``readWasClean(_:)`` and ``reserve(_:stored:since:quota:)``.
    public struct ReadMark: Sendable {
        let flushesStarted: UInt64
        let flushInProgress: Bool
        /// This server's counts of the account's month known to be committed when the read began.
        let committed: Int
    }

    private struct Totals {
        /// Billable calls counted here (flushed or not).
        var counted = 0
        /// Of those, the ones a flush has committed.
        var committed = 0
        /// Calls admitted and still running.
        var reserved = 0
        /// Calls the store's quota grant still lets this server admit (beyond those it counted or is running).
        var grantRemaining = 0
        /// Until when the grant may be used: a margin before it lapses in the store.
        var grantValidUntil: ContinuousClock.Instant?
    }

    /// The outcome of ``reserve(_:stored:since:quota:grantsAt:)``.
    public enum Reservation: Sendable, Equatable {
        /// The call may run; `fromGrant` says whether it took a unit of the quota grant (given back if it ends
        /// unbilled).
        case admitted(fromGrant: Bool)
        /// The month's quota is used up.
        case quotaUsedUp
        /// The call needs a unit of a quota grant and this server holds none that is still valid: claim one, then
        /// try again.
        case needsGrant
    }

    private struct State {
        var pending: [UsageKey: Int] = [:]
        var flushing: [UsageKey: Int] = [:]
        var flushInProgress = false
        var flushesStarted: UInt64 = 0
        var totals: [AccountMonth: Totals] = [:]
    }

    private let state = Mutex(State())

    /// Creates an empty meter.
    public init() {}

    /// Marks the start of a read of the account's month from the store.
    public func beginRead(_ accountMonth: AccountMonth) -> ReadMark {
        state.withLock { state in
            ReadMark(
                flushesStarted: state.flushesStarted, flushInProgress: state.flushInProgress,
                committed: state.totals[accountMonth]?.committed ?? 0)
        }
    }

    /// Whether no flush ran while the read marked by `mark` was in flight, so the store's count includes exactly
    /// this server's counts committed before it.
    public func readWasClean(_ mark: ReadMark) -> Bool {
        guard !mark.flushInProgress else { return false }
        return state.withLock { $0.flushesStarted == mark.flushesStarted && !$0.flushInProgress }
    }

    /// Reserves one call against `quota` (nil: unlimited) and returns true, or returns false when the account's
    /// month is used up: `stored` calls in the store as read after `mark`, plus this server's counts not committed
    /// by then, plus calls still running.
    public func reserve(_ accountMonth: AccountMonth, stored: Int, since mark: ReadMark, quota: Int?) -> Bool {
        reserve(accountMonth, stored: stored, since: mark, quota: quota, grantsAt: nil) != .quotaUsedUp
    }

    /// Like ``reserve(_:stored:since:quota:)``; with `now`, a finite quota also takes one unit of this server's
    /// quota grant (valid at `now`), so that the calls of every server together stay within the quota.
    public func reserve(
        _ accountMonth: AccountMonth, stored: Int, since mark: ReadMark, quota: Int?,
        grantsAt now: ContinuousClock.Instant?
    ) -> Reservation {
        state.withLock { state in
            var totals = state.totals[accountMonth] ?? Totals()
            var fromGrant = false
            if let quota {
                let unstored = totals.counted - mark.committed
                guard stored + unstored + totals.reserved < quota else { return .quotaUsedUp }
                if let now {
                    guard let validUntil = totals.grantValidUntil, validUntil > now, totals.grantRemaining > 0 else {
                        return .needsGrant
                    }
                    totals.grantRemaining -= 1
                    fromGrant = true
                }
            }
            totals.reserved += 1
            state.totals[accountMonth] = totals
            return .admitted(fromGrant: fromGrant)
        }
    }

    /// Calls of the account's month that this server counted but has not stored, and calls it is running (what its
    /// grant in the store must keep covering), with the calls its flushes are known to have stored.
    public func holding(_ accountMonth: AccountMonth) -> (holding: Int, flushed: Int) {
        state.withLock { state in
            guard let totals = state.totals[accountMonth] else { return (0, 0) }
            return (totals.counted - totals.committed + totals.reserved, totals.committed)
        }
    }

    /// Records a new grant of the account's month: `remaining` more calls, usable until `validUntil`.
    public func setGrant(_ accountMonth: AccountMonth, remaining: Int, validUntil: ContinuousClock.Instant) {
        state.withLock { state in
            var totals = state.totals[accountMonth] ?? Totals()
            totals.grantRemaining = remaining
            totals.grantValidUntil = validUntil
            state.totals[accountMonth] = totals
        }
    }

    /// Ends a reservation: counts the call under `key` when it was billable, or just releases it (and gives its
    /// unit back to the grant it came from).
    public func settle(_ accountMonth: AccountMonth, counting key: UsageKey?, returningGrant: Bool = false) {
        state.withLock { state in
            var totals = state.totals[accountMonth] ?? Totals()
            totals.reserved = max(0, totals.reserved - 1)
            if let key {
                totals.counted += 1
                state.pending[key, default: 0] += 1
            } else if returningGrant {
                totals.grantRemaining += 1
            }
            state.totals[accountMonth] = totals
        }
    }

    /// Counts not yet written: those no flush has taken, and those of a flush the store has not confirmed (a flush
    /// whose caller gave up at its deadline still holds its counts until the store answers).
    public var unflushedCalls: Int {
        state.withLock { $0.pending.values.reduce(0, +) + $0.flushing.values.reduce(0, +) }
    }

    /// ``unflushedCalls`` by account.
    public var unflushedCallsByAccount: [UUID: Int] {
        state.withLock { state in
            var calls: [UUID: Int] = [:]
            for (key, count) in state.pending { calls[key.accountID, default: 0] += count }
            for (key, count) in state.flushing { calls[key.accountID, default: 0] += count }
            return calls
        }
    }

    /// Whether a flush is running (begun and not yet answered by the store).
    public var isFlushing: Bool { state.withLock { $0.flushInProgress } }

    /// Writes everything counted so far with one ``UsageStore/addUsage(_:)``; on failure the counts stay here for
    /// the next flush. Returns how many calls were written; a call while another flush runs writes nothing.
    @discardableResult
    ///
    /// With `grants`, the flush also moves the written calls out of this server's quota grants in the store and
    /// renews them; a grant of a month it wrote that was still valid when the flush started (so still in the store)
    /// stays usable here until `grants.validUntil`.
    public func flush(
        to store: any UsageStore, now: Date,
        grants: (renewal: GrantRenewal, startedAt: ContinuousClock.Instant, validUntil: ContinuousClock.Instant)? = nil
    ) async throws -> Int {
        let taken: [UsageKey: Int]? = state.withLock { state in
            guard !state.flushInProgress else { return nil }
            state.flushInProgress = true
            state.flushesStarted += 1
            state.flushing = state.pending
            state.pending = [:]
            return state.flushing
        }
        guard let batch = taken else { return 0 }
        do {
            try await store.addUsage(batch, grants: grants?.renewal)
        } catch {
            state.withLock { state in
                for (key, calls) in state.flushing { state.pending[key, default: 0] += calls }
                state.flushing = [:]
                state.flushInProgress = false
            }
            throw error
        }
        let currentMonth = UsageMonth(containing: now)
        return state.withLock { state in
            var written = 0
            for (key, calls) in state.flushing {
                state.totals[key.accountMonth, default: Totals()].committed += calls
                written += calls
                if let grants, let until = state.totals[key.accountMonth]?.grantValidUntil, until > grants.startedAt {
                    state.totals[key.accountMonth]?.grantValidUntil = grants.validUntil
                }
            }
            state.flushing = [:]
            state.flushInProgress = false
            // Past months are settled in the store; forget them once nothing of theirs is running or unwritten.
            state.totals = state.totals.filter { entry in
                entry.key.month >= currentMonth || entry.value.reserved > 0
                    || entry.value.counted > entry.value.committed
            }
            return written
        }
    }
}
