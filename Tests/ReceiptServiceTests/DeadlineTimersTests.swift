import Synchronization
import Testing

@testable import ReceiptService

/// ``DeadlineTimers``: the one table of every database call's limit. A timer fires once, not before its time; a
/// removed one never fires; one due before the sleeping sweeper's wake-up still fires on time; the sweeper stops when
/// no timer waits. Each test uses a table of its own.
@Suite struct DeadlineTimersTests {
    /// Times from a start, in milliseconds, of the timers that fired, by name.
    final class Firings: Sendable {
        private let fired = Mutex<[String: [Double]]>([:])
        let start = ContinuousClock.now

        func fire(_ name: String) {
            let elapsed = ContinuousClock.now - start
            let milliseconds =
                Double(elapsed.components.seconds) * 1_000 + Double(elapsed.components.attoseconds) / 1e15
            fired.withLock { $0[name, default: []].append(milliseconds) }
        }

        subscript(name: String) -> [Double] { fired.withLock { $0[name] ?? [] } }

        /// Waits until `condition` holds, for at most ten seconds (timers fire late on a loaded machine, never early).
        func wait(until condition: () -> Bool) async throws {
            for _ in 0..<1_000 where !condition() { try await Task.sleep(for: .milliseconds(10)) }
        }
    }

    @Test func aTimerFiresOnceNotBeforeItsTimeAndARemovedOneNever() async throws {
        let timers = DeadlineTimers()
        let firings = Firings()
        _ = timers.schedule(after: .milliseconds(50)) { firings.fire("kept") }
        let removed = timers.schedule(after: .milliseconds(30)) { firings.fire("removed") }
        timers.cancel(removed)
        // The removed timer was due first: had it stayed, it would have fired by the time the kept one does.
        try await firings.wait { !firings["kept"].isEmpty }
        try await Task.sleep(for: .milliseconds(50))
        #expect(firings["kept"].count == 1)
        #expect(firings["kept"].allSatisfy { $0 >= 50 })
        #expect(firings["removed"].isEmpty)
        #expect(timers.pending == 0)
    }

    @Test func aTimerDueBeforeTheSweepersWakeUpFiresOnTime() async throws {
        let timers = DeadlineTimers()
        let firings = Firings()
        // The sweeper sleeps towards the first timer, a minute away; the second is due in 40 ms.
        let far = timers.schedule(after: .seconds(60)) { firings.fire("far") }
        _ = timers.schedule(after: .milliseconds(40)) { firings.fire("near") }
        try await firings.wait { !firings["near"].isEmpty }
        // Fired, and long before the minute the sweeper first slept towards.
        #expect(firings["near"].count == 1)
        #expect(firings["near"].allSatisfy { $0 >= 40 && $0 < 30_000 })
        #expect(firings["far"].isEmpty)
        timers.cancel(far)
    }

    @Test func manyTimersWithMixedLimitsEachFireOnceAtTheirTime() async throws {
        let timers = DeadlineTimers()
        let firings = Firings()
        var removed: [UInt64] = []
        // Limits from 1 to 120 ms, scheduled out of order; every third (due a second later, so that it cannot fire
        // before it is removed) removed once all are scheduled.
        func delay(_ index: Int) -> Int { (index * 37) % 120 + 1 + (index % 3 == 0 ? 1_000 : 0) }
        for index in 0..<300 {
            let delay = delay(index)
            let id = timers.schedule(after: .milliseconds(delay)) { firings.fire("t\(index)") }
            if index % 3 == 0 { removed.append(id) }
        }
        for id in removed { timers.cancel(id) }
        try await firings.wait { timers.pending == 0 }
        for index in 0..<300 {
            let delay = Double(delay(index))
            let fired = firings["t\(index)"]
            if index % 3 == 0 {
                #expect(fired.isEmpty, "t\(index) was removed")
            } else {
                #expect(fired.count == 1 && fired[0] >= delay, "t\(index) after \(delay) ms: \(fired)")
            }
        }
    }

    @Test func theSweeperStopsWhenNoTimerWaitsAndStartsAgain() async throws {
        let timers = DeadlineTimers()
        let firings = Firings()
        #expect(!timers.isSweeping)
        let id = timers.schedule(after: .seconds(60)) { firings.fire("removed") }
        #expect(timers.isSweeping)
        timers.cancel(id)
        // The sweeper sleeps until the removed timer's time; another timer replaces it with one that wakes sooner and,
        // finding nothing left after firing it, stops.
        _ = timers.schedule(after: .milliseconds(10)) { firings.fire("next") }
        try await firings.wait { !timers.isSweeping }
        #expect(!timers.isSweeping)
        #expect(firings["next"].count == 1)
        _ = timers.schedule(after: .milliseconds(10)) { firings.fire("again") }
        #expect(timers.isSweeping)
        try await firings.wait { !firings["again"].isEmpty }
        #expect(firings["again"].count == 1)
    }
}
