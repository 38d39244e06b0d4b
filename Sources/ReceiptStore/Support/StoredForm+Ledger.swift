import Foundation
import ReceiptCore
import ReceiptService

extension StoredForm {
    /// The condition (the same text in both dialects) under which `revocation` revokes a row more than it is: not
    /// revoked, or revoked for a smaller part than `revocation`'s percentage (a whole revocation is 100 %).
    static func revokesMore(_ revocation: PurchaseTransaction) -> String {
        "(revocation_date IS NULL OR COALESCE(revocation_percentage, 100000) < \(revocation.revocationPercentage ?? 100_000))"
    }

    /// A ledger row from `ledger_transactions`' columns and `claimant`, the claim's user joined by the same query.
    static func ledgerEntry(_ row: some StoredRow) throws -> LedgerEntry {
        var transaction = PurchaseTransaction(
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
            revocationPercentage: try row.optionalInt("revocation_percentage"),
            productType: try row.optionalText("product_type"), offerType: try row.optionalInt("offer_type"),
            offerDiscountType: try row.optionalText("offer_discount_type"))
        transaction.appTransactionID = try row.optionalText("app_transaction_id")
        transaction.offerPeriod = try row.optionalText("offer_period")
        transaction.billingPlanType = try row.optionalText("billing_plan_type")
        let period = try row.optionalInt("commitment_period")
        let periods = try row.optionalInt("commitment_periods")
        let expires = try row.optionalInt("commitment_expires_date").map(Int64.init)
        let price = try row.optionalInt("commitment_price").map(Int64.init)
        transaction.purchaseToken = try row.optionalText("purchase_token")
        transaction.packageName = try row.optionalText("package_name")
        transaction.linkedPurchaseToken = try row.optionalText("linked_purchase_token")
        if period != nil || periods != nil || expires != nil || price != nil {
            transaction.commitment = Commitment(
                billingPeriodNumber: period, totalBillingPeriods: periods, expiresDate: expires, price: price)
        }
        var entry = LedgerEntry(
            appID: try row.uuid("app_id"), store: try enumValue(try row.text("store")),
            environment: try enumValue(try row.text("environment")), transaction: transaction,
            claimant: try row.optionalText("claimant"), firstSeenAt: try row.date("first_seen_at"),
            lastSeenAt: try row.date("last_seen_at"),
            firstRequestID: try row.text("first_request_id"), deliveredAt: try row.optionalDate("delivered_at"),
            appleFinish: try row.optionalText("apple_finish").map { state in
                AppleFinishStatus(
                    state: try enumValue(state), attempts: try row.int("apple_finish_attempts"),
                    lastError: try row.optionalText("apple_finish_error"),
                    finishedAt: try row.optionalDate("apple_finished_at"))
            }, revocationAsOf: try row.optionalInt("revocation_as_of").map(Int64.init))
        entry.offeredAt = try row.optionalDate("offered_at")
        entry.googleAcknowledgement = try row.optionalText("google_ack").map { state in
            AppleFinishStatus(
                state: state == "acknowledged" ? .finished : try enumValue(state),
                attempts: try row.int("google_ack_attempts"), lastError: try row.optionalText("google_ack_error"),
                finishedAt: try row.optionalDate("google_acknowledged_at"))
        }
        return entry
    }

    /// When a delivery makes a row's acknowledgement pending (both dialects): a Google Play row with a token that
    /// neither we nor Google acknowledged yet.
    static let acknowledgesOnDelivery =
        "store = 'google_play' AND purchase_token IS NOT NULL AND google_ack IS NULL"

    /// The `SET` clause of every statement that marks rows delivered (both dialects): `delivered_at`, and where the
    /// delivery makes Google's acknowledgement due, its state and due time; `date` is the dialect's placeholder of the
    /// delivery's date, which appears twice (SQLite binds the date twice; PostgreSQL through
    /// `\(delivering: date)`).
    static func delivering(at date: String) -> String {
        """
        delivered_at = \(date),
            google_ack = CASE WHEN \(acknowledgesOnDelivery) THEN 'pending' ELSE google_ack END,
            google_ack_due_at = CASE WHEN \(acknowledgesOnDelivery) THEN \(date) ELSE google_ack_due_at END
        """
    }

    /// The stored form of a new row's acknowledgement: `google_ack` and when it is first due.
    static func googleAck(_ entry: LedgerEntry) -> (state: String?, due: Date?) {
        switch entry.googleAcknowledgement?.state {
        case .pending?: ("pending", entry.firstSeenAt)
        case .finished?: ("acknowledged", nil)
        case .failed?: ("failed", nil)
        case nil: (nil, nil)
        }
    }

    /// A voided-purchase cursor from its row.
    static func voidedCursor(_ row: some StoredRow) throws -> VoidedCursor {
        VoidedCursor(
            appID: try row.uuid("app_id"), packageName: try row.text("package_name"),
            startTime: try row.optionalInt("start_time").map(Int64.init), pageToken: try row.optionalText("page_token"))
    }

    /// The voids of `google_voided_purchases` rows (`order_id`, `voided_time`, `voided_reason`, `voided_quantity`),
    /// combined by order (``PurchaseVoid/combined(_:)``).
    static func voids(_ rows: [some StoredRow]) throws -> [String: PurchaseVoid] {
        var voids: [String: [PurchaseVoid]] = [:]
        for row in rows {
            voids[try row.text("order_id"), default: []].append(
                PurchaseVoid(
                    voidedAt: Int64(try row.int("voided_time")), reason: try row.optionalInt("voided_reason"),
                    quantity: try row.optionalInt("voided_quantity")))
        }
        return voids.compactMapValues(PurchaseVoid.combined)
    }

    /// A claimed acknowledgement from its ledger row.
    static func googleAcknowledgementTask(_ row: some StoredRow) throws -> GoogleAcknowledgementTask {
        GoogleAcknowledgementTask(
            appID: try row.uuid("app_id"), environment: try enumValue(try row.text("environment")),
            transactionID: try row.text("transaction_id"), packageName: try row.text("package_name"),
            productID: try row.text("product_id"), purchaseToken: try row.text("purchase_token"),
            isSubscription: try row.optionalText("product_type")?.hasSuffix("Subscription") ?? false,
            attempts: try row.int("google_ack_attempts"), deliveredAt: try row.date("delivered_at"),
            purchasedAt: try row.optionalInt("purchase_date").map { Date(millisecondsSince1970: Int64($0)) })
    }

    /// A claimed finish task from its ledger row.
    static func appleFinishTask(_ row: some StoredRow) throws -> AppleFinishTask {
        AppleFinishTask(
            appID: try row.uuid("app_id"), environment: try enumValue(try row.text("environment")),
            transactionID: try row.text("transaction_id"), attempts: try row.int("apple_finish_attempts"),
            confirmedAt: try row.date("delivered_at"))
    }

    /// What an attempt's outcome writes: state, next due time, error.
    /// The state of a success is `finished` for Apple's Finish Transaction, `acknowledged` for Google's
    /// acknowledgement (`google_ack`); both record their attempts alike.
    static func appleFinishColumns(_ outcome: AppleFinishOutcome, finished: String = "finished") -> (
        state: String, due: Date?, error: String?
    ) {
        switch outcome {
        case .finished: (finished, nil, nil)
        case .retry(let next, let error): ("pending", next, String(error.prefix(500)))
        case .failed(let error): ("failed", nil, String(error.prefix(500)))
        }
    }

    /// The select list and join that ``ledgerEntry(_:)`` reads, over `ledger_transactions t`.
    /// Whether committed recordings may have changed a customer's facts (``NotificationStore/customerChangeMarker()``):
    /// one inserted a row, or recorded for a user (a first claim, a moved one).
    static func changesCustomers(_ recordings: [LedgerRecording], _ results: [[LedgerRecorded]]) -> Bool {
        recordings.contains { $0.user != nil } || results.contains { $0.contains(where: \.isNew) }
            || statesStatuses(recordings)
    }

    /// Whether recordings state subscriptions' statuses (announced to the status view once committed).
    static func statesStatuses(_ recordings: [LedgerRecording]) -> Bool {
        recordings.contains { !$0.statuses.isEmpty }
    }

    /// A due customer from `customer_snapshots`' key columns.
    static func dueCustomer(_ row: some StoredRow) throws -> DueCustomer {
        DueCustomer(
            appID: try row.uuid("app_id"), environment: try enumValue(try row.text("environment")),
            user: try row.text("app_user_id"))
    }

    static let ledgerSelect = """
        SELECT t.*, c.app_user_id AS claimant FROM ledger_transactions t LEFT JOIN ledger_claims c
            ON c.app_id = t.app_id AND c.store = t.store AND c.environment = t.environment
            AND c.original_transaction_id = t.original_transaction_id
        """

    /// The most rows one `IN (…)` list binds; longer lists are split.
    static let ledgerChunk = 500
}
