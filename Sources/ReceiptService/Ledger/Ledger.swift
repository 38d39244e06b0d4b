import CoreMetrics
import Foundation
import ReceiptCore
import Synchronization

/// The delivery decision for a valid answer (docs/api.md, "Transactions"): records the input's transactions in the
/// app's ledger and says, per transaction, whether the backend should deliver it.
///
/// A transaction already in the ledger costs no database round trip: a bounded in-memory view of known entries
/// answers, as long as the input brings nothing the view does not know (a revocation, a user to claim for, a claim to
/// move). The view is dropped whenever the store's ``LedgerStore/ledgerChangeMarker()`` moves (a claim, revocation or
/// delivery recorded by another server or process), so such a change is seen on the next call.
public final class Ledger: Sendable {
    /// The decision for one answer.
    public enum Decision: Sendable {
        /// The `transactions` array of the answer, and whether the recording went to the store (it was not answered
        /// from memory).
        case deliver([JSONValue], recorded: Bool)
        /// A purchase belongs to another user and the app refuses such requests (``ClaimsPolicy/refuse``).
        case refused
    }

    /// The description of a 403 for a purchase claimed by another user (``ClaimsPolicy/refuse``).
    public static let claimedByOtherUser = "A purchase in the receipt belongs to another user of the app"

    let store: any LedgerStore
    let deadline: StoreDeadline
    /// The subscription statuses answers carry, when the server reads them.
    let statuses: SubscriptionStatusView?
    private let view: LedgerView
    private let metrics: LedgerMetrics

    /// Creates the ledger over `store`; its writes wait at most `deadline`; `capacity` bounds the in-memory view;
    /// answers carry the subscription statuses of `statuses`.
    public init(
        store: any LedgerStore, deadline: StoreDeadline = StoreDeadline(nil), capacity: Int = 100_000,
        statuses: SubscriptionStatusView? = nil, metrics: (any MetricsFactory)? = nil
    ) {
        self.store = store
        self.deadline = deadline
        self.statuses = statuses
        self.view = LedgerView(capacity: capacity)
        self.metrics = LedgerMetrics(factory: metrics ?? NOOPMetricsHandler.instance)
    }

    /// Records `transactions` (one input's, of `store` and `environment`) for `app` and decides what to deliver to
    /// `user`.
    /// `statuses` are the subscriptions' statuses Apple's renewal infos state beside them (an enriched answer's), written
    /// with the recording unless this server wrote them (or newer ones) before.
    public func decide(
        _ transactions: [PurchaseTransaction], store purchaseStore: Store = .appStore, environment: StoreEnvironment,
        user: String?, app: App,
        requestID: String, statuses stated: [SubscriptionStatus] = [], now: Date = Date()
    ) async throws -> Decision {
        guard !transactions.isEmpty || !stated.isEmpty else { return .deliver([], recorded: false) }
        let claimant = app.claimsPolicy == .off ? nil : user
        var draft = LedgerRecording(
            appID: app.id, store: purchaseStore, environment: environment, transactions: transactions, user: claimant,
            movesClaims: app.claimsPolicy == .transfer, deliversNew: app.deliveryMode == .once, requestID: requestID,
            now: now)
        draft.offers = app.deliveryMode == .confirm
        draft.refusesOtherUsers = app.claimsPolicy == .refuse
        draft.catalog = app.catalog
        draft.statuses = stated
        // The recording may mark deliveries: in `once` mode, and in `confirm` mode too when the app is in `once` as
        // stored (this server still holds it in `confirm` for its authentication cache's lifetime after the switch,
        // and its offer is then the delivery). Once the store has begun to commit it, this answer waits for it
        // whatever the deadline, and a caller that gave up first leaves nothing written. (Found by the simulator:
        // such an offer committed behind its 503, and the retry said `deliver: false`.)
        draft.commitClaim = CommitClaim()
        let recording = draft
        let results: [LedgerRecorded]
        let marker = store.ledgerChangeMarker()
        var recorded = false
        if let known = view.answer(recording, marker: marker) {
            results = known
            metrics.fromMemory.increment()
        } else {
            do {
                results = try await deadline.run("the ledger", claim: recording.commitClaim) { [store] in
                    try await store.record(recording)
                }
            } catch let error as ServiceError where error.code == .claimedByOtherUser {
                metrics.conflicts(.refuse).increment()
                return .refused
            }
            metrics.writes.increment()
            recorded = true
            view.remember(results.map(\.entry), statuses: recording.statuses, marker: marker)
        }
        var entries: [JSONValue] = []
        entries.reserveCapacity(results.count)
        let nowMilliseconds = now.millisecondsSince1970
        for result in results {
            let entry = Self.answerEntry(result, user: claimant, app: app, now: nowMilliseconds)
            if case .string(let state)? = entry["state"] { metrics.count(state: state) }
            if let holder = result.entry.claimant, let claimant, holder != claimant {
                metrics.conflicts(app.claimsPolicy).increment()
                if app.claimsPolicy == .refuse { return .refused }
            }
            if result.transferredFrom != nil { metrics.conflicts(.transfer).increment() }
            entries.append(.object(entry))
        }
        return .deliver(entries, recorded: recorded)
    }

    /// Records `transactions` as a notification does: nothing claimed, nothing delivered (purchases of another app
    /// account that Apple's history of a shared Apple ID showed, money review M13).
    func record(
        _ transactions: [PurchaseTransaction], store purchaseStore: Store, environment: StoreEnvironment, app: App,
        requestID: String, now: Date
    ) async throws {
        var recording = LedgerRecording(
            appID: app.id, store: purchaseStore, environment: environment, transactions: transactions, user: nil,
            movesClaims: false, deliversNew: false, requestID: requestID, now: now)
        recording.catalog = app.catalog
        let writing = recording
        _ = try await deadline.run("the ledger") { [store] in try await store.record(writing) }
        metrics.writes.increment()
    }

    /// One page of the app's ledger (``LedgerStore/ledgerEntries(_:)``), within the database deadline.
    public func entries(_ query: LedgerQuery) async throws -> [LedgerEntry] {
        try await deadline.run("a ledger look-up") { [store] in try await store.ledgerEntries(query) }
    }

    /// Confirms deliveries (``LedgerStore/confirmDelivery(appID:environment:transactionIDs:at:finishingWithApple:)``)
    /// of `environment` (nil: every one), within the database deadline; a revoked transaction is not confirmed. An
    /// app in `confirm` mode with App Store Server API credentials has each new confirmation finished with Apple too;
    /// in `once` mode Apple is never told (the answer that said `deliver: true` was the delivery).
    public func confirmDelivery(
        app: App, environment: StoreEnvironment? = nil, transactionIDs: [String], at date: Date = Date()
    ) async throws -> [LedgerEntry] {
        try await deadline.run("a delivery confirmation") { [store] in
            try await store.confirmDelivery(
                appID: app.id, environment: environment, transactionIDs: transactionIDs, at: date,
                finishingWithApple: app.deliveryMode == .confirm && app.appStoreServerCredentials != nil)
        }
    }

    /// Keeps what the backend reported of the use of transactions (``ConsumptionAnswerStore/reportConsumption``),
    /// within the database deadline; returns the ids the ledger holds.
    public func reportConsumption(
        app: App, environment: StoreEnvironment?, transactionIDs: [String], report: ConsumptionReport
    ) async throws -> Set<String> {
        guard let answers = store as? any ConsumptionAnswerStore else {
            throw ServiceError(.notConfigured, "the store keeps no consumption reports")
        }
        return try await deadline.run("a consumption report") {
            try await answers.reportConsumption(
                appID: app.id, environment: environment, transactionIDs: transactionIDs, report: report)
        }
    }

    /// One entry of the answer's `transactions`, in the documented field order; a subscription period that ended
    /// before `now` (milliseconds since 1970) says `expired`.
    static func answerEntry(_ result: LedgerRecorded, user: String?, app: App, now: Int64) -> JSONObject {
        let entry = result.entry
        let transaction = entry.transaction
        // Without a user, claims are not checked.
        let otherUsers = entry.claimant.map { holder in user.map { holder != $0 } ?? false } ?? false
        let deliver: Bool
        switch app.deliveryMode {
        case .once: deliver = result.deliveredNow
        // In `confirm` mode, also a delivery this answer made: the app was in `once` as stored
        // (``LedgerRecording/deliverAsStored()``).
        case .confirm: deliver = result.deliveredNow || (!entry.isRevoked && !otherUsers && entry.deliveredAt == nil)
        }
        var object = JSONObject(capacity: 14)
        object.append("transaction_id", .string(transaction.transactionID))
        object.append("original_transaction_id", .string(transaction.originalTransactionID))
        object.append("product_id", .string(transaction.productID))
        // What a backend needs to decide alone: where the purchase was made (a sandbox purchase is free), and until
        // when a subscription period runs.
        object.append("environment", .string(entry.environment.rawValue))
        entry.appendStore(to: &object)
        if let expires = transaction.expiresDate {
            object.append("expires_date_ms", .integer(expires))
            // Delivered or not, an ended period unlocks nothing: the customer's entitlements say what does.
            if expires <= now { object.append("expired", .bool(true)) }
        }
        entry.appendTerms(to: &object)
        object.append("first_seen_at", .string(LedgerEntry.rfc3339(entry.firstSeenAt)))
        let state =
            entry.isRevoked ? "refunded" : otherUsers ? "claimed_by_other_user" : result.isNew ? "new" : "seen"
        object.append("state", .string(state))
        object.append("deliver", .bool(deliver))
        entry.appendRefund(to: &object)
        if entry.isRevoked, entry.deliveredAt != nil { object.append("refunded_after_delivery", .bool(true)) }
        if let from = result.transferredFrom { object.append("transferred_from", .string(from)) }
        if let delivered = entry.deliveredAt, app.deliveryMode == .confirm {
            object.append("delivered_at", .string(LedgerEntry.rfc3339(delivered)))
        }
        return object
    }
}

/// The known ledger entries of every app, keyed by app, store, environment and transaction id, valid for one value of the
/// store's change marker. Bounded: past `capacity` entries it starts again empty.
final class LedgerView: Sendable {
    struct Key: Hashable {
        let appID: UUID
        let store: Store
        let environment: StoreEnvironment
        let transactionID: String
    }

    private struct State {
        var marker: Int?
        var entries: [Key: LedgerEntry] = [:]
        /// The signed date of the newest status written per subscription (keyed by its original transaction).
        var statusesAsOf: [Key: Int64] = [:]
    }

    private let capacity: Int
    private let state = Mutex(State())

    init(capacity: Int) {
        self.capacity = capacity
    }

    /// The recording's results from memory, when every transaction is known, the input revokes none the view
    /// thinks unrevoked, no claim would be made or moved, and every status it states was written before (or one
    /// signed later); nil when the store must be asked.
    func answer(_ recording: LedgerRecording, marker: Int?) -> [LedgerRecorded]? {
        guard let marker, !recording.transactions.isEmpty else { return nil }
        return state.withLock { state in
            guard state.marker == marker else {
                state.entries.removeAll(keepingCapacity: true)
                state.statusesAsOf.removeAll(keepingCapacity: true)
                state.marker = marker
                return nil
            }
            for status in recording.statuses {
                let key = Key(
                    appID: recording.appID, store: recording.store, environment: recording.environment,
                    transactionID: status.originalTransactionID)
                guard let written = state.statusesAsOf[key], written >= status.asOf else { return nil }
            }
            var results: [LedgerRecorded] = []
            results.reserveCapacity(recording.transactions.count)
            for transaction in recording.transactions {
                let key = Key(
                    appID: recording.appID, store: recording.store, environment: recording.environment,
                    transactionID: transaction.transactionID)
                guard let entry = state.entries[key],
                    transaction.revocationDate == nil || entry.isRevoked
                else { return nil }
                if let user = recording.user {
                    // A claim to make (none yet) or to move is the store's to do.
                    guard let holder = entry.claimant, holder == user || !recording.movesClaims else { return nil }
                }
                // So is a delivery due now (``DeliveryMode/once``), an offer to record (``DeliveryMode/confirm``).
                guard !recording.writes(entry) else { return nil }
                results.append(LedgerRecorded(entry: entry, isNew: false, transferredFrom: nil))
            }
            return results
        }
    }

    /// Remembers entries read or written while the marker was `marker`.
    func remember(_ entries: [LedgerEntry], statuses: [SubscriptionStatus] = [], marker: Int?) {
        guard let marker else { return }
        state.withLock { state in
            if state.marker != marker {
                state.entries.removeAll(keepingCapacity: true)
                state.statusesAsOf.removeAll(keepingCapacity: true)
                state.marker = marker
            }
            // Emptied in place when full: the table keeps its buckets, so it does not grow again through every size
            // up to the capacity, moving each row at every doubling (2 % of the server's CPU on new receipts).
            if state.entries.count + entries.count > capacity { state.entries.removeAll(keepingCapacity: true) }
            if state.statusesAsOf.count + statuses.count > capacity {
                state.statusesAsOf.removeAll(keepingCapacity: true)
            }
            for status in statuses {
                let key = Key(
                    appID: status.appID, store: status.store, environment: status.environment,
                    transactionID: status.originalTransactionID)
                state.statusesAsOf[key] = max(state.statusesAsOf[key] ?? status.asOf, status.asOf)
            }
            for entry in entries {
                state.entries[
                    Key(
                        appID: entry.appID, store: entry.store, environment: entry.environment,
                        transactionID: entry.transaction.transactionID)] = entry
            }
        }
    }
}

/// The ledger's figures in `/metrics`.
struct LedgerMetrics: Sendable {
    /// Recordings that went to the database (`receiptverify_ledger_writes_total`).
    let writes: Counter
    /// Answers decided from the in-memory view (`receiptverify_ledger_memory_answers_total`).
    let fromMemory: Counter
    /// Transactions answered, by state (`receiptverify_ledger_transactions_total{state}`).
    let states: [String: Counter]
    /// Purchases presented by another user than their claimant, by policy
    /// (`receiptverify_ledger_claim_conflicts_total{policy}`).
    let conflictsByPolicy: [ClaimsPolicy: Counter]

    init(factory: any MetricsFactory) {
        writes = Counter(label: "receiptverify_ledger_writes_total", factory: factory)
        fromMemory = Counter(label: "receiptverify_ledger_memory_answers_total", factory: factory)
        states = Dictionary(
            uniqueKeysWithValues: ["new", "seen", "refunded", "claimed_by_other_user"].map { state in
                (
                    state,
                    Counter(
                        label: "receiptverify_ledger_transactions_total", dimensions: [("state", state)],
                        factory: factory)
                )
            })
        conflictsByPolicy = Dictionary(
            uniqueKeysWithValues: ClaimsPolicy.allCases.map { policy in
                (
                    policy,
                    Counter(
                        label: "receiptverify_ledger_claim_conflicts_total", dimensions: [("policy", policy.rawValue)],
                        factory: factory)
                )
            })
    }

    func count(state: String) { states[state]?.increment() }
    func conflicts(_ policy: ClaimsPolicy) -> Counter { conflictsByPolicy[policy]! }
}
