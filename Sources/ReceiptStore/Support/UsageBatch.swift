import Foundation
import ReceiptService

/// A flush's counts in the order both stores write them: daily counters sorted by key, then the monthly totals they
/// add up to, sorted by account and month. One order for every server means row locks are always taken in the same
/// order, so two servers flushing at once wait for each other instead of deadlocking.
struct UsageBatch {
    /// An account's total for one month.
    struct MonthlyKey: Hashable, Comparable {
        let accountID: UUID
        let month: UsageMonth

        static func < (lhs: MonthlyKey, rhs: MonthlyKey) -> Bool {
            (lhs.accountID.uuidString, lhs.month) < (rhs.accountID.uuidString, rhs.month)
        }
    }

    let daily: [(key: UsageKey, calls: Int)]
    let monthly: [(key: MonthlyKey, calls: Int)]

    init(_ counts: [UsageKey: Int]) {
        let positive = counts.filter { $0.value > 0 }
        daily = positive.map { (key: $0.key, calls: $0.value) }.sorted { $0.key < $1.key }
        var monthly: [MonthlyKey: Int] = [:]
        for (key, calls) in positive {
            monthly[MonthlyKey(accountID: key.accountID, month: key.day.usageMonth), default: 0] += calls
        }
        self.monthly = monthly.map { (key: $0.key, calls: $0.value) }.sorted { $0.key < $1.key }
    }
}
