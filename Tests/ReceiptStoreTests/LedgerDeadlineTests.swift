import Foundation
import Logging
import PostgresNIO
import ReceiptCore
import ReceiptService
import TestSupport
import Testing

@testable import ReceiptStore

/// In `once` mode a delivery is marked only by the answer that says `deliver: true`, whatever the database deadline
/// does: a caller that gave up before its recording was taken leaves nothing written, and a caller whose recording was
/// taken waits for it, also when its group fails and it is recorded alone (docs/api.md, "Transactions: what to
/// deliver").
@Suite struct LedgerDeadlineTests {
    /// Clients retry each request with a growing deadline until it is answered, as a backend retries a 503: every
    /// transaction is answered `deliver: true` exactly once, and the ledger's delivered rows are exactly those. The
    /// app is in `once` as stored; the servers hold it in `once`, or still in `confirm` (their authentication cache,
    /// just after the switch), where an offer is the delivery: before, such an offer was not waited for past the
    /// deadline, and committed behind its 503 (found by the simulator, seed 3017 with switches).
    @Test(arguments: StoreKind.available, [DeliveryMode.once, .confirm])
    func aDeliveryMarkedIsAlwaysAnsweredAcrossDeadlinesAndRetries(kind: StoreKind, held: DeliveryMode) async throws {
        try await LedgerStoreContractTests.withApp(kind) { store, stored in
            #expect(stored.deliveryMode == .once)
            var cached = stored
            cached.deliveryMode = held
            cached.claimsPolicy = .flag
            let app = cached
            // A ledger per deadline, from shorter than a commit takes to far longer (the last, 1.6 s, outlasts the
            // parallel run's load on two shared cores: with 0.4 s last, one client of 48 once had all its attempts time out).
            let ledgers = (0..<16).map { step in
                Ledger(store: store, deadline: StoreDeadline(.microseconds(50 << step)))
            }
            let clients = 48
            let answers = await withTaskGroup(of: (timeouts: Int, delivered: [String]).self) { group in
                for client in 0..<clients {
                    group.addTask {
                        // Two clients present each transaction, of one user.
                        let pair = client / 2
                        let purchases = [
                            LedgerStoreContractTests.purchase("t\(pair)"),
                            LedgerStoreContractTests.purchase("r\(pair)", original: "t\(pair)"),
                        ]
                        var timeouts = 0
                        for (attempt, ledger) in ledgers.enumerated() {
                            do {
                                guard
                                    case .deliver(let entries, _) = try await ledger.decide(
                                        purchases, environment: .production, user: "user\(pair)", app: app,
                                        requestID: "c\(client)a\(attempt)")
                                else { return (timeouts, []) }
                                let delivered = entries.compactMap { entry -> String? in
                                    guard case .object(let object) = entry, object["deliver"] == .bool(true),
                                        case .string(let id)? = object["transaction_id"]
                                    else { return nil }
                                    return id
                                }
                                return (timeouts, delivered)
                            } catch let error as ServiceError where error.code == .unavailable {
                                timeouts += 1
                            } catch {
                                return (timeouts, ["error: \(error)"])
                            }
                        }
                        return (timeouts, ["never answered"])
                    }
                }
                var all: [(timeouts: Int, delivered: [String])] = []
                for await answer in group { all.append(answer) }
                return all
            }
            let delivered = answers.flatMap(\.delivered)
            // Each transaction once, in some answer.
            #expect(delivered.sorted() == (0..<clients / 2).flatMap { ["r\($0)", "t\($0)"] }.sorted())
            let rows = try await store.ledgerEntries(LedgerQuery(appID: app.id, limit: 1_000))
            #expect(Set(rows.filter { $0.deliveredAt != nil }.map(\.transaction.transactionID)) == Set(delivered))
            // (How many attempts gave up depends on the machine's load; on a quiet one, most first attempts do.)
        }
    }

    /// A group that fails sends each member to a transaction of its own. A member the group had taken (as when two
    /// servers' groups deadlock on PostgreSQL after their statements began) is recorded, and its caller can no longer
    /// give it up (its deadline waits for it, `StoreDeadlineClaimTests`); one the group had not taken (as when it
    /// failed before) and whose caller gave up meanwhile is never recorded. The groups are arranged, not timed: the
    /// group before holds the queue until both members wait in it.
    @Test(arguments: StoreKind.available)
    func aFailedGroupsMembersAreRecordedForCallersThatWaitAndNotForThoseThatLeft(kind: StoreKind) async throws {
        try await LedgerStoreContractTests.withApp(kind) { store, app in
            let committing = try #require(store as? any GroupCommittingStore)
            let commit = LedgerGroupCommit(on: nil)
            let (started, starter) = AsyncStream<Void>.makeStream()
            let (release, releaser) = AsyncStream<Void>.makeStream()
            func recording(_ id: String) -> LedgerRecording {
                var recording = LedgerStoreContractTests.recording(app, [LedgerStoreContractTests.purchase(id)])
                recording.commitClaim = CommitClaim()
                return recording
            }
            let taken = recording("taken")
            let left = recording("left")
            let committer = LedgerGroupCommit.Committer(
                group: { members in
                    let ids = members.flatMap { $0.transactions.map(\.transactionID) }
                    guard ids != ["blocker"] else {
                        // The group before: it holds the queue until the test lets it go.
                        starter.yield()
                        for await _ in release { break }
                        return try await committing.commitLedgerGroup(members)
                    }
                    #expect(ids.sorted() == ["left", "taken"])
                    // The group takes one member before it fails; the other's caller gives up meanwhile.
                    #expect(taken.commitClaim?.begin() == true)
                    #expect(taken.commitClaim?.abandon() == false, "a taken member's caller waits for it")
                    #expect(left.commitClaim?.abandon() == true)
                    throw ServiceError(.storage, "deadlock detected")
                },
                alone: { try await committing.commitLedgerRecording($0) }, announceChange: {})
            let blocker = LedgerStoreContractTests.recording(app, [LedgerStoreContractTests.purchase("blocker")])
            async let blocked = commit.commit(blocker, with: committer)
            // Once the blocker's group runs, both members join the next one.
            for await _ in started { break }
            async let first = commit.commit(taken, with: committer)
            let second = Task { try await commit.commit(left, with: committer) }
            while commit.waitingCount < 2 { try await Task.sleep(for: .milliseconds(5)) }
            releaser.yield()
            _ = try await blocked
            #expect(try await first.map(\.deliveredNow) == [true])
            // Its caller is gone; the store refused to write it (each store reports that in its own words).
            await #expect(throws: (any Error).self) { _ = try await second.value }
            let rows = try await store.ledgerEntries(LedgerQuery(appID: app.id, limit: 10))
            #expect(rows.map(\.transaction.transactionID).sorted() == ["blocker", "taken"])
            #expect(rows.allSatisfy { $0.deliveredAt != nil })
        }
    }

    /// Money review M11: a group whose COMMIT landed but whose outcome was lost (the connection dropped during it) is
    /// recorded again member by member; each member's delivery, made by its own request, is still that answer's, not
    /// a `seen` that no answer ever delivered. Another request's recording of the row stays `deliver: false`.
    @Test(arguments: StoreKind.available)
    func aCommitWhoseOutcomeWasLostStillDeliversToItsOwnRequest(kind: StoreKind) async throws {
        try await LedgerStoreContractTests.withApp(kind) { store, app in
            let committing = try #require(store as? any GroupCommittingStore)
            let commit = LedgerGroupCommit(on: nil)
            let committer = LedgerGroupCommit.Committer(
                group: { members in
                    _ = try await committing.commitLedgerGroup(members)
                    throw ServiceError(.storage, "connection closed during COMMIT")
                },
                alone: { try await committing.commitLedgerRecording($0) }, announceChange: {})
            var recording = LedgerStoreContractTests.recording(
                app, [LedgerStoreContractTests.purchase("lost")], user: "alice", request: "req-lost")
            recording.commitClaim = CommitClaim()
            let answered = try await commit.commit(recording, with: committer)
            #expect(answered.map(\.deliveredNow) == [true])
            let again = LedgerStoreContractTests.recording(
                app, [LedgerStoreContractTests.purchase("lost")], user: "alice", at: 1, request: "req-retry")
            #expect(try await store.record(again).map(\.deliveredNow) == [false])
        }
    }

    /// Money review M11: on PostgreSQL a ledger transaction waits for a peer's lock at most the URL's `lock_timeout`
    /// (here 1 s), far below the 60 s a caller waits for a commit that began: the database aborts it, nothing is
    /// written, and the client's retry once the lock is gone is the delivery. Without the bound the recording
    /// commits when the lock goes, under the request that was long answered 503, and the retry says `deliver: false`.
    @Test(.enabled(if: StoreKind.available.contains(.postgres)))
    func aTransactionStuckBehindAPeersLockIsAbortedNotCommittedLate() async throws {
        try await TestPostgres.withDatabase { url in
            let location = StoreLocation.postgres(url: url + (url.contains("?") ? "&" : "?") + "lock_timeout=1")
            var logger = Logger(label: "test")
            logger.logLevel = .critical
            try await location.withStore(logger: logger) { store in
                let postgres = try #require(store as? PostgresStore)
                let account = TenancyStoreContractTests.account()
                try await store.insertAccount(account)
                let app = TenancyStoreContractTests.app(accountID: account.id)
                try await store.insertApp(app)
                let (locked, locker) = AsyncStream<Void>.makeStream()
                let (release, releaser) = AsyncStream<Void>.makeStream()
                // A peer (another server, partitioned mid-transaction) holds the ledger's rows until the test lets
                // go, or for 60 s at most: arranged, not timed, so a loaded machine cannot make the bound look broken.
                let peer = Task {
                    try await postgres.transaction { connection in
                        try await postgres.rows("LOCK TABLE ledger_transactions IN EXCLUSIVE MODE", on: connection)
                        locker.yield()
                        for await _ in release { break }
                    }
                }
                let ceiling = Task {
                    try await Task.sleep(for: .seconds(60))
                    releaser.yield()
                }
                for await _ in locked { break }
                let stuck = LedgerStoreContractTests.recording(
                    app, [LedgerStoreContractTests.purchase("held")], user: "alice", request: "req-503")
                // Without the bound the recording waits for the peer, which lets go only at the ceiling, and then
                // commits: no error.
                await #expect(throws: (any Error).self) { _ = try await store.record(stuck) }
                ceiling.cancel()
                releaser.yield()
                try await peer.value
                #expect(try await store.ledgerEntries(LedgerQuery(appID: app.id, limit: 10)).isEmpty)
                let retry = LedgerStoreContractTests.recording(
                    app, [LedgerStoreContractTests.purchase("held")], user: "alice", at: 1, request: "req-retry")
                #expect(try await store.record(retry).map(\.deliveredNow) == [true])
            }
        }
    }
}
