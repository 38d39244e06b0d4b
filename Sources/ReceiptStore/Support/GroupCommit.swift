import Foundation
import ReceiptCore
import ReceiptService
import Synchronization

/// Group commit, for both stores: while a group's transaction runs, the members that arrive wait, and the next
/// transaction takes all of them (up to ``maximumGroup``). A commit (on PostgreSQL, its flush to disk) and the
/// statements around it are shared by the group. If the group's transaction fails, each member is committed in a
/// transaction of its own, so one member's failure (a `refuse` conflict, a deadlock with another server) is its own
/// only. Ledger recordings (``LedgerGroupCommit``) and notifications go through one each.
final class GroupCommit<Member: Sendable, Result: Sendable>: Sendable {
    /// A member's result, and whether its commit changed existing rows (to be announced).
    typealias Outcome = (result: Result, changed: Bool)

    /// How a store commits a group and a single member, and announces a change after a commit.
    struct Committer: Sendable {
        /// Commits a group in one transaction; the outcomes in the group's order.
        var group: @Sendable ([Member]) async throws -> [Outcome]
        /// Commits one member in a transaction of its own.
        var alone: @Sendable (Member) async throws -> Outcome
        /// Called after a commit that changed existing rows.
        var announceChange: @Sendable () -> Void
    }

    /// The most members one group commits.
    let maximumGroup: Int
    /// The most members that may wait; past it a member is refused at once (the database is not keeping up).
    let maximumWaiting: Int
    /// What the members are, for the refusal's message.
    let what: String
    /// Where the commits run (the store's own thread), if not on the global executor.
    let executor: (any TaskExecutor)?

    private struct Queue {
        var pending: [(id: Int, member: Member, waiter: CheckedContinuation<Result, any Error>)] = []
        var isCommitting = false
        var nextID = 0
    }

    private let queue = Mutex(Queue())

    init(_ what: String, on executor: (any TaskExecutor)?, maximumGroup: Int = 64, maximumWaiting: Int = 4_096) {
        self.what = what
        self.executor = executor
        self.maximumGroup = maximumGroup
        self.maximumWaiting = maximumWaiting
    }

    /// How many members wait for the next group (for tests that arrange a group).
    var waitingCount: Int { queue.withLock { $0.pending.count } }

    /// Commits `member` with the next group, or at once in a transaction of its own when `alone`.
    ///
    /// A caller that gives up (its task cancelled: the database deadline passed) while its member still waits takes
    /// it out of the queue, so nothing is committed behind the 503 it answers. Every caller of one instance passes
    /// the same committer.
    func commit(_ member: Member, alone: Bool = false, with committer: Committer) async throws -> Result {
        if alone {
            let outcome = try await committer.alone(member)
            if outcome.changed { committer.announceChange() }
            return outcome.result
        }
        let id = queue.withLock { queue in
            defer { queue.nextID += 1 }
            return queue.nextID
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                guard !Task.isCancelled else { return continuation.resume(throwing: CancellationError()) }
                let start = queue.withLock { queue -> Bool? in
                    guard queue.pending.count < maximumWaiting else { return nil }
                    queue.pending.append((id, member, continuation))
                    defer { queue.isCommitting = true }
                    return !queue.isCommitting
                }
                switch start {
                case nil:
                    continuation.resume(
                        throwing: ServiceError(.unavailable, "\(maximumWaiting) \(what) are waiting"))
                case true?:
                    Task(executorPreference: executor) { await self.commitGroups(with: committer) }
                case false?:
                    break
                }
            }
        } onCancel: {
            let waiter = queue.withLock { queue in
                queue.pending.firstIndex { $0.id == id }.map { queue.pending.remove(at: $0).waiter }
            }
            waiter?.resume(throwing: CancellationError())
        }
    }

    /// Commits the waiting members, group after group, until none waits.
    private func commitGroups(with committer: Committer) async {
        while true {
            let group = queue.withLock { queue in
                let group = Array(queue.pending.prefix(maximumGroup))
                queue.pending.removeFirst(group.count)
                if group.isEmpty { queue.isCommitting = false }
                return group
            }
            guard !group.isEmpty else { return }
            do {
                let outcomes = try await committer.group(group.map(\.member))
                // One outcome per member, or none is trusted: each is then committed alone.
                guard outcomes.count == group.count else {
                    throw ServiceError(.storage, "a group of \(group.count) \(what) gave \(outcomes.count) outcomes")
                }
                if outcomes.contains(where: \.changed) { committer.announceChange() }
                for (member, outcome) in zip(group, outcomes) {
                    member.waiter.resume(returning: outcome.result)
                }
            } catch {
                for (_, member, continuation) in group {
                    do {
                        let outcome = try await committer.alone(member)
                        if outcome.changed { committer.announceChange() }
                        continuation.resume(returning: outcome.result)
                    } catch {
                        continuation.resume(throwing: error)
                    }
                }
            }
        }
    }
}

/// The group commit of ledger recordings. A recording that moves or refuses claims is committed alone: a refusal
/// fails its transaction, which would send a whole group back to one-by-one.
typealias LedgerGroupCommit = GroupCommit<LedgerRecording, [LedgerRecorded]>

extension LedgerGroupCommit {
    /// The group commit of ledger recordings, run on `executor`.
    convenience init(on executor: (any TaskExecutor)?) { self.init("ledger recordings", on: executor) }

    /// Records `recording` with the next group (or alone, when it moves or refuses claims).
    func record(_ recording: LedgerRecording, on store: some GroupCommittingStore) async throws -> [LedgerRecorded] {
        try await commit(
            recording, alone: recording.movesClaims || recording.refusesOtherUsers,
            with: Committer(
                group: { try await store.commitLedgerGroup($0) }, alone: { try await store.commitLedgerRecording($0) },
                announceChange: { store.announceLedgerChange() }))
    }
}

/// A store whose ledger recordings go through a ``LedgerGroupCommit``.
protocol GroupCommittingStore: Sendable {
    /// Records a group in one transaction; the outcomes in the group's order.
    func commitLedgerGroup(_ recordings: [LedgerRecording]) async throws -> [LedgerGroupCommit.Outcome]
    /// Records one recording in a transaction of its own.
    func commitLedgerRecording(_ recording: LedgerRecording) async throws -> LedgerGroupCommit.Outcome
    /// Called after a commit that changed existing rows.
    func announceLedgerChange()
}
