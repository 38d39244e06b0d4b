import Foundation

/// When work that failed is tried again (a webhook delivery, Apple's Finish Transaction of a confirmed delivery):
/// `first` after the first failure (jittered by ±20 %), the wait doubling up to six hours between attempts, until `giveUpAfter` has
/// passed since the work began (72 hours by default), when it fails for good.
public struct RetryPolicy: Sendable, Equatable {
    /// The wait after the first failure.
    public var first: Duration
    /// How long after the work began it is tried.
    public var giveUpAfter: Duration
    /// The longest wait between two attempts, in seconds.
    public var longestWait: Double

    /// Creates a policy.
    public init(
        first: Duration, giveUpAfter: Duration = .seconds(72 * 3_600), longestWait: Double = Self.longestWait
    ) {
        self.first = first
        self.giveUpAfter = giveUpAfter
        self.longestWait = longestWait
    }

    /// The longest wait between two attempts, by default.
    public static let longestWait: Double = 6 * 3_600

    /// When to try again after the `failures`-th failed attempt (from 1) of work begun at `start`; nil when that
    /// would be past ``giveUpAfter``. The wait is jittered to 80–120 % of the doubling one (`jitter` in 0...1 picks
    /// where), so that work that failed together is not tried again in one wave.
    public func nextAttempt(
        afterFailures failures: Int, since start: Date, now: Date, jitter: Double = Double.random(in: 0...1)
    ) -> Date? {
        let firstSeconds = Double(first.components.seconds) + Double(first.components.attoseconds) / 1e18
        let wait = min(longestWait, firstSeconds * pow(2, Double(max(0, min(failures - 1, 30)))))
        let next = now.addingTimeInterval(wait * (0.8 + 0.4 * min(1, max(0, jitter))))
        return next > start.addingTimeInterval(Double(giveUpAfter.components.seconds)) ? nil : next
    }
}
