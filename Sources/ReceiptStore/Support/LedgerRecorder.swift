import Foundation
import ReceiptCore
import ReceiptService

/// The steps a store takes inside one transaction to record an input's transactions, for one app and environment:
/// what differs between the dialects. ``LedgerRecorder`` orders them, once for both stores.
protocol LedgerWriting {
    /// The users holding the claims of these original transactions (sorted, distinct), by original transaction id;
    /// unclaimed ones are absent.
    func claimants(of originalTransactionIDs: [String]) async throws -> [String: String]
    /// Gives the original transaction's claim to `user`.
    func moveClaim(of originalTransactionID: String, to user: String, at date: Date) async throws
    /// Inserts each entry (sorted by transaction id) whose transaction is not yet in the ledger; returns the ids of
    /// those it inserted.
    func insertIfAbsent(_ entries: [LedgerEntry]) async throws -> Set<String>
    /// The stored entries of these transactions, by transaction id (claimants not filled in).
    func entries(transactionIDs: [String]) async throws -> [String: LedgerEntry]
    /// Claims each original transaction of `claims` that has no claimant for its user (the first pair of an original
    /// wins), then returns the claimants of `originals` (sorted, distinct); unclaimed ones are absent.
    func claims(_ claims: [(original: String, user: String)], reading originals: [String], at date: Date)
        async throws -> [String: String]
    /// Marks the transaction delivered at `date` unless it already is; returns whether it did.
    func markDelivered(_ transactionID: String, at date: Date) async throws -> Bool
    /// Sets `last_seen_at`, and the revocation of `revocation` when given.
    func touch(_ transactionID: String, at date: Date, revocation: PurchaseTransaction?) async throws
    /// Inserts the events of ledger changes that some endpoint of their app takes, each with its deliveries (the
    /// others are not kept: without a receiver, the ledger itself is the record).
    func insertLedgerEvents(_ events: [WebhookEvent]) async throws
}

extension LedgerWriting {
    /// The claimants of `originals` after claiming each that had none for `user` (`user` nil: read only).
    func claimants(of originals: [String], claimingFor user: String?, at date: Date) async throws -> [String: String] {
        try await claims(user.map { user in originals.map { ($0, user) } } ?? [], reading: originals, at: date)
    }
}

/// How an input's transactions are recorded (``LedgerStore/record(_:)``), whatever the store.
enum LedgerRecorder {
    /// Records `recording` through `writer`, which runs inside one database transaction. Claims come first (a new
    /// transaction's delivery depends on who holds its original transaction), then each transaction is inserted if
    /// absent. Both go in sorted order, so two servers recording overlapping inputs take their row locks in one order
    /// and cannot deadlock. (A group, ``recordGroup(_:with:)``, sorts its claims and inserts too, but its members'
    /// later updates go member by member: two servers' groups may deadlock, which PostgreSQL breaks by failing one,
    /// whose members are then recorded one by one.) `changed` tells whether an existing row's claim or revocation changed (to be announced).
    static func record(_ recording: LedgerRecording, with writer: some LedgerWriting) async throws
        -> (result: [LedgerRecorded], changed: Bool)
    {
        let originals = recording.originalTransactionIDs.sorted()
        // A refused request leaves no trace: nothing claimed for its user, nothing recorded, nothing delivered. The
        // claims are read before any write (and checked again after claiming, for a claim made in between, which on
        // PostgreSQL rolls back this recording's transaction).
        if recording.refusesOtherUsers, let user = recording.user {
            let holders = try await writer.claimants(of: originals, claimingFor: nil, at: recording.now)
            if holders.values.contains(where: { $0 != user }) { throw refusal }
        }
        var claimants = try await writer.claimants(of: originals, claimingFor: recording.user, at: recording.now)
        var transferredFrom: [String: String] = [:]
        var changed = false
        if let user = recording.user, recording.movesClaims {
            for original in originals {
                guard let current = claimants[original], current != user else { continue }
                try await writer.moveClaim(of: original, to: user, at: recording.now)
                transferredFrom[original] = current
                claimants[original] = user
                changed = true
            }
        }
        if recording.refusesOtherUsers, let user = recording.user, claimants.values.contains(where: { $0 != user }) {
            throw refusal
        }

        var recorded: [String: LedgerRecorded] = [:]
        var existing: [PurchaseTransaction] = []
        let sorted = recording.transactions.sorted(by: { $0.transactionID < $1.transactionID })
        let candidates = sorted.map { recording.newEntry($0, claimant: claimants[$0.originalTransactionID]) }
        let inserted = try await writer.insertIfAbsent(candidates)
        for (transaction, entry) in zip(sorted, candidates) {
            if inserted.contains(transaction.transactionID) {
                recorded[transaction.transactionID] = LedgerRecorded(
                    entry: entry, isNew: true, transferredFrom: transferredFrom[transaction.originalTransactionID],
                    deliveredNow: entry.deliveredAt != nil)
            } else {
                existing.append(transaction)
            }
        }
        let (updated, revoked) = try await recordExisting(
            existing, of: recording, claimants: claimants, transferredFrom: transferredFrom, with: writer)
        recorded.merge(updated) { new, _ in new }
        let results = recording.transactions.compactMap { recorded[$0.transactionID] }
        try await writer.insertLedgerEvents(events(of: recording, results))
        return (results, changed || revoked)
    }

    /// The events of a recording's changes (docs/webhooks.md, "Events"): each new transaction, each revocation
    /// recorded now, and once per original transaction a claim moved to the recording's user or held by another.
    static func events(of recording: LedgerRecording, _ results: [LedgerRecorded]) -> [WebhookEvent] {
        var events: [WebhookEvent] = []
        var claimEvents = Set<String>()
        func add(_ kind: WebhookEvent.Kind, _ data: JSONObject) {
            events.append(
                WebhookEvent(
                    appID: recording.appID, environment: recording.environment, kind: kind, createdAt: recording.now,
                    data: data))
        }
        for result in results {
            let entry = result.entry
            if result.isNew { add(.transactionCreated, entry.json) }
            if result.revokedNow { add(.transactionRevoked, entry.json) }
            guard claimEvents.insert(entry.transaction.originalTransactionID).inserted else { continue }
            if let previous = result.transferredFrom {
                var data = entry.json
                data.append("previous_user", .string(previous))
                add(.claimTransferred, data)
            } else if let user = recording.user, let holder = entry.claimant, holder != user {
                var data = entry.json
                data.append("presented_by", .string(user))
                add(.claimConflict, data)
            }
        }
        return events
    }

    /// The transactions of `recording` already in the ledger: their stored rows with `claimants`, a revocation the
    /// ledger did not know recorded, `last_seen_at` kept, a delivery due made; `changed` tells whether a revocation
    /// was recorded.
    static func recordExisting(
        _ existing: [PurchaseTransaction], of recording: LedgerRecording, claimants: [String: String],
        transferredFrom: [String: String], with writer: some LedgerWriting
    ) async throws -> (recorded: [String: LedgerRecorded], changed: Bool) {
        guard !existing.isEmpty else { return ([:], false) }
        var recorded: [String: LedgerRecorded] = [:]
        var changed = false
        let stored = try await writer.entries(transactionIDs: existing.map(\.transactionID))
        for transaction in existing {
            guard var entry = stored[transaction.transactionID] else {
                throw StoredForm.corrupt("ledger row \(transaction.transactionID) vanished inside its transaction")
            }
            let revokes = entry.transaction.revocationDate == nil && transaction.revocationDate != nil
            if revokes {
                entry.transaction.revocationDate = transaction.revocationDate
                entry.transaction.revocationReason = transaction.revocationReason
                entry.transaction.revocationType = transaction.revocationType
                entry.transaction.revocationPercentage = transaction.revocationPercentage
                changed = true
            }
            entry.claimant = claimants[transaction.originalTransactionID]
            // `last_seen_at` is kept to within ``LedgerRecording/lastSeenPrecision``: a recording that changes
            // nothing then writes nothing, and on SQLite leaves the change marker (and every server's view) alone.
            if revokes || recording.now.timeIntervalSince(entry.lastSeenAt) >= LedgerRecording.lastSeenPrecision {
                entry.lastSeenAt = recording.now
                try await writer.touch(
                    transaction.transactionID, at: recording.now, revocation: revokes ? transaction : nil)
            }
            // Not delivered yet and deliverable now (a renewal first presented by another user, now by its claimant):
            // the conditional update lets exactly one recording deliver it.
            var deliveredNow = false
            if recording.deliversNow(entry),
                try await writer.markDelivered(transaction.transactionID, at: recording.now)
            {
                entry.deliveredAt = recording.now
                deliveredNow = true
            }
            recorded[transaction.transactionID] = LedgerRecorded(
                entry: entry, isNew: false, transferredFrom: transferredFrom[transaction.originalTransactionID],
                deliveredNow: deliveredNow, revokedNow: revokes)
        }
        return (recorded, changed)
    }

    /// Records several recordings in one database transaction with a few statements for all of them: their claims
    /// in one statement, the claimants read in one, every transaction new to the group inserted in one. The result
    /// is what recording them one after another, in order, gives: the first recording with a user claims an
    /// unclaimed original transaction, the first carrying a new transaction finds it new and the later ones seen.
    /// For recordings that neither move claims nor refuse (those go through ``record(_:with:)``), of one app and
    /// environment (the writer's).
    static func recordGroup(_ group: [LedgerRecording], with writer: some LedgerWriting) async throws
        -> [(result: [LedgerRecorded], changed: Bool)]
    {
        guard let first = group.first else { return [] }
        var originals = Set<String>()
        var claims: [(original: String, user: String)] = []
        for recording in group {
            for original in recording.originalTransactionIDs {
                originals.insert(original)
                if let user = recording.user { claims.append((original, user)) }
            }
        }
        let claimants = try await writer.claims(claims, reading: originals.sorted(), at: first.now)

        // Each transaction's first carrier in the group offers its row; the insert keeps those not yet stored.
        var firstCarrier: [String: Int] = [:]
        var candidates: [LedgerEntry] = []
        for (index, recording) in group.enumerated() {
            for transaction in recording.transactions where firstCarrier[transaction.transactionID] == nil {
                firstCarrier[transaction.transactionID] = index
                candidates.append(
                    recording.newEntry(transaction, claimant: claimants[transaction.originalTransactionID]))
            }
        }
        candidates.sort { $0.transaction.transactionID < $1.transaction.transactionID }
        let inserted = try await writer.insertIfAbsent(candidates)
        let offered = Dictionary(candidates.map { ($0.transaction.transactionID, $0) }) { first, _ in first }

        var outcomes: [(result: [LedgerRecorded], changed: Bool)] = []
        for (index, recording) in group.enumerated() {
            var recorded: [String: LedgerRecorded] = [:]
            var existing: [PurchaseTransaction] = []
            for transaction in recording.transactions {
                let id = transaction.transactionID
                if inserted.contains(id), firstCarrier[id] == index, let entry = offered[id] {
                    recorded[id] = LedgerRecorded(
                        entry: entry, isNew: true, transferredFrom: nil, deliveredNow: entry.deliveredAt != nil)
                } else {
                    existing.append(transaction)
                }
            }
            let (updated, changed) = try await recordExisting(
                existing, of: recording, claimants: claimants, transferredFrom: [:], with: writer)
            recorded.merge(updated) { new, _ in new }
            outcomes.append((recording.transactions.compactMap { recorded[$0.transactionID] }, changed))
        }
        return outcomes
    }

    /// Why a `refuse` recording is undone.
    static var refusal: ServiceError {
        ServiceError(.claimedByOtherUser, "a purchase of the input is claimed by another user of the app")
    }
}

extension StoredForm {
    /// A ledger row from `ledger_transactions`' columns and `claimant`, the claim's user joined by the same query.
    static func ledgerEntry(_ row: some StoredRow) throws -> LedgerEntry {
        let transaction = PurchaseTransaction(
            transactionID: try row.text("transaction_id"),
            originalTransactionID: try row.text("original_transaction_id"), productID: try row.text("product_id"),
            purchaseDate: try row.optionalInt("purchase_date").map(Int64.init),
            originalPurchaseDate: try row.optionalInt("original_purchase_date").map(Int64.init),
            expiresDate: try row.optionalInt("expires_date").map(Int64.init), quantity: try row.int("quantity"),
            webOrderLineItemID: try row.optionalText("web_order_line_item_id"),
            inAppOwnershipType: try row.optionalText("ownership_type"),
            revocationDate: try row.optionalInt("revocation_date").map(Int64.init),
            revocationReason: try row.optionalInt("revocation_reason"),
            revocationType: try row.optionalText("revocation_type"),
            revocationPercentage: try row.optionalInt("revocation_percentage"))
        return LedgerEntry(
            appID: try row.uuid("app_id"), environment: try enumValue(try row.text("environment")),
            transaction: transaction, claimant: try row.optionalText("claimant"),
            firstSeenAt: try row.date("first_seen_at"), lastSeenAt: try row.date("last_seen_at"),
            firstRequestID: try row.text("first_request_id"), deliveredAt: try row.optionalDate("delivered_at"),
            appleFinish: try row.optionalText("apple_finish").map { state in
                AppleFinishStatus(
                    state: try enumValue(state), attempts: try row.int("apple_finish_attempts"),
                    lastError: try row.optionalText("apple_finish_error"),
                    finishedAt: try row.optionalDate("apple_finished_at"))
            })
    }

    /// A claimed finish task from its ledger row.
    static func appleFinishTask(_ row: some StoredRow) throws -> AppleFinishTask {
        AppleFinishTask(
            appID: try row.uuid("app_id"), environment: try enumValue(try row.text("environment")),
            transactionID: try row.text("transaction_id"), attempts: try row.int("apple_finish_attempts"),
            confirmedAt: try row.date("delivered_at"))
    }

    /// What an attempt's outcome writes: state, next due time, error.
    static func appleFinishColumns(_ outcome: AppleFinishOutcome) -> (state: String, due: Date?, error: String?) {
        switch outcome {
        case .finished: ("finished", nil, nil)
        case .retry(let next, let error): ("pending", next, String(error.prefix(500)))
        case .failed(let error): ("failed", nil, String(error.prefix(500)))
        }
    }

    /// The select list and join that ``ledgerEntry(_:)`` reads, over `ledger_transactions t`.
    static let ledgerSelect = """
        SELECT t.*, c.app_user_id AS claimant FROM ledger_transactions t LEFT JOIN ledger_claims c
            ON c.app_id = t.app_id AND c.environment = t.environment
            AND c.original_transaction_id = t.original_transaction_id
        """

    /// The most rows one `IN (…)` list binds; longer lists are split.
    static let ledgerChunk = 500
}
