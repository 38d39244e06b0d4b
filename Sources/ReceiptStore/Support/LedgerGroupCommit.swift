import Foundation
import ReceiptCore
import ReceiptService
import Synchronization

/// Group commit of ledger recordings, for both stores: while a group's transaction runs, the recordings that arrive
/// wait, and the next transaction takes all of them (up to ``maximumGroup``). A commit (on PostgreSQL, its flush to
/// disk) and the statements around it are shared by the group. If the group's transaction fails, each member is
/// recorded in a transaction of its own, so one member's failure (a `refuse` conflict, a deadlock with another
/// server) is its own only.
final class LedgerGroupCommit: Sendable {
    typealias Outcome = (results: [LedgerRecorded], changed: Bool)

    /// The most recordings one group commits.
    static let maximumGroup = 64

    /// The most recordings that may wait; past it a recording is refused at once (the database is not keeping up).
    static let maximumWaiting = 4_096

    private struct Queue {
        var pending: [(id: Int, recording: LedgerRecording, waiter: CheckedContinuation<[LedgerRecorded], any Error>)] =
            []
        var isCommitting = false
        var nextID = 0
    }

    private let queue = Mutex(Queue())

    /// Records `recording` with the next group.
    ///
    /// A recording that moves or refuses claims is committed alone: a refusal fails its transaction, which would send a
    /// whole group back to one-by-one. A caller that gives up (its task cancelled: the database deadline passed) while
    /// its recording still waits takes it out of the queue, so nothing is recorded behind the 503 it answers.
    func record(_ recording: LedgerRecording, on store: some GroupCommittingStore) async throws -> [LedgerRecorded] {
        if recording.movesClaims || recording.refusesOtherUsers {
            let outcome = try await store.commitLedgerRecording(recording)
            if outcome.changed { store.announceLedgerChange() }
            return outcome.results
        }
        let id = queue.withLock { queue in
            defer { queue.nextID += 1 }
            return queue.nextID
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                guard !Task.isCancelled else { return continuation.resume(throwing: CancellationError()) }
                let start = queue.withLock { queue -> Bool? in
                    guard queue.pending.count < Self.maximumWaiting else { return nil }
                    queue.pending.append((id, recording, continuation))
                    defer { queue.isCommitting = true }
                    return !queue.isCommitting
                }
                switch start {
                case nil:
                    continuation.resume(
                        throwing: ServiceError(.unavailable, "\(Self.maximumWaiting) ledger recordings are waiting"))
                case true?:
                    Task { await self.commitGroups(on: store) }
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

    /// Commits the waiting recordings, group after group, until none waits.
    private func commitGroups(on store: some GroupCommittingStore) async {
        while true {
            let group = queue.withLock { queue in
                let group = Array(queue.pending.prefix(Self.maximumGroup))
                queue.pending.removeFirst(group.count)
                if group.isEmpty { queue.isCommitting = false }
                return group
            }
            guard !group.isEmpty else { return }
            do {
                let outcomes = try await store.commitLedgerGroup(group.map(\.recording))
                if outcomes.contains(where: \.changed) { store.announceLedgerChange() }
                for (member, outcome) in zip(group, outcomes) {
                    member.waiter.resume(returning: outcome.results)
                }
            } catch {
                for (_, recording, continuation) in group {
                    do {
                        let outcome = try await store.commitLedgerRecording(recording)
                        if outcome.changed { store.announceLedgerChange() }
                        continuation.resume(returning: outcome.results)
                    } catch {
                        continuation.resume(throwing: error)
                    }
                }
            }
        }
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

extension LedgerRecorder {
    /// The outcomes of `recordings` (none moves or refuses claims: ``LedgerGroupCommit`` commits those alone), in
    /// their order, inside one transaction: a few statements per app and environment (``recordGroup(_:with:)``).
    /// `writer` gives the writer of an app and environment.
    static func recordTogether<Writer: LedgerWriting>(
        _ recordings: [LedgerRecording], writer: (LedgerRecording) -> Writer
    ) async throws -> [LedgerGroupCommit.Outcome] {
        var outcomes = [LedgerGroupCommit.Outcome?](repeating: nil, count: recordings.count)
        var byLedger: [String: [Int]] = [:]
        for (index, recording) in recordings.enumerated() {
            byLedger["\(recording.appID) \(recording.environment.rawValue)", default: []].append(index)
        }
        // Apps and environments in a fixed order, so two servers' groups take their locks in one order.
        for key in byLedger.keys.sorted() {
            let indexes = byLedger[key] ?? []
            let members = indexes.map { recordings[$0] }
            let ledgerWriter = writer(members[0])
            let together = try await recordGroup(members, with: ledgerWriter)
            try await ledgerWriter.insertLedgerEvents(
                zip(members, together).flatMap { recording, outcome in events(of: recording, outcome.results) })
            for (index, outcome) in zip(indexes, together) { outcomes[index] = outcome }
        }
        return outcomes.map { $0 ?? ([], false) }
    }
}
