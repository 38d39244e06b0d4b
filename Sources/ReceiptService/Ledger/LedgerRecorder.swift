import Foundation
import ReceiptCore

/// How an input's transactions are recorded (``LedgerStore/record(_:)``), whatever the store.
public enum LedgerRecorder {
    /// Records `recording` through `writer`, which runs inside one database transaction. Claims come first (a new
    /// transaction's delivery depends on who holds its original transaction), then each transaction is inserted if
    /// absent. Both go in sorted order, so two servers recording overlapping inputs take their row locks in one order
    /// and cannot deadlock. (A group, ``recordGroup(_:with:)``, sorts its claims and inserts too, but its members'
    /// later updates go member by member: two servers' groups may deadlock, which PostgreSQL breaks by failing one,
    /// whose members are then recorded one by one.) `changed` tells whether an existing row's claim or revocation changed (to be announced).
    public static func record(_ input: LedgerRecording, with writer: some LedgerWriting) async throws -> Outcome {
        // Inside the store's transaction: a recording whose caller gave up before it began is not written.
        guard input.commitClaim?.begin() ?? true else { throw CancellationError() }
        guard var recording = try await voided([input], with: writer).first else { return ([], false) }
        if recording.offers, try await writer.deliversOnceAsStored() { recording.deliverAsStored() }
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
        let stated = try await statusEvents(of: [recording], with: writer)
        let told = try await customerEvents(of: [recording], [results], with: writer)
        try await writer.insertLedgerEvents(events(of: recording, results) + stated + told)
        return (results, changed || revoked)
    }

    /// The events of a recording's changes (docs/webhooks.md, "Events"): each new transaction, each revocation
    /// recorded now, and once per original transaction a claim moved to the recording's user or held by another.
    public static func events(of recording: LedgerRecording, _ results: [LedgerRecorded]) -> [WebhookEvent] {
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
            if result.isNew { add(.transactionCreated, entry.eventJSON) }
            if result.revokedNow { add(.transactionRevoked, entry.eventJSON) }
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
                throw ServiceError(.storage, "ledger row \(transaction.transactionID) vanished inside its transaction")
            }
            // A revocation stated by a statement signed before the one that last set or cleared it (an old signed
            // item after `REFUND_REVERSED`) changes nothing; one of unknown date only where none was ever stamped.
            let isCurrent =
                entry.revocationAsOf.map { asOf in transaction.signedDate.map { $0 >= asOf } ?? false } ?? true
            // Not revoked yet, or revoked for a smaller part than now stated (a purchase's second partial refund).
            let stated =
                isCurrent && transaction.revocationDate != nil
                && (entry.transaction.revocationDate == nil
                    || (transaction.revocationPercentage ?? 100_000)
                        > (entry.transaction.revocationPercentage ?? 100_000))
            if stated {
                entry.transaction.takeRevocation(of: transaction)
                entry.revocationAsOf = transaction.signedDate
            }
            entry.claimant = claimants[transaction.originalTransactionID]
            // `last_seen_at` is kept to within ``LedgerRecording/lastSeenPrecision``: a recording that changes
            // nothing then writes nothing, and on SQLite leaves the change marker (and every server's view) alone.
            // Whether this recording revoked the row is the store's word on the row as written: of two servers
            // recording one refund, one announces it (money review M12).
            var revokes = false
            if stated || recording.now.timeIntervalSince(entry.lastSeenAt) >= LedgerRecording.lastSeenPrecision {
                entry.lastSeenAt = recording.now
                revokes = try await writer.touch(
                    transaction.transactionID, at: recording.now, revocation: stated ? transaction : nil)
                changed = changed || revokes
            }
            // Not delivered yet and deliverable now (a renewal first presented by another user, now by its claimant):
            // the conditional update lets exactly one recording deliver it.
            var deliveredNow = false
            let delivers = recording.deliversNow(entry)
            if delivers || recording.settlesNow(entry),
                try await writer.markDelivered(transaction.transactionID, at: recording.now)
            {
                entry.deliveredAt = recording.now
                // One an answer in `confirm` mode offered (a server that held the app so after the switch) was
                // delivered then: taken as delivered now, and not said again (money review M3).
                deliveredNow = delivers
            } else if recording.offersNow(entry) {
                try await writer.markOffered(transaction.transactionID, at: recording.now)
                entry.offeredAt = recording.now
            } else if recording.deliversNew, !entry.isRevoked, entry.firstRequestID == recording.requestID,
                let delivered = entry.deliveredAt?.millisecondsSince1970,
                delivered == entry.firstSeenAt.millisecondsSince1970,
                delivered == recording.now.millisecondsSince1970
            {
                // This very recording (its request id and time) inserted the row delivered, in a commit whose outcome
                // was lost (the connection dropped during COMMIT, and the group is recorded again member by member):
                // it is still this answer's delivery, not a repeat (money review M11).
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
    public static func recordGroup(_ members: [LedgerRecording], with writer: some LedgerWriting) async throws
        -> [Outcome]
    {
        var group = try await voided(members, with: writer)
        guard let first = group.first else { return [] }
        if group.contains(where: \.offers), try await writer.deliversOnceAsStored() {
            for index in group.indices where group[index].offers { group[index].deliverAsStored() }
        }
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

        var outcomes: [Outcome] = []
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

    /// `recordings` with the voids the store listed of their transactions (``LedgerWriting/voids(of:)``): a purchase
    /// voided before the ledger first recorded it is recorded revoked, and never delivered (money review M8).
    static func voided(_ recordings: [LedgerRecording], with writer: some LedgerWriting) async throws
        -> [LedgerRecording]
    {
        let voids = try await writer.voids(of: recordings.flatMap { $0.transactions.map(\.transactionID) })
        guard !voids.isEmpty else { return recordings }
        return recordings.map { recording in
            var recording = recording
            recording.transactions = recording.transactions.map { transaction in
                voids[transaction.transactionID]?.revoking(transaction) ?? transaction
            }
            return recording
        }
    }

    /// Why a `refuse` recording is undone.
    static var refusal: ServiceError {
        ServiceError(.claimedByOtherUser, "a purchase of the input is claimed by another user of the app")
    }
}

extension LedgerRecorder {
    /// A recording's results, and whether it changed an existing row's claim or revocation (to be announced).
    public typealias Outcome = (result: [LedgerRecorded], changed: Bool)

    /// The outcomes of `recordings` (none moves or refuses claims: a store commits those alone, with ``record(_:with:)``), in
    /// their order, inside one transaction: a few statements per app and environment (``recordGroup(_:with:)``).
    /// `writer` gives the writer of an app and environment.
    public static func recordTogether<Writer: LedgerWriting>(
        _ recordings: [LedgerRecording], writer: (LedgerRecording) -> Writer
    ) async throws -> [Outcome] {
        var outcomes = [Outcome?](repeating: nil, count: recordings.count)
        // Inside the store's transaction, the group takes its members (``CommitClaim``); one whose caller gave up
        // before is left out (its outcome, empty, reaches no one). A member taken stays taken if the group fails and
        // is recorded alone.
        let taken = recordings.indices.filter { recordings[$0].commitClaim?.begin() ?? true }
        for ledger in byLedger(taken.map { (recordings[$0].appID, recordings[$0].store, recordings[$0].environment) }) {
            let indexes = ledger.map { taken[$0] }
            let members = indexes.map { recordings[$0] }
            let ledgerWriter = writer(members[0])
            let together = try await recordGroup(members, with: ledgerWriter)
            let stated = try await statusEvents(of: members, with: ledgerWriter)
            let told = try await customerEvents(of: members, together.map(\.result), with: ledgerWriter)
            try await ledgerWriter.insertLedgerEvents(
                zip(members, together).flatMap { recording, outcome in events(of: recording, outcome.result) }
                    + stated + told)
            for (index, outcome) in zip(indexes, together) { outcomes[index] = outcome }
        }
        return outcomes.map { $0 ?? ([], false) }
    }

    /// Writes the statuses that recordings of one app and environment state (``LedgerRecording/statuses``), in their
    /// order, and ends the subscriptions their purchases replaced (Google Play's `linkedPurchaseToken`: an upgrade, a
    /// downgrade or a re-subscription takes over the old token's rights); the `subscription.status_changed` events of
    /// those that changed a state.
    static func statusEvents(of recordings: [LedgerRecording], with writer: some LedgerWriting) async throws
        -> [WebhookEvent]
    {
        var stated = recordings.flatMap { recording in recording.statuses.map { (recording, $0) } }
        for recording in recordings {
            let own = Set(recording.transactions.compactMap(\.purchaseToken))
            // The linked token and, where the ledger did not hold it, the chain before it (money review M16).
            let linked = Set(
                recording.transactions.flatMap {
                    [$0.linkedPurchaseToken].compactMap { $0 } + $0.earlierLinkedPurchaseTokens
                }
            ).subtracting(own)
            guard !linked.isEmpty else { continue }
            let ownOriginals = Set(recording.originalTransactionIDs)
            let now = recording.now.millisecondsSince1970
            for replaced in try await writer.originals(ofPurchaseTokens: linked.sorted())
            where !ownOriginals.contains(replaced.original) {
                stated.append(
                    (
                        recording,
                        SubscriptionStatus(
                            appID: recording.appID, store: recording.store, environment: recording.environment,
                            // Its period's end, so that the statement is about its latest period; its rights end now.
                            originalTransactionID: replaced.original, productID: replaced.productID, state: .expired,
                            expiresDate: replaced.expires ?? now, autoRenews: false, asOf: now,
                            updatedAt: recording.now)
                    ))
            }
        }
        guard !stated.isEmpty else { return [] }
        let (changes, _) = try await SubscriptionStatus.merge(stated.map(\.1), with: writer)
        return changes.map { change in
            let recording = stated[change.index].0
            return WebhookEvent(
                appID: recording.appID, environment: recording.environment, kind: .subscriptionStatusChanged,
                createdAt: recording.now,
                data: NotificationRecorder.statusEventData(change.status, previous: change.previous))
        }
    }

    /// The `customer.entitlements_changed` events of recordings of one app and environment (``CustomerChanges``):
    /// of each recording's user, of the claimant of each row inserted or revoked, of each user a claim moved from,
    /// and of the claimants of the subscriptions whose statuses they state; nothing is read when the app's catalog
    /// grants no entitlement.
    static func customerEvents(
        of recordings: [LedgerRecording], _ results: [[LedgerRecorded]], with writer: some LedgerWriting
    ) async throws -> [WebhookEvent] {
        guard let first = recordings.first, CustomerChanges.grantsEntitlements(first.catalog) else { return [] }
        var users = Set<String>()
        for (recording, results) in zip(recordings, results) {
            if let user = recording.user { users.insert(user) }
            for result in results {
                if result.isNew || result.revokedNow, let holder = result.entry.claimant { users.insert(holder) }
                if let previous = result.transferredFrom { users.insert(previous) }
            }
        }
        let stating = Set(recordings.flatMap { $0.statuses.map(\.originalTransactionID) })
        if !stating.isEmpty { users.formUnion(try await writer.claimants(of: stating.sorted()).values) }
        return try await CustomerChanges.events(
            for: users, appID: first.appID, environment: first.environment, catalog: first.catalog,
            now: recordings.map(\.now).max() ?? first.now, with: writer)
    }

    /// The indexes of a group's members by app, store and environment (each in the group's order), ledgers in a fixed
    /// order, so that two servers' groups take their locks in one order.
    public static func byLedger(_ ledgers: [(appID: UUID, store: Store, environment: StoreEnvironment)]) -> [[Int]] {
        var indexes: [String: [Int]] = [:]
        for (index, ledger) in ledgers.enumerated() {
            indexes["\(ledger.appID) \(ledger.store.rawValue) \(ledger.environment.rawValue)", default: []].append(
                index)
        }
        return indexes.keys.sorted().map { indexes[$0] ?? [] }
    }
}
