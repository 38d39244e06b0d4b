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
