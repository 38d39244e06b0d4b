import Testing

@testable import ReceiptService

/// The database deadline and a ``CommitClaim``: work the store has begun to commit is waited for past the deadline;
/// work it has not is given up at the deadline, and its claim abandoned so the store never writes it.
@Suite struct StoreDeadlineClaimTests {
    @Test func workTheStoreBeganIsWaitedForPastTheDeadline() async throws {
        let claim = CommitClaim()
        #expect(claim.begin())
        let (release, releaser) = AsyncStream<Void>.makeStream()
        let deadline = StoreDeadline(.milliseconds(20))
        async let result = deadline.run("the ledger", claim: claim) {
            for await _ in release { break }
            return 7
        }
        // Far past the deadline; the claim is the store's, so the caller still waits.
        try await Task.sleep(for: .milliseconds(200))
        releaser.yield()
        #expect(try await result == 7)
        #expect(!claim.abandon())
    }

    @Test func workTheStoreHadNotBegunIsGivenUpAndItsClaimAbandoned() async throws {
        let claim = CommitClaim()
        let deadline = StoreDeadline(.milliseconds(20))
        await #expect(throws: ServiceError(.unavailable)) {
            _ = try await deadline.run("the ledger", claim: claim) {
                try await Task.sleep(for: .seconds(30))
                return 7
            }
        }
        #expect(!claim.begin(), "the store must not write what its caller gave up")
    }
}

extension StoreDeadlineClaimTests {
    /// The deadline's timer abandons the claim, and the store, finding it abandoned, leaves the work out and answers
    /// at once (a group commit answers such a member with no transactions), before the timer decides the race: the
    /// caller must get the timer's 503, never the empty outcome (found by the simulator under load). The work here
    /// abandons the claim itself, standing for a timer that has abandoned it and not yet answered.
    @Test func workWhoseClaimWasAbandonedIsAnsweredUnavailableWhateverItReturned() async throws {
        let claim = CommitClaim()
        let deadline = StoreDeadline(.seconds(30))
        await #expect(throws: ServiceError(.unavailable)) {
            _ = try await deadline.run("the ledger", claim: claim) {
                #expect(claim.abandon())
                #expect(!claim.begin())
                return [Int]()
            }
        }
    }
}
