import Foundation
import ReceiptService

/// A flush's counts in the order both stores write them: daily counters sorted by key, then the monthly totals they
/// add up to, sorted by account and month. One order for every server means row locks are always taken in the same
/// order, so two servers flushing at once wait for each other instead of deadlocking.
struct UsageBatch {
    let daily: [(key: UsageKey, calls: Int)]
    let monthly: [(key: UsageMeter.AccountMonth, calls: Int)]

    init(_ counts: [UsageKey: Int]) {
        let positive = counts.filter { $0.value > 0 }
        daily = positive.map { (key: $0.key, calls: $0.value) }.sorted { $0.key < $1.key }
        var monthly: [UsageMeter.AccountMonth: Int] = [:]
        for (key, calls) in positive {
            monthly[key.accountMonth, default: 0] += calls
        }
        self.monthly = monthly.map { (key: $0.key, calls: $0.value) }.sorted { $0.key < $1.key }
    }
}
