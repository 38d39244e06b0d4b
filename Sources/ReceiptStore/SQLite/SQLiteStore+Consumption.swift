import Foundation
import ReceiptCore
import ReceiptService
import SQLiteNIO

/// Answers to Apple's refund requests (``ConsumptionAnswerStore``), on the `consumption_requests` groups; the
/// connection is the only writer, so a claim and its lease are one statement.
extension SQLiteStore: ConsumptionAnswerStore {
    public func claimConsumptionAnswers(dueBy now: Date, lease: Duration, limit: Int) async throws
        -> [ConsumptionAnswerTask]
    {
        let leased = now.addingTimeInterval(Double(lease.components.seconds))
        return try await transaction {
            try await self.query(
                """
                UPDATE consumption_requests SET answer_due_at = ?
                WHERE (app_id, environment, transaction_id) IN (
                    SELECT r.app_id, r.environment, r.transaction_id FROM consumption_requests r
                    JOIN apps a ON a.id = r.app_id JOIN accounts c ON c.id = a.account_id
                    WHERE r.answer_state = 'pending' AND r.answer_due_at <= ? AND a.enabled AND c.enabled
                    ORDER BY r.answer_due_at LIMIT ?)
                RETURNING app_id, environment, transaction_id, answer_attempts, first_at
                """, [.millis(leased), .millis(now), .integer(limit)]
            ).map(StoredForm.consumptionAnswerTask)
        }
    }

    public func consumptionFacts(of task: ConsumptionAnswerTask) async throws -> ConsumptionRules.Facts {
        try await run {
            let binds: [SQLiteData] = [.uuid(task.appID), .text(task.environment.rawValue), .text(task.transactionID)]
            let row = try await self.query(
                """
                SELECT t.delivered_at, t.consumption_milli, t.consumption_delivery, t.consumption_reported_at,
                    t.product_id, t.product_type, t.purchase_date, t.expires_date, t.revocation_date
                FROM ledger_transactions t
                WHERE t.app_id = ? AND t.store = 'app_store' AND t.environment = ? AND t.transaction_id = ?
                """, binds
            ).first
            // The customer: the claimant of the transaction's original transaction, else that original alone.
            let refunds = try await self.count(
                """
                SELECT count(*) AS n FROM ledger_transactions o
                JOIN ledger_transactions t ON t.app_id = o.app_id AND t.store = o.store
                    AND t.environment = o.environment
                LEFT JOIN ledger_claims tc ON tc.app_id = t.app_id AND tc.store = t.store
                    AND tc.environment = t.environment AND tc.original_transaction_id = t.original_transaction_id
                LEFT JOIN ledger_claims oc ON oc.app_id = o.app_id AND oc.store = o.store
                    AND oc.environment = o.environment AND oc.original_transaction_id = o.original_transaction_id
                WHERE t.app_id = ? AND t.store = 'app_store' AND t.environment = ? AND t.transaction_id = ?
                    AND o.transaction_id <> t.transaction_id AND o.revocation_date IS NOT NULL
                    AND (CASE WHEN tc.app_user_id IS NOT NULL THEN oc.app_user_id = tc.app_user_id
                        ELSE o.original_transaction_id = t.original_transaction_id END)
                """, binds)
            return try StoredForm.consumptionFacts(row, refunds: refunds)
        }
    }

    public func recordConsumptionAnswer(
        _ task: ConsumptionAnswerTask, outcome: ConsumptionAnswerOutcome, event: WebhookEvent?, at date: Date
    ) async throws {
        let columns = StoredForm.consumptionAnswerColumns(outcome)
        try await transaction {
            let updated = try await self.query(
                """
                UPDATE consumption_requests SET answer_state = ?, answer_attempts = answer_attempts + 1,
                    answer_due_at = ?, answer_body = COALESCE(?, answer_body), answer_status = ?, answer_error = ?,
                    answered_at = ?
                WHERE app_id = ? AND environment = ? AND transaction_id = ? AND answer_state = 'pending'
                RETURNING transaction_id
                """,
                [
                    .text(columns.state), .millis(columns.due), columns.body.map { .text($0) } ?? .null,
                    columns.status.map { .integer($0) } ?? .null, columns.error.map { .text($0) } ?? .null,
                    .millis(columns.answered ? date : nil), .uuid(task.appID), .text(task.environment.rawValue),
                    .text(task.transactionID),
                ])
            // Recorded once: an attempt whose lease ran out and was recorded by another server adds no event.
            if !updated.isEmpty, let event { try await self.insertEvents([event], onlyTaken: true) }
        }
    }

    public func reportConsumption(
        appID: UUID, environment: StoreEnvironment?, transactionIDs: [String], report: ConsumptionReport
    ) async throws -> Set<String> {
        guard !transactionIDs.isEmpty else { return [] }
        let environment: SQLiteData = environment.map { .text($0.rawValue) } ?? .null
        return try await transaction {
            var found = Set<String>()
            for chunk in transactionIDs.chunked(StoredForm.ledgerChunk) {
                for row in try await self.query(
                    """
                    UPDATE ledger_transactions SET consumption_milli = ?, consumption_delivery = ?,
                        consumption_reported_at = ?
                    WHERE app_id = ? AND transaction_id IN (\(Self.placeholders(chunk.count)))
                        AND (? IS NULL OR environment = ?)
                    RETURNING transaction_id
                    """,
                    [
                        report.consumedMilli.map { .integer($0) } ?? .null,
                        report.deliveryStatus.map { .text($0.rawValue) } ?? .null, .millis(report.reportedAt),
                        .uuid(appID),
                    ] + chunk.map { .text($0) } + [environment, environment])
                {
                    found.insert(try row.text("transaction_id"))
                }
            }
            return found
        }
    }

    public func consumptionAnswers(appID: UUID, limit: Int) async throws -> [ConsumptionAnswerStatus] {
        try await run {
            try await self.query(
                """
                SELECT * FROM consumption_requests WHERE app_id = ? ORDER BY first_at DESC, transaction_id LIMIT ?
                """, [.uuid(appID), .integer(limit)]
            ).map(StoredForm.consumptionAnswerStatus)
        }
    }
}
