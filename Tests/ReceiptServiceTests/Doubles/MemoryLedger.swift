import Foundation
import ReceiptCore
import ReceiptService
import Synchronization

/// The ledger, notification and outbox tables in memory, with the semantics of the stores' statements (insert if
/// absent, first claim wins, revocations and statuses written only by a statement signed at or after the stored one),
/// so that ``LedgerRecorder`` and ``NotificationRecorder`` are tested without a database, as Hummingbird's todos
/// example tests its controller against `TodoMemoryRepository`. The stores themselves are held to the same
/// semantics by the contract suites.
final class MemoryLedger: Sendable {
    /// One ledger: an app's transactions of one environment.
    struct Ledger {
        /// Rows by transaction id, their claimants not filled in (as the stores' rows).
        var rows: [String: LedgerEntry] = [:]
        /// The signed date of the statement that last set each row's revocation.
        var revocationAsOf: [String: Int64] = [:]
        /// Claims: original transaction id → user.
        var claims: [String: String] = [:]
        /// Recorded notification UUIDs.
        var notifications = Set<String>()
        /// `CONSUMPTION_REQUEST`s per transaction.
        var consumptionRequests: [String: Int] = [:]
        /// The transactions whose refund request the app answers.
        var consumptionAnswersDue = Set<String>()
        /// Statuses by original transaction id.
        var statuses: [String: SubscriptionStatus] = [:]
        /// What was last told of each user's entitlements, and when it next changes.
        var snapshots: [String: (entitlements: String?, nextChangeAt: Int64?, sequence: Int64)] = [:]
    }

    struct Key: Hashable {
        let appID: UUID
        let environment: StoreEnvironment
    }

    struct State {
        var ledgers: [Key: Ledger] = [:]
        var events: [WebhookEvent] = []
        var deliveries: [WebhookFanOut.Delivery] = []
        /// Statements run, by name, to check how many a group takes.
        var statements: [String: Int] = [:]
    }

    let endpoints: [WebhookEndpoint]
    let state = Mutex(State())

    /// An empty ledger whose apps have these webhook endpoints.
    init(endpoints: [WebhookEndpoint] = []) {
        self.endpoints = endpoints
    }

    /// The writer of an app's ledger in one environment.
    func writer(_ appID: UUID, _ environment: StoreEnvironment) -> Writer {
        Writer(ledger: self, key: Key(appID: appID, environment: environment))
    }

    /// The ledger of an app in one environment.
    func ledger(_ appID: UUID, _ environment: StoreEnvironment = .production) -> Ledger {
        state.withLock { $0.ledgers[Key(appID: appID, environment: environment)] ?? Ledger() }
    }

    /// Every event inserted, in order.
    var events: [WebhookEvent] { state.withLock { $0.events } }

    /// How many times the statement named `name` ran.
    func statements(_ name: String) -> Int { state.withLock { $0.statements[name] ?? 0 } }

    /// The event types inserted, in order.
    var eventTypes: [String] { events.map(\.type) }

    /// ``NotificationWriting`` over one ledger of the memory store.
    struct Writer: NotificationWriting {
        let ledger: MemoryLedger
        let key: Key

        private func change<T>(_ statement: String, _ body: (inout Ledger) -> T) -> T {
            ledger.state.withLock { state in
                state.statements[statement, default: 0] += 1
                return body(&state.ledgers[key, default: Ledger()])
            }
        }

        func customerFacts(of user: String, limit: Int) async throws -> (
            entries: [LedgerEntry], statuses: [SubscriptionStatus]
        ) {
            change("customerFacts") { ledger in
                let originals = Set(ledger.claims.filter { $0.value == user }.map(\.key))
                let entries = ledger.rows.values.filter { originals.contains($0.transaction.originalTransactionID) }
                    .map { entry in
                        var entry = entry
                        entry.claimant = user
                        return entry
                    }
                return (
                    Array(entries.prefix(limit)),
                    ledger.statuses.values.filter { originals.contains($0.originalTransactionID) }
                )
            }
        }

        func clearCustomerDue(of users: [String]) async throws {
            change("clearCustomerDue") { ledger in
                for user in users { ledger.snapshots[user]?.nextChangeAt = nil }
            }
        }

        func lockCustomerSnapshot(of user: String, at date: Date) async throws -> String? {
            change("lockCustomerSnapshot") { ledger in ledger.snapshots[user]?.entitlements }
        }

        func saveCustomerSnapshot(
            of user: String, entitlements: String, nextChangeAt: Int64?, changed: Bool, at date: Date
        ) async throws -> Int64 {
            change("saveCustomerSnapshot") { ledger in
                let sequence = (ledger.snapshots[user]?.sequence ?? 0) + (changed ? 1 : 0)
                ledger.snapshots[user] = (entitlements, nextChangeAt, sequence)
                return sequence
            }
        }

        func claimants(of originalTransactionIDs: [String]) async throws -> [String: String] {
            change("claimants") { ledger in ledger.claims.filter { originalTransactionIDs.contains($0.key) } }
        }

        func moveClaim(of originalTransactionID: String, to user: String, at date: Date) async throws {
            change("moveClaim") { ledger in
                if ledger.claims[originalTransactionID] != nil { ledger.claims[originalTransactionID] = user }
            }
        }

        func insertIfAbsent(_ entries: [LedgerEntry]) async throws -> Set<String> {
            change("insertIfAbsent") { ledger in
                var inserted = Set<String>()
                for var entry in entries where ledger.rows[entry.transaction.transactionID] == nil {
                    entry.claimant = nil
                    ledger.rows[entry.transaction.transactionID] = entry
                    inserted.insert(entry.transaction.transactionID)
                }
                return inserted
            }
        }

        func originals(ofPurchaseTokens tokens: [String]) async throws -> [(
            original: String, productID: String, expires: Int64?
        )] {
            change("originals") { ledger in
                var found: [String: (String, Int64?)] = [:]
                for entry in ledger.rows.values {
                    if let token = entry.transaction.purchaseToken, tokens.contains(token) {
                        let known = found[entry.transaction.originalTransactionID]?.1
                        let expires = [known, entry.transaction.expiresDate].compactMap { $0 }.max()
                        found[entry.transaction.originalTransactionID] = (entry.transaction.productID, expires)
                    }
                }
                return found.sorted { $0.key < $1.key }.map { ($0.key, $0.value.0, $0.value.1) }
            }
        }

        func entries(transactionIDs: [String]) async throws -> [String: LedgerEntry] {
            change("entries") { ledger in ledger.rows.filter { transactionIDs.contains($0.key) } }
        }

        func claims(_ claims: [(original: String, user: String)], reading originals: [String], at date: Date)
            async throws -> [String: String]
        {
            change("claims") { ledger in
                for (original, user) in claims where ledger.claims[original] == nil { ledger.claims[original] = user }
                return ledger.claims.filter { originals.contains($0.key) }
            }
        }

        func markDelivered(_ transactionID: String, at date: Date) async throws -> Bool {
            change("markDelivered") { ledger in
                guard let row = ledger.rows[transactionID], row.deliveredAt == nil, !row.isRevoked else {
                    return false
                }
                ledger.rows[transactionID]?.deliveredAt = date
                return true
            }
        }

        /// The memory store keeps no apps: every app is as stored in `confirm` mode, and offers stay offers.
        func deliversOnceAsStored() async throws -> Bool { false }

        func markOffered(_ transactionID: String, at date: Date) async throws {
            change("markOffered") { ledger in
                guard let row = ledger.rows[transactionID], row.offeredAt == nil, row.deliveredAt == nil,
                    !row.isRevoked
                else { return }
                ledger.rows[transactionID]?.offeredAt = date
            }
        }

        @discardableResult
        func touch(_ transactionID: String, at date: Date, revocation: PurchaseTransaction?) async throws -> Bool {
            change("touch") { ledger in
                var revokedNow = false
                if let revocation {
                    guard
                        ledger.revocationAsOf[transactionID].map({ asOf in (revocation.signedDate ?? .min) >= asOf })
                            ?? true
                    else { return false }
                    revokedNow = ledger.rows[transactionID]?.isRevoked == false
                    ledger.rows[transactionID]?.transaction.takeRevocation(of: revocation)
                    ledger.revocationAsOf[transactionID] = revocation.signedDate
                    ledger.rows[transactionID]?.revocationAsOf = revocation.signedDate
                }
                ledger.rows[transactionID]?.lastSeenAt = date
                return revokedNow
            }
        }

        func insertLedgerEvents(_ events: [WebhookEvent]) async throws {
            try await insert(events, onlyTaken: true)
        }

        func insertNotifications(_ records: [NotificationRecord]) async throws -> Set<String> {
            change("insertNotifications") { ledger in
                Set(records.map(\.notification.uuid).filter { ledger.notifications.insert($0).inserted })
            }
        }

        func openConsumptionGroup(transactionID: String, uuid: String, at date: Date, answering: Bool) async throws
            -> Bool
        {
            change("openConsumptionGroup") { ledger in
                if answering { ledger.consumptionAnswersDue.insert(transactionID) }
                ledger.consumptionRequests[transactionID, default: 0] += 1
                return ledger.consumptionRequests[transactionID] == 1
            }
        }

        func setRevocation(_ transactionID: String, to transaction: PurchaseTransaction?, asOf: Int64) async throws
            -> Bool
        {
            change("setRevocation") { ledger in
                guard let row = ledger.rows[transactionID],
                    ledger.revocationAsOf[transactionID].map({ $0 <= asOf }) ?? true
                else { return false }
                ledger.rows[transactionID]?.transaction.takeRevocation(of: transaction)
                ledger.revocationAsOf[transactionID] = asOf
                ledger.rows[transactionID]?.revocationAsOf = asOf
                return row.isRevoked != (transaction != nil)
            }
        }

        func subscriptionStatuses(of originalTransactionIDs: [String]) async throws -> [String: SubscriptionStatus] {
            change("subscriptionStatuses") { ledger in
                ledger.statuses.filter { originalTransactionIDs.contains($0.key) }
            }
        }

        func saveSubscriptionStatuses(_ statuses: [SubscriptionStatus]) async throws {
            change("saveSubscriptionStatuses") { ledger in
                for status in statuses
                where ledger.statuses[status.originalTransactionID].map({ $0.asOf <= status.asOf }) ?? true {
                    ledger.statuses[status.originalTransactionID] = status
                }
            }
        }

        func insertEvents(_ events: [WebhookEvent]) async throws {
            try await insert(events, onlyTaken: false)
        }

        private func insert(_ events: [WebhookEvent], onlyTaken: Bool) async throws {
            let endpoints = ledger.endpoints
            let fanOut = try await WebhookFanOut(events, onlyTaken: onlyTaken) { appID in
                endpoints.filter { $0.appID == appID }
            }
            ledger.state.withLock { state in
                state.statements["insertEvents", default: 0] += 1
                state.events += fanOut.events
                state.deliveries += fanOut.deliveries
            }
        }
    }
}
