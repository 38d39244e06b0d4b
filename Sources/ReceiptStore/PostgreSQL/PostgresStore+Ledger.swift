import Foundation
import PostgresNIO
import ReceiptCore
import ReceiptService

/// The ledger concern (``LedgerStore``): transactions, claims, deliveries. Inserts are `ON CONFLICT DO NOTHING` under
/// the primary key, so concurrent recordings on any number of servers insert each transaction once; a change to an
/// existing row's claim, revocation or delivery is announced inside the transaction that makes it
/// (``announceChange(on:)``), delivered when it commits.
extension PostgresStore: LedgerStore, GroupCommittingStore {
    /// The notifications on ``PostgresStore/changeChannel``, which every announced ledger change sends (with plan and
    /// account changes, which are rare).
    public func ledgerChangeMarker() -> Int? { changeMarker() }

    /// Recordings are committed in groups (``LedgerGroupCommit``): each server sends one transaction at a time,
    /// whose commit (and its flush to disk) the group shares; exactness across servers is the primary key's.
    public func record(_ recording: LedgerRecording) async throws -> [LedgerRecorded] {
        guard !recording.transactions.isEmpty || !recording.statuses.isEmpty else { return [] }
        return try await ledgerGroups.record(recording, on: self)
    }

    public func dueCustomers(dueBy now: Date, limit: Int) async throws -> [DueCustomer] {
        try await run {
            try await rows(
                """
                SELECT app_id, environment, app_user_id FROM customer_snapshots
                WHERE next_change_at <= \(now.millisecondsSince1970) ORDER BY next_change_at LIMIT \(limit)
                """
            ).map(StoredForm.dueCustomer)
        }
    }

    public func tellCustomers(
        appID: UUID, environment: StoreEnvironment, users: [String], catalog: [CatalogProduct]?, at now: Date
    ) async throws -> [WebhookEvent] {
        try await transaction { connection in
            try await CustomerChanges.tell(
                users, appID: appID, environment: environment, catalog: catalog, at: now,
                // A customer's facts span both stores: telling reads no ledger by the writer's store.
                with: PostgresLedgerWriter(
                    store: self, connection: connection, appID: appID, purchaseStore: Store.appStore.rawValue,
                    environment: environment.rawValue))
        }
    }

    /// Bounds the ledger transaction on `connection` (money review M11): it waits for a lock at most
    /// ``ledgerLockTimeout``, runs a statement at most twice that, and is rolled back by the database if its server
    /// goes silent in the middle of it (a peer partitioned from the database holds no row lock for longer). All of it
    /// well below ``StoreDeadline/committingLimit`` (60 s at least): a transaction stuck behind a peer's lock is
    /// aborted rather than committed after its callers were answered 503.
    func boundLedgerTransaction(on connection: PostgresConnection) async throws {
        let lock = "\(ledgerLockTimeout.components.seconds * 1_000)ms"
        let statement = "\(ledgerLockTimeout.components.seconds * 2_000)ms"
        try await rows(
            """
            SELECT set_config('lock_timeout', \(lock), true), set_config('statement_timeout', \(statement), true),
                set_config('idle_in_transaction_session_timeout', \(statement), true)
            """, on: connection)
    }

    func commitLedgerGroup(_ recordings: [LedgerRecording]) async throws -> [LedgerGroupCommit.Outcome] {
        try await transaction { connection in
            try await self.boundLedgerTransaction(on: connection)
            let outcomes = try await LedgerRecorder.recordTogether(recordings) { recording in
                PostgresLedgerWriter(
                    store: self, connection: connection, appID: recording.appID,
                    purchaseStore: recording.store.rawValue, environment: recording.environment.rawValue)
            }
            if outcomes.contains(where: \.changed) { try await self.announceChange(on: connection) }
            if StoredForm.changesCustomers(recordings, outcomes.map(\.result)) {
                try await self.announceCustomerChange(on: connection)
            }
            if StoredForm.statesStatuses(recordings) { try await self.announceStatusChange(on: connection) }
            return outcomes
        }
    }

    func commitLedgerRecording(_ recording: LedgerRecording) async throws -> LedgerGroupCommit.Outcome {
        try await transaction { connection in
            try await self.boundLedgerTransaction(on: connection)
            let writer = PostgresLedgerWriter(
                store: self, connection: connection, appID: recording.appID,
                purchaseStore: recording.store.rawValue, environment: recording.environment.rawValue)
            let outcome = try await LedgerRecorder.record(recording, with: writer)
            if outcome.changed { try await self.announceChange(on: connection) }
            if StoredForm.changesCustomers([recording], [outcome.result]) {
                try await self.announceCustomerChange(on: connection)
            }
            if StoredForm.statesStatuses([recording]) { try await self.announceStatusChange(on: connection) }
            return outcome
        }
    }

    /// Nothing after the commit: PostgreSQL's announcement went inside the transaction.
    func announceLedgerChange() {}

    public func confirmDelivery(
        appID: UUID, environment: StoreEnvironment?, transactionIDs: [String], at date: Date,
        finishingWithApple: Bool
    ) async throws -> [LedgerEntry] {
        let environment = environment?.rawValue
        let finishState: String? = finishingWithApple ? "pending" : nil
        let finishDue: Date? = finishingWithApple ? date : nil
        guard !transactionIDs.isEmpty else { return [] }
        return try await transaction { connection in
            let updated = try await self.rows(
                """
                UPDATE ledger_transactions SET \(delivering: date),
                    apple_finish = CASE WHEN store = 'app_store' AND environment <> 'Xcode' THEN \(finishState) END,
                    apple_finish_due_at = CASE WHEN store = 'app_store' AND environment <> 'Xcode'
                        THEN \(finishDue)::timestamptz END
                WHERE app_id = \(appID) AND transaction_id = ANY(\(transactionIDs)) AND delivered_at IS NULL
                    AND revocation_date IS NULL AND (\(environment)::text IS NULL OR environment = \(environment))
                RETURNING transaction_id
                """, on: connection)
            if !updated.isEmpty { try await self.announceChange(on: connection) }
            return try await self.rows(
                """
                \(unescaped: StoredForm.ledgerSelect) WHERE t.app_id = \(appID) AND t.transaction_id = ANY(\(transactionIDs))
                    AND (\(environment)::text IS NULL OR t.environment = \(environment))
                """,
                on: connection
            ).map(StoredForm.ledgerEntry)
        }
    }

    public func updateApp(_ app: App, settlingOffersAt date: Date) async throws -> Bool {
        try await transaction { connection in
            guard try await self.updateApp(app, on: connection) else { return false }
            let settled = try await self.rows(
                """
                UPDATE ledger_transactions SET \(delivering: date)
                WHERE app_id = \(app.id) AND offered_at IS NOT NULL AND delivered_at IS NULL
                    AND revocation_date IS NULL
                RETURNING transaction_id
                """, on: connection
            ).count
            if settled > 0 { try await self.announceChange(on: connection) }
            return true
        }
    }

    public func ledgerEntries(_ query: LedgerQuery) async throws -> [LedgerEntry] {
        // Absent filters are NULL and match everything; one statement, planned once.
        let after = query.after
        // The position's time in exact milliseconds, as inserts store it (a Date would round through a double).
        let afterMilliseconds = after?.firstSeen
        return try await run {
            try await rows(
                """
                \(unescaped: StoredForm.ledgerSelect)
                WHERE t.app_id = \(query.appID)
                    AND (\(query.user)::text IS NULL OR c.app_user_id = \(query.user))
                    AND (\(query.originalTransactionID)::text IS NULL
                        OR t.original_transaction_id = \(query.originalTransactionID))
                    AND (\(query.purchaseToken)::text IS NULL OR t.purchase_token = \(query.purchaseToken))
                    AND (\(query.since)::timestamptz IS NULL OR t.first_seen_at >= \(query.since))
                    AND (\(query.until)::timestamptz IS NULL OR t.first_seen_at < \(query.until))
                    AND (\(afterMilliseconds)::int8 IS NULL
                        OR (t.first_seen_at, t.environment, t.transaction_id)
                            > (TIMESTAMPTZ 'epoch' + \(afterMilliseconds)::int8 * INTERVAL '1 millisecond',
                                \(after?.environment), \(after?.transactionID)))
                ORDER BY t.first_seen_at, t.environment, t.transaction_id LIMIT \(query.limit)
                """
            ).map(StoredForm.ledgerEntry)
        }
    }

    public func setClaim(appID: UUID, originalTransactionID: String, user: String?, at date: Date) async throws
        -> Bool
    {
        try await transaction { connection in
            let environments = try await self.rows(
                """
                SELECT DISTINCT environment FROM ledger_transactions
                WHERE app_id = \(appID) AND original_transaction_id = \(originalTransactionID)
                """, on: connection)
            guard !environments.isEmpty else { return false }
            if let user {
                try await self.rows(
                    """
                    INSERT INTO ledger_claims (app_id, store, environment, original_transaction_id, app_user_id,
                        claimed_at)
                    SELECT DISTINCT app_id, store, environment, original_transaction_id, \(user), \(date)
                    FROM ledger_transactions WHERE app_id = \(appID) AND original_transaction_id = \(originalTransactionID)
                    ON CONFLICT (app_id, store, environment, original_transaction_id)
                    DO UPDATE SET app_user_id = excluded.app_user_id, claimed_at = excluded.claimed_at
                    """, on: connection)
            } else {
                try await self.rows(
                    """
                    DELETE FROM ledger_claims
                    WHERE app_id = \(appID) AND original_transaction_id = \(originalTransactionID)
                    """, on: connection)
            }
            try await self.announceChange(on: connection)
            return true
        }
    }
}

/// ``LedgerWriting`` on the connection of the transaction ``PostgresStore/record(_:)`` holds: the ledger of one app,
/// store and environment; a customer's facts and snapshot span both stores (the app and environment's).
struct PostgresLedgerWriter: LedgerWriting {
    let store: PostgresStore
    let connection: PostgresConnection
    let appID: UUID
    /// The store whose transactions, claims and statuses it writes (``Store``'s raw value).
    let purchaseStore: String
    let environment: String

    func customerFacts(of user: String, limit: Int) async throws -> (
        entries: [LedgerEntry], statuses: [SubscriptionStatus]
    ) {
        let entries = try await store.rows(
            """
            \(unescaped: StoredForm.ledgerSelect)
            WHERE t.app_id = \(appID) AND t.environment = \(environment) AND c.app_user_id = \(user) LIMIT \(limit)
            """, on: connection
        ).map(StoredForm.ledgerEntry)
        let statuses = try await store.rows(
            """
            SELECT s.* FROM subscription_statuses s JOIN ledger_claims c ON c.app_id = s.app_id AND c.store = s.store
                AND c.environment = s.environment AND c.original_transaction_id = s.original_transaction_id
            WHERE s.app_id = \(appID) AND s.environment = \(environment) AND c.app_user_id = \(user)
            """, on: connection
        ).map(StoredForm.subscriptionStatus)
        return (entries, statuses)
    }

    func clearCustomerDue(of users: [String]) async throws {
        try await store.rows(
            """
            UPDATE customer_snapshots SET next_change_at = NULL
            WHERE app_id = \(appID) AND environment = \(environment) AND app_user_id = ANY(\(users)::text[])
            """, on: connection)
    }

    /// Created if absent, then locked: a second server telling of the same user waits for this transaction.
    func lockCustomerSnapshot(of user: String, at date: Date) async throws -> String? {
        try await store.rows(
            """
            INSERT INTO customer_snapshots (app_id, environment, app_user_id, updated_at)
            VALUES (\(appID), \(environment), \(user), \(date)) ON CONFLICT DO NOTHING
            """, on: connection)
        return try await store.rows(
            """
            SELECT entitlements FROM customer_snapshots
            WHERE app_id = \(appID) AND environment = \(environment) AND app_user_id = \(user) FOR UPDATE
            """, on: connection
        ).first?.optionalText("entitlements")
    }

    func saveCustomerSnapshot(
        of user: String, entitlements: String, nextChangeAt: Int64?, changed: Bool, at date: Date
    ) async throws -> Int64 {
        let step: Int64 = changed ? 1 : 0
        return try await store.rows(
            """
            UPDATE customer_snapshots SET entitlements = \(entitlements), next_change_at = \(nextChangeAt),
                updated_at = \(date), sequence = sequence + \(step)
            WHERE app_id = \(appID) AND environment = \(environment) AND app_user_id = \(user)
            RETURNING sequence
            """, on: connection
        ).first.map { Int64(try $0.int("sequence")) } ?? 0
    }

    /// One statement reads them all, locked until the transaction ends (a claim about to be moved stays put).
    func claimants(of originalTransactionIDs: [String]) async throws -> [String: String] {
        var claimants: [String: String] = [:]
        let rows = try await store.rows(
            """
            SELECT original_transaction_id, app_user_id FROM ledger_claims
            WHERE app_id = \(appID) AND store = \(purchaseStore) AND environment = \(environment)
                AND original_transaction_id = ANY(\(originalTransactionIDs)::text[])
            ORDER BY original_transaction_id FOR UPDATE
            """, on: connection)
        for row in rows {
            claimants[try row["original_transaction_id"].decode(String.self)] = try row["app_user_id"].decode(
                String.self)
        }
        return claimants
    }

    /// One statement for every pair (the first pair of an original wins; rows go in original-id order, so two
    /// servers' groups take their locks in one order), one read.
    func claims(_ claims: [(original: String, user: String)], reading originals: [String], at date: Date)
        async throws -> [String: String]
    {
        if !claims.isEmpty {
            let claimed = claims.map(\.original)
            let users = claims.map(\.user)
            try await store.rows(
                """
                INSERT INTO ledger_claims (app_id, store, environment, original_transaction_id, app_user_id, claimed_at)
                SELECT \(appID), \(purchaseStore), \(environment), c.original, c.app_user, \(date)
                FROM UNNEST(\(claimed)::text[], \(users)::text[]) WITH ORDINALITY AS c(original, app_user, position)
                ORDER BY c.original, c.position
                ON CONFLICT DO NOTHING
                """, on: connection)
        }
        return try await claimants(of: originals)
    }

    func moveClaim(of originalTransactionID: String, to user: String, at date: Date) async throws {
        try await store.rows(
            """
            UPDATE ledger_claims SET app_user_id = \(user), claimed_at = \(date)
            WHERE app_id = \(appID) AND store = \(purchaseStore) AND environment = \(environment)
                AND original_transaction_id = \(originalTransactionID)
            """, on: connection)
    }

    /// Every entry in one statement: the values travel as arrays, one per column, unnested in the entries' order
    /// (sorted by transaction id, so concurrent recordings lock rows in one order). Absent values travel as a sentinel
    /// that `NULLIF` turns back into NULL (arrays of optionals are not encodable): `Int64.min` for numbers, U+0001
    /// (never in Apple's ids or names) for text. Each entry keeps its own request's time and id (a group's entries
    /// come from several requests).
    func insertIfAbsent(_ entries: [LedgerEntry]) async throws -> Set<String> {
        guard !entries.isEmpty else { return [] }
        let (none, noText) = (PostgresStore.absentNumber, PostgresStore.absentText)
        let transactions = entries.map(\.transaction)
        let ids = transactions.map(\.transactionID)
        let originals = transactions.map(\.originalTransactionID)
        let products = transactions.map(\.productID)
        let purchased = transactions.map { $0.purchaseDate ?? none }
        let originallyPurchased = transactions.map { $0.originalPurchaseDate ?? none }
        let expires = transactions.map { $0.expiresDate ?? none }
        let quantities = transactions.map { Int64($0.quantity) }
        let lineItems = transactions.map { $0.webOrderLineItemID ?? noText }
        let ownership = transactions.map { $0.inAppOwnershipType ?? noText }
        let revoked = transactions.map { $0.revocationDate ?? none }
        let reasons = transactions.map { $0.revocationReason.map(Int64.init) ?? none }
        let types = transactions.map { $0.revocationType ?? noText }
        let percentages = transactions.map { $0.revocationPercentage.map(Int64.init) ?? none }
        let kinds = transactions.map { $0.productType ?? noText }
        let offers = transactions.map { $0.offerType.map(Int64.init) ?? none }
        let discounts = transactions.map { $0.offerDiscountType ?? noText }
        let appTransactions = transactions.map { $0.appTransactionID ?? noText }
        let offerPeriods = transactions.map { $0.offerPeriod ?? noText }
        let plans = transactions.map { $0.billingPlanType ?? noText }
        let commitmentPeriod = transactions.map { $0.commitment?.billingPeriodNumber.map(Int64.init) ?? none }
        let commitmentPeriods = transactions.map { $0.commitment?.totalBillingPeriods.map(Int64.init) ?? none }
        let commitmentExpires = transactions.map { $0.commitment?.expiresDate ?? none }
        let commitmentPrice = transactions.map { $0.commitment?.price ?? none }
        let tokens = transactions.map { $0.purchaseToken ?? noText }
        let packages = transactions.map { $0.packageName ?? noText }
        let linked = transactions.map { $0.linkedPurchaseToken ?? noText }
        let acks = entries.map { StoredForm.googleAck($0).state ?? noText }
        let revocationStamps = entries.map { $0.revocationAsOf ?? none }
        let delivered = entries.map { $0.deliveredAt != nil }
        let offered = entries.map { $0.offeredAt != nil }
        let seen = entries.map { $0.firstSeenAt.millisecondsSince1970 }
        let requests = entries.map(\.firstRequestID)
        let rows = try await store.rows(
            """
            INSERT INTO ledger_transactions (app_id, store, environment, transaction_id, original_transaction_id, product_id,
                purchase_date, original_purchase_date, expires_date, quantity, web_order_line_item_id, ownership_type,
                revocation_date, revocation_reason, revocation_type, revocation_percentage, first_seen_at,
                last_seen_at, first_request_id, delivered_at, product_type, offer_type, offer_discount_type,
                app_transaction_id, offer_period, billing_plan_type, commitment_period, commitment_periods,
                commitment_expires_date, commitment_price, purchase_token, package_name, linked_purchase_token,
                google_ack, google_ack_due_at, revocation_as_of, offered_at)
            SELECT \(appID), \(purchaseStore), \(environment), t.id, t.original, t.product, NULLIF(t.purchased, \(none)),
                NULLIF(t.originally, \(none)), NULLIF(t.expires, \(none)), t.quantity, NULLIF(t.line_item, \(noText)),
                NULLIF(t.ownership, \(noText)), NULLIF(t.revoked, \(none)), NULLIF(t.reason, \(none)),
                NULLIF(t.type, \(noText)), NULLIF(t.percentage, \(none)), seen_at.at, seen_at.at, t.request,
                CASE WHEN t.delivered THEN seen_at.at END, NULLIF(t.kind, \(noText)), NULLIF(t.offer, \(none)),
                NULLIF(t.discount, \(noText)), NULLIF(t.app_transaction, \(noText)),
                NULLIF(t.offer_period, \(noText)), NULLIF(t.plan, \(noText)), NULLIF(t.commitment_period, \(none)),
                NULLIF(t.commitment_periods, \(none)), NULLIF(t.commitment_expires, \(none)),
                NULLIF(t.commitment_price, \(none)), NULLIF(t.token, \(noText)), NULLIF(t.package, \(noText)),
                NULLIF(t.linked, \(noText)), NULLIF(t.ack, \(noText)), CASE WHEN t.ack = 'pending' THEN seen_at.at END,
                NULLIF(t.revocation_as_of, \(none)), CASE WHEN t.offered THEN seen_at.at END
            FROM UNNEST(\(ids)::text[], \(originals)::text[], \(products)::text[], \(purchased)::int8[],
                \(originallyPurchased)::int8[], \(expires)::int8[], \(quantities)::int8[], \(lineItems)::text[],
                \(ownership)::text[], \(revoked)::int8[], \(reasons)::int8[], \(types)::text[], \(percentages)::int8[],
                \(delivered)::bool[], \(seen)::int8[], \(requests)::text[], \(kinds)::text[], \(offers)::int8[],
                \(discounts)::text[], \(appTransactions)::text[], \(offerPeriods)::text[], \(plans)::text[],
                \(commitmentPeriod)::int8[], \(commitmentPeriods)::int8[], \(commitmentExpires)::int8[],
                \(commitmentPrice)::int8[], \(tokens)::text[], \(packages)::text[], \(linked)::text[],
                \(acks)::text[], \(revocationStamps)::int8[], \(offered)::bool[])
                WITH ORDINALITY AS t(id, original, product, purchased, originally, expires, quantity, line_item,
                    ownership, revoked, reason, type, percentage, delivered, seen, request, kind, offer, discount,
                    app_transaction, offer_period, plan, commitment_period, commitment_periods, commitment_expires,
                    commitment_price, token, package, linked, ack, revocation_as_of, offered, position),
                -- Exact milliseconds (a division by 1000.0 would round through a double).
                LATERAL (SELECT TIMESTAMPTZ 'epoch' + t.seen * INTERVAL '1 millisecond' AS at) AS seen_at
            ORDER BY t.position
            ON CONFLICT DO NOTHING RETURNING transaction_id
            """, on: connection)
        return Set(try rows.map { try $0["transaction_id"].decode(String.self) })
    }

    func originals(ofPurchaseTokens tokens: [String]) async throws -> [(
        original: String, productID: String, expires: Int64?
    )] {
        guard !tokens.isEmpty else { return [] }
        return try await store.rows(
            """
            SELECT original_transaction_id, min(product_id) AS product_id, max(expires_date) AS expires_date
            FROM ledger_transactions
            WHERE app_id = \(appID) AND store = \(purchaseStore) AND environment = \(environment)
                AND purchase_token = ANY(\(tokens)::text[])
            GROUP BY original_transaction_id ORDER BY original_transaction_id
            """, on: connection
        ).map {
            (
                try $0.text("original_transaction_id"), try $0.text("product_id"),
                try $0.optionalInt("expires_date").map(Int64.init)
            )
        }
    }

    func voids(of transactionIDs: [String]) async throws -> [String: PurchaseVoid] {
        guard purchaseStore == Store.googlePlay.rawValue, !transactionIDs.isEmpty else { return [:] }
        return try StoredForm.voids(
            try await store.rows(
                """
                SELECT order_id, voided_time, voided_reason, voided_quantity FROM google_voided_purchases
                WHERE app_id = \(appID) AND order_id = ANY(\(transactionIDs))
                """, on: connection))
    }

    func entries(transactionIDs: [String]) async throws -> [String: LedgerEntry] {
        guard !transactionIDs.isEmpty else { return [:] }
        var entries: [String: LedgerEntry] = [:]
        let rows = try await store.rows(
            """
            \(unescaped: StoredForm.ledgerSelect)
            WHERE t.app_id = \(appID) AND t.store = \(purchaseStore) AND t.environment = \(environment)
                AND t.transaction_id = ANY(\(transactionIDs))
            """, on: connection)
        for row in rows {
            let entry = try StoredForm.ledgerEntry(row)
            entries[entry.transaction.transactionID] = entry
        }
        return entries
    }

    func markDelivered(_ transactionID: String, at date: Date) async throws -> Bool {
        !(try await store.rows(
            """
            UPDATE ledger_transactions SET \(delivering: date)
            WHERE app_id = \(appID) AND store = \(purchaseStore) AND environment = \(environment)
                AND transaction_id = \(transactionID) AND delivered_at IS NULL AND revocation_date IS NULL
            RETURNING transaction_id
            """, on: connection
        ).isEmpty)
    }

    func deliversOnceAsStored() async throws -> Bool {
        // A share lock: a switch that updated the app's row and has not committed is waited for (its settle could not
        // see this transaction's offers), and a switch updating the row later waits until this transaction commits
        // (its settle then sees them).
        try await store.rows("SELECT delivery_mode FROM apps WHERE id = \(appID) FOR SHARE", on: connection).first
            .map { try $0["delivery_mode"].decode(String.self) } == "once"
    }

    func markOffered(_ transactionID: String, at date: Date) async throws {
        try await store.rows(
            """
            UPDATE ledger_transactions SET offered_at = \(date)
            WHERE app_id = \(appID) AND store = \(purchaseStore) AND environment = \(environment)
                AND transaction_id = \(transactionID) AND offered_at IS NULL AND delivered_at IS NULL
                AND revocation_date IS NULL
            """, on: connection)
    }

    @discardableResult
    func touch(_ transactionID: String, at date: Date, revocation: PurchaseTransaction?) async throws -> Bool {
        guard let revocation else {
            try await store.rows(
                """
                UPDATE ledger_transactions SET last_seen_at = \(date)
                WHERE app_id = \(appID) AND store = \(purchaseStore) AND environment = \(environment)
                    AND transaction_id = \(transactionID)
                """, on: connection)
            return false
        }
        // First only where the row is not revoked, or for a smaller part (a second partial refund): under a concurrent
        // writer's lock, PostgreSQL checks the condition again on the row as that writer left it, so one of two
        // servers revokes (money review M12). Else the stamp.
        for condition in [StoredForm.revokesMore(revocation), "TRUE"] {
            let written = try await store.rows(
                """
                UPDATE ledger_transactions SET last_seen_at = \(date), revocation_date = \(revocation.revocationDate),
                    revocation_reason = \(revocation.revocationReason), revocation_type = \(revocation.revocationType),
                    revocation_percentage = \(revocation.revocationPercentage), revocation_as_of = \(revocation.signedDate)
                WHERE app_id = \(appID) AND store = \(purchaseStore) AND environment = \(environment)
                    AND transaction_id = \(transactionID) AND \(unescaped: condition)
                    AND (revocation_as_of IS NULL OR revocation_as_of <= \(revocation.signedDate))
                RETURNING transaction_id
                """, on: connection)
            if !written.isEmpty { return condition != "TRUE" }
        }
        return false
    }
}

extension PostgresQuery.StringInterpolation {
    /// `StoredForm.delivering(at:)`, the `SET` clause that marks rows delivered, with `date` bound where it appears.
    mutating func appendInterpolation(delivering date: Date) {
        let marker = "\u{0}"
        for (index, part) in StoredForm.delivering(at: marker).split(
            separator: marker, omittingEmptySubsequences: false
        ).enumerated() {
            if index > 0 { appendInterpolation(date) }
            appendLiteral(String(part))
        }
    }
}
