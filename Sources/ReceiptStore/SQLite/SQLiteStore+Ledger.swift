import Foundation
import ReceiptCore
import ReceiptService
import SQLiteNIO

/// The ledger concern (``LedgerStore``): transactions, claims, deliveries. A transaction (`BEGIN IMMEDIATE`) holds
/// the database's write lock, so recordings from this process and others are serialized.
extension SQLiteStore: LedgerStore, GroupCommittingStore {
    /// Recordings are committed in groups (``LedgerGroupCommit``): the connection is the only writer, so a group is
    /// serialized as its members would be.
    public func record(_ recording: LedgerRecording) async throws -> [LedgerRecorded] {
        guard !recording.transactions.isEmpty || !recording.statuses.isEmpty else { return [] }
        return try await ledgerGroups.record(recording, on: self)
    }

    public func dueCustomers(dueBy now: Date, limit: Int) async throws -> [DueCustomer] {
        try await run {
            try await self.query(
                """
                SELECT app_id, environment, app_user_id FROM customer_snapshots
                WHERE next_change_at <= ? ORDER BY next_change_at LIMIT ?
                """, [.integer(StoredForm.millis(now)), .integer(limit)]
            ).map(StoredForm.dueCustomer)
        }
    }

    public func tellCustomers(
        appID: UUID, environment: StoreEnvironment, users: [String], catalog: [CatalogProduct]?, at now: Date
    ) async throws -> [WebhookEvent] {
        try await transaction {
            try await CustomerChanges.tell(
                users, appID: appID, environment: environment, catalog: catalog, at: now,
                // A customer's facts span both stores: telling reads no ledger by the writer's store.
                with: SQLiteLedgerWriter(
                    store: self, appID: appID, purchaseStore: .appStore, environment: environment))
        }
    }

    func commitLedgerGroup(_ recordings: [LedgerRecording]) async throws -> [LedgerGroupCommit.Outcome] {
        let outcomes = try await transaction {
            try await LedgerRecorder.recordTogether(recordings, writer: self.ledgerWriter)
        }
        if StoredForm.changesCustomers(recordings, outcomes.map(\.result)) { announceCustomerChange() }
        if StoredForm.statesStatuses(recordings) { announceStatusChange() }
        return outcomes
    }

    func commitLedgerRecording(_ recording: LedgerRecording) async throws -> LedgerGroupCommit.Outcome {
        let outcome = try await transaction {
            try await LedgerRecorder.record(recording, with: self.ledgerWriter(recording))
        }
        if StoredForm.changesCustomers([recording], [outcome.result]) { announceCustomerChange() }
        if StoredForm.statesStatuses([recording]) { announceStatusChange() }
        return outcome
    }

    private func ledgerWriter(_ recording: LedgerRecording) -> SQLiteLedgerWriter {
        SQLiteLedgerWriter(
            store: self, appID: recording.appID, purchaseStore: recording.store, environment: recording.environment)
    }

    public func confirmDelivery(
        appID: UUID, environment: StoreEnvironment?, transactionIDs: [String], at date: Date,
        finishingWithApple: Bool
    ) async throws -> [LedgerEntry] {
        let environment: SQLiteData = environment.map { .text($0.rawValue) } ?? .null
        guard !transactionIDs.isEmpty else { return [] }
        let (entries, updated) = try await transaction {
            var entries: [LedgerEntry] = []
            var updated = false
            for chunk in transactionIDs.chunked(StoredForm.ledgerChunk) {
                let list = Self.placeholders(chunk.count)
                let confirmed = try await self.query(
                    """
                    UPDATE ledger_transactions SET \(StoredForm.delivering(at: "?")),
                        apple_finish = CASE WHEN ? AND store = 'app_store' AND environment <> 'Xcode' THEN 'pending' END,
                        apple_finish_due_at = CASE WHEN ? AND store = 'app_store' AND environment <> 'Xcode' THEN ? END
                    WHERE app_id = ? AND transaction_id IN (\(list)) AND delivered_at IS NULL
                        AND revocation_date IS NULL AND (? IS NULL OR environment = ?)
                    RETURNING transaction_id
                    """,
                    [
                        .millis(date), .millis(date), .integer(finishingWithApple ? 1 : 0),
                        .integer(finishingWithApple ? 1 : 0), .millis(date), .uuid(appID),
                    ] + chunk.map { .text($0) } + [environment, environment])
                updated = updated || !confirmed.isEmpty
                entries += try await self.query(
                    """
                    \(StoredForm.ledgerSelect) WHERE t.app_id = ? AND t.transaction_id IN (\(list))
                        AND (? IS NULL OR t.environment = ?)
                    """,
                    [.uuid(appID)] + chunk.map { .text($0) } + [environment, environment]
                ).map(StoredForm.ledgerEntry)
            }
            return (entries, updated)
        }
        if updated { announceLedgerChange() }
        return entries
    }

    public func updateApp(_ app: App, settlingOffersAt date: Date) async throws -> Bool {
        let settled = try await transaction { () -> Int? in
            guard try await self.updateAppRows(app) else { return nil }
            return try await self.query(
                """
                UPDATE ledger_transactions SET \(StoredForm.delivering(at: "?"))
                WHERE app_id = ? AND offered_at IS NOT NULL AND delivered_at IS NULL AND revocation_date IS NULL
                RETURNING transaction_id
                """, [.millis(date), .millis(date), .uuid(app.id)]
            ).count
        }
        guard let settled else { return false }
        if settled > 0 { announceLedgerChange() }
        return true
    }

    public func ledgerEntries(_ query: LedgerQuery) async throws -> [LedgerEntry] {
        let (sql, binds) = Self.ledgerEntriesStatement(query)
        return try await run { try await self.query(sql, binds).map(StoredForm.ledgerEntry) }
    }

    /// The statement of ``ledgerEntries(_:)`` and its binds.
    static func ledgerEntriesStatement(_ query: LedgerQuery) -> (sql: String, binds: [SQLiteData]) {
        var conditions = ["t.app_id = ?"]
        var binds: [SQLiteData] = [.uuid(query.appID)]
        if let user = query.user {
            conditions.append("c.app_user_id = ?")
            binds.append(.text(user))
        }
        if let original = query.originalTransactionID {
            conditions.append("t.original_transaction_id = ?")
            binds.append(.text(original))
        }
        if let token = query.purchaseToken {
            conditions.append("t.purchase_token = ?")
            binds.append(.text(token))
        }
        if let since = query.since {
            conditions.append("t.first_seen_at >= ?")
            binds.append(.millis(since))
        }
        if let until = query.until {
            conditions.append("t.first_seen_at < ?")
            binds.append(.millis(until))
        }
        if let after = query.after {
            conditions.append("(t.first_seen_at, t.environment, t.transaction_id) > (?, ?, ?)")
            binds += [.integer(Int(after.firstSeen)), .text(after.environment), .text(after.transactionID)]
        }
        let sql = """
            \(ledgerSelect(
                byUser: query.user != nil, byOriginal: query.originalTransactionID != nil,
                byToken: query.purchaseToken != nil))
            WHERE \(conditions.joined(separator: " AND "))
            ORDER BY t.first_seen_at, t.environment, t.transaction_id LIMIT ?
            """
        return (sql, binds + [.integer(query.limit)])
    }

    /// The ledger's rows with their claimant (``StoredForm/ledgerSelect``), read from what the query names. SQLite's
    /// planner keeps no statistics here (no ANALYZE), and for a LIMIT in the ledger's order it walks
    /// `ledger_transactions_order_idx` through the whole app's ledger, filtering (measured: 190 ms a look-up on a
    /// million rows, scripts/export-bench.sh). So a user's rows start from their claims (`ledger_claims_user_idx`,
    /// then each original transaction's rows), and an original transaction's (the narrower, leading when both are
    /// given) from `ledger_transactions_original_idx`, a purchase token's from `ledger_transactions_token_idx`; the few
    /// rows found are sorted.
    static func ledgerSelect(byUser: Bool, byOriginal: Bool, byToken: Bool = false) -> String {
        let join = """
            ON c.app_id = t.app_id AND c.store = t.store AND c.environment = t.environment
                AND c.original_transaction_id = t.original_transaction_id
            """
        let select = "SELECT t.*, c.app_user_id AS claimant"
        if byOriginal {
            return """
                \(select) FROM ledger_transactions t INDEXED BY ledger_transactions_original_idx
                LEFT JOIN ledger_claims c \(join)
                """
        }
        if byToken {
            return """
                \(select) FROM ledger_transactions t INDEXED BY ledger_transactions_token_idx
                LEFT JOIN ledger_claims c \(join)
                """
        }
        if byUser {
            // CROSS JOIN keeps the claims as the outer loop (SQLite never reorders it); a user's rows are claimed,
            // so the inner join is the left join's rows.
            return """
                \(select) FROM ledger_claims c INDEXED BY ledger_claims_user_idx
                CROSS JOIN ledger_transactions t INDEXED BY ledger_transactions_original_idx \(join)
                """
        }
        return StoredForm.ledgerSelect
    }

    public func setClaim(appID: UUID, originalTransactionID: String, user: String?, at date: Date) async throws
        -> Bool
    {
        let found = try await transaction {
            let ledgers = try await self.query(
                """
                SELECT DISTINCT store, environment FROM ledger_transactions
                WHERE app_id = ? AND original_transaction_id = ?
                """, [.uuid(appID), .text(originalTransactionID)])
            guard !ledgers.isEmpty else { return false }
            for row in ledgers {
                let store = try row.require("store")
                let environment = try row.require("environment")
                if let user {
                    _ = try await self.query(
                        """
                        INSERT INTO ledger_claims (app_id, store, environment, original_transaction_id, app_user_id,
                            claimed_at)
                        VALUES (?, ?, ?, ?, ?, ?)
                        ON CONFLICT (app_id, store, environment, original_transaction_id)
                        DO UPDATE SET app_user_id = excluded.app_user_id, claimed_at = excluded.claimed_at
                        """,
                        [.uuid(appID), store, environment, .text(originalTransactionID), .text(user), .millis(date)])
                } else {
                    _ = try await self.query(
                        """
                        DELETE FROM ledger_claims
                        WHERE app_id = ? AND store = ? AND environment = ? AND original_transaction_id = ?
                        """, [.uuid(appID), store, environment, .text(originalTransactionID)])
                }
            }
            return true
        }
        if found { announceLedgerChange() }
        return found
    }

    /// `?, ?, …` for an `IN` list of `count` values.
    static func placeholders(_ count: Int) -> String {
        Array(repeating: "?", count: count).joined(separator: ", ")
    }
}

/// ``LedgerWriting`` on the store's one connection, inside the transaction ``SQLiteStore/record(_:)`` holds: the
/// ledger of one app, store and environment; a customer's facts and snapshot span both stores (the app and
/// environment's).
struct SQLiteLedgerWriter: LedgerWriting {
    let store: SQLiteStore
    let appID: UUID
    /// The store whose transactions, claims and statuses it writes.
    let purchaseStore: Store
    let environment: StoreEnvironment

    func customerFacts(of user: String, limit: Int) async throws -> (
        entries: [LedgerEntry], statuses: [SubscriptionStatus]
    ) {
        let entries = try await store.query(Self.customerFactsSQL, customerKey + [.text(user), .integer(limit)])
            .map(StoredForm.ledgerEntry)
        let statuses = try await store.query(Self.customerStatusesSQL, customerKey + [.text(user)])
            .map(StoredForm.subscriptionStatus)
        return (entries, statuses)
    }

    /// A user's subscription statuses in one environment (binds: app, environment, user).
    static let customerStatusesSQL = """
        SELECT s.* FROM subscription_statuses s JOIN ledger_claims c ON c.app_id = s.app_id AND c.store = s.store
            AND c.environment = s.environment AND c.original_transaction_id = s.original_transaction_id
        WHERE s.app_id = ? AND s.environment = ? AND c.app_user_id = ?
        """

    /// A user's ledger rows in one environment (binds: app, environment, user, limit).
    static let customerFactsSQL = """
        \(SQLiteStore.ledgerSelect(byUser: true, byOriginal: false))
        WHERE t.app_id = ? AND t.environment = ? AND c.app_user_id = ? LIMIT ?
        """

    func clearCustomerDue(of users: [String]) async throws {
        for chunk in users.chunked(StoredForm.ledgerChunk) {
            _ = try await store.query(
                """
                UPDATE customer_snapshots SET next_change_at = NULL
                WHERE app_id = ? AND environment = ? AND app_user_id IN (\(SQLiteStore.placeholders(chunk.count)))
                """, customerKey + chunk.map { .text($0) })
        }
    }

    /// The transaction holds the database's write lock: the row needs no lock of its own.
    func lockCustomerSnapshot(of user: String, at date: Date) async throws -> String? {
        _ = try await store.query(
            """
            INSERT INTO customer_snapshots (app_id, environment, app_user_id, updated_at) VALUES (?, ?, ?, ?)
            ON CONFLICT DO NOTHING
            """, customerKey + [.text(user), .millis(date)])
        return try await store.query(
            "SELECT entitlements FROM customer_snapshots WHERE app_id = ? AND environment = ? AND app_user_id = ?",
            customerKey + [.text(user)]
        ).first?.optionalText("entitlements")
    }

    func saveCustomerSnapshot(
        of user: String, entitlements: String, nextChangeAt: Int64?, changed: Bool, at date: Date
    ) async throws -> Int64 {
        try await store.query(
            """
            UPDATE customer_snapshots SET entitlements = ?, next_change_at = ?, updated_at = ?, sequence = sequence + ?
            WHERE app_id = ? AND environment = ? AND app_user_id = ?
            RETURNING sequence
            """,
            [
                .text(entitlements), nextChangeAt.map { .integer(Int($0)) } ?? .null, .millis(date),
                .integer(changed ? 1 : 0),
            ] + customerKey + [.text(user)]
        ).first.map { Int64(try $0.int("sequence")) } ?? 0
    }

    /// The ledger's key (`app_id = ? AND store = ? AND environment = ?`).
    var key: [SQLiteData] { [.uuid(appID), .text(purchaseStore.rawValue), .text(environment.rawValue)] }

    /// A customer's key (`app_id = ? AND environment = ?`), across stores.
    var customerKey: [SQLiteData] { [.uuid(appID), .text(environment.rawValue)] }

    /// Each statement is a hop to the connection's thread and back: one read per chunk of
    /// ``StoredForm/ledgerChunk``.
    func claimants(of originalTransactionIDs: [String]) async throws -> [String: String] {
        var claimants: [String: String] = [:]
        for chunk in originalTransactionIDs.chunked(StoredForm.ledgerChunk) {
            let rows = try await store.query(
                """
                SELECT original_transaction_id, app_user_id FROM ledger_claims
                WHERE app_id = ? AND store = ? AND environment = ?
                    AND original_transaction_id IN (\(SQLiteStore.placeholders(chunk.count)))
                """, key + chunk.map { .text($0) })
            for row in rows {
                claimants[try row.text("original_transaction_id")] = try row.text("app_user_id")
            }
        }
        return claimants
    }

    /// One multi-row insert of the pairs (statement order: the first pair of an original wins), one read.
    func claims(_ claims: [(original: String, user: String)], reading originals: [String], at date: Date)
        async throws -> [String: String]
    {
        for chunk in claims.chunked(StoredForm.ledgerChunk) {
            _ = try await store.query(
                """
                INSERT INTO ledger_claims (app_id, store, environment, original_transaction_id, app_user_id, claimed_at)
                VALUES \(Array(repeating: "(?, ?, ?, ?, ?, ?)", count: chunk.count).joined(separator: ", "))
                ON CONFLICT DO NOTHING
                """, chunk.flatMap { key + [.text($0.original), .text($0.user), .millis(date)] })
        }
        return try await claimants(of: originals)
    }

    func moveClaim(of originalTransactionID: String, to user: String, at date: Date) async throws {
        _ = try await store.query(
            """
            UPDATE ledger_claims SET app_user_id = ?, claimed_at = ?
            WHERE app_id = ? AND store = ? AND environment = ? AND original_transaction_id = ?
            """, [.text(user), .millis(date)] + key + [.text(originalTransactionID)])
    }

    /// One multi-row statement per chunk of ``StoredForm/ledgerChunk`` entries.
    func insertIfAbsent(_ entries: [LedgerEntry]) async throws -> Set<String> {
        var inserted = Set<String>()
        for chunk in entries.chunked(StoredForm.ledgerChunk) {
            let rows = try await store.query(
                """
                INSERT INTO ledger_transactions (app_id, store, environment, transaction_id, original_transaction_id, product_id,
                    purchase_date, original_purchase_date, expires_date, quantity, web_order_line_item_id, ownership_type,
                    revocation_date, revocation_reason, revocation_type, revocation_percentage, first_seen_at,
                    last_seen_at, first_request_id, delivered_at, product_type, offer_type, offer_discount_type,
                    app_transaction_id, offer_period, billing_plan_type, commitment_period, commitment_periods,
                    commitment_expires_date, commitment_price, purchase_token, package_name, linked_purchase_token,
                    google_ack, google_ack_due_at, revocation_as_of, offered_at)
                VALUES \(Array(repeating: Self.rowPlaceholders, count: chunk.count).joined(separator: ", "))
                ON CONFLICT DO NOTHING RETURNING transaction_id
                """, chunk.flatMap(values))
            for row in rows { inserted.insert(try row.text("transaction_id")) }
        }
        return inserted
    }

    private static let rowPlaceholders = "(" + Array(repeating: "?", count: 37).joined(separator: ", ") + ")"

    /// The 37 values of an entry's row, in the insert's column order.
    private func values(_ entry: LedgerEntry) -> [SQLiteData] {
        let transaction = entry.transaction
        let optional: (Int64?) -> SQLiteData = { $0.map { .integer(Int($0)) } ?? .null }
        let acknowledgement = StoredForm.googleAck(entry)
        return key + [
            .text(transaction.transactionID), .text(transaction.originalTransactionID),
            .text(transaction.productID), optional(transaction.purchaseDate),
            optional(transaction.originalPurchaseDate), optional(transaction.expiresDate),
            .integer(transaction.quantity), transaction.webOrderLineItemID.map { .text($0) } ?? .null,
            transaction.inAppOwnershipType.map { .text($0) } ?? .null, optional(transaction.revocationDate),
            optional(transaction.revocationReason.map(Int64.init)),
            transaction.revocationType.map { .text($0) } ?? .null,
            optional(transaction.revocationPercentage.map(Int64.init)), .millis(entry.firstSeenAt),
            .millis(entry.lastSeenAt), .text(entry.firstRequestID), .millis(entry.deliveredAt),
            transaction.productType.map { .text($0) } ?? .null, optional(transaction.offerType.map(Int64.init)),
            transaction.offerDiscountType.map { .text($0) } ?? .null,
            transaction.appTransactionID.map { .text($0) } ?? .null, transaction.offerPeriod.map { .text($0) } ?? .null,
            transaction.billingPlanType.map { .text($0) } ?? .null,
            optional(transaction.commitment?.billingPeriodNumber.map(Int64.init)),
            optional(transaction.commitment?.totalBillingPeriods.map(Int64.init)),
            optional(transaction.commitment?.expiresDate), optional(transaction.commitment?.price),
            transaction.purchaseToken.map { .text($0) } ?? .null, transaction.packageName.map { .text($0) } ?? .null,
            transaction.linkedPurchaseToken.map { .text($0) } ?? .null,
            acknowledgement.state.map { .text($0) } ?? .null, .millis(acknowledgement.due),
            optional(entry.revocationAsOf), .millis(entry.offeredAt),
        ]
    }

    func originals(ofPurchaseTokens tokens: [String]) async throws -> [(
        original: String, productID: String, expires: Int64?
    )] {
        guard !tokens.isEmpty else { return [] }
        return try await store.query(
            """
            SELECT original_transaction_id, min(product_id) AS product_id, max(expires_date) AS expires_date
            FROM ledger_transactions
            WHERE app_id = ? AND store = ? AND environment = ?
                AND purchase_token IN (\(SQLiteStore.placeholders(tokens.count)))
            GROUP BY original_transaction_id ORDER BY original_transaction_id
            """, key + tokens.map { .text($0) }
        ).map {
            (
                try $0.text("original_transaction_id"), try $0.text("product_id"),
                try $0.optionalInt("expires_date").map(Int64.init)
            )
        }
    }

    func voids(of transactionIDs: [String]) async throws -> [String: PurchaseVoid] {
        guard purchaseStore == .googlePlay else { return [:] }
        var rows: [SQLiteRow] = []
        for chunk in transactionIDs.chunked(StoredForm.ledgerChunk) {
            rows += try await store.query(
                """
                SELECT order_id, voided_time, voided_reason, voided_quantity FROM google_voided_purchases
                WHERE app_id = ? AND order_id IN (\(SQLiteStore.placeholders(chunk.count)))
                """, [.uuid(appID)] + chunk.map { .text($0) })
        }
        return try StoredForm.voids(rows)
    }

    func entries(transactionIDs: [String]) async throws -> [String: LedgerEntry] {
        var entries: [String: LedgerEntry] = [:]
        for chunk in transactionIDs.chunked(StoredForm.ledgerChunk) {
            let rows = try await store.query(
                """
                \(StoredForm.ledgerSelect)
                WHERE t.app_id = ? AND t.store = ? AND t.environment = ? AND t.transaction_id IN (\(SQLiteStore.placeholders(chunk.count)))
                """, key + chunk.map { .text($0) })
            for row in rows {
                let entry = try StoredForm.ledgerEntry(row)
                entries[entry.transaction.transactionID] = entry
            }
        }
        return entries
    }

    func markDelivered(_ transactionID: String, at date: Date) async throws -> Bool {
        !(try await store.query(
            """
            UPDATE ledger_transactions SET \(StoredForm.delivering(at: "?"))
            WHERE app_id = ? AND store = ? AND environment = ? AND transaction_id = ? AND delivered_at IS NULL
                AND revocation_date IS NULL
            RETURNING transaction_id
            """, [.millis(date), .millis(date)] + key + [.text(transactionID)]
        ).isEmpty)
    }

    func deliversOnceAsStored() async throws -> Bool {
        // Inside `BEGIN IMMEDIATE`: one writer at a time, so the switch committed before this read or commits after
        // this transaction.
        try await store.query("SELECT delivery_mode FROM apps WHERE id = ?", [.uuid(appID)]).first.map {
            try $0.text("delivery_mode")
        } == "once"
    }

    func markOffered(_ transactionID: String, at date: Date) async throws {
        _ = try await store.query(
            """
            UPDATE ledger_transactions SET offered_at = ?
            WHERE app_id = ? AND store = ? AND environment = ? AND transaction_id = ? AND offered_at IS NULL
                AND delivered_at IS NULL AND revocation_date IS NULL
            """, [.millis(date)] + key + [.text(transactionID)])
    }

    @discardableResult
    func touch(_ transactionID: String, at date: Date, revocation: PurchaseTransaction?) async throws -> Bool {
        guard let revocation else {
            _ = try await store.query(
                """
                UPDATE ledger_transactions SET last_seen_at = ?
                WHERE app_id = ? AND store = ? AND environment = ? AND transaction_id = ?
                """,
                [.millis(date)] + key + [.text(transactionID)])
            return false
        }
        // First only where the row is not revoked, or for a smaller part (whether this call revokes it), else the
        // stamp alone.
        for condition in [StoredForm.revokesMore(revocation), "1"] {
            let written = try await store.query(
                """
                UPDATE ledger_transactions SET last_seen_at = ?, revocation_date = ?, revocation_reason = ?,
                    revocation_type = ?, revocation_percentage = ?, revocation_as_of = ?
                WHERE app_id = ? AND store = ? AND environment = ? AND transaction_id = ? AND \(condition)
                    AND (revocation_as_of IS NULL OR revocation_as_of <= ?)
                RETURNING transaction_id
                """,
                [
                    .millis(date), revocation.revocationDate.map { .integer(Int($0)) } ?? .null,
                    revocation.revocationReason.map { .integer($0) } ?? .null,
                    revocation.revocationType.map { .text($0) } ?? .null,
                    revocation.revocationPercentage.map { .integer($0) } ?? .null,
                    revocation.signedDate.map { .integer(Int($0)) } ?? .null,
                ] + key + [.text(transactionID), revocation.signedDate.map { .integer(Int($0)) } ?? .null])
            if !written.isEmpty { return condition != "1" }
        }
        return false
    }
}

extension Array {
    /// The array in consecutive slices of at most `size` elements.
    func chunked(_ size: Int) -> [ArraySlice<Element>] {
        stride(from: 0, to: count, by: size).map { self[$0..<Swift.min($0 + size, count)] }
    }
}
