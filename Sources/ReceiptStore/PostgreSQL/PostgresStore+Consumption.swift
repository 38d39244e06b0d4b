import Foundation
import PostgresNIO
import ReceiptCore
import ReceiptService

/// Answers to Apple's refund requests (``ConsumptionAnswerStore``), on the `consumption_requests` groups. A claim
/// leases the due groups it takes past `lease`, and one another server's claim leased is no longer due: each answer
/// is attempted by one server at a time, and recorded once.
extension PostgresStore: ConsumptionAnswerStore {
    public func claimConsumptionAnswers(dueBy now: Date, lease: Duration, limit: Int) async throws
        -> [ConsumptionAnswerTask]
    {
        let leased = now.addingTimeInterval(Double(lease.components.seconds))
        return try await run {
            try await rows(
                """
                UPDATE consumption_requests SET answer_due_at = \(leased)
                WHERE (app_id, environment, transaction_id) IN (
                    SELECT r.app_id, r.environment, r.transaction_id FROM consumption_requests r
                    JOIN apps a ON a.id = r.app_id JOIN accounts c ON c.id = a.account_id
                    WHERE r.answer_state = 'pending' AND r.answer_due_at <= \(now) AND a.enabled AND c.enabled
                    ORDER BY r.answer_due_at LIMIT \(limit))
                    AND answer_state = 'pending' AND answer_due_at <= \(now)
                RETURNING app_id, environment, transaction_id, answer_attempts, first_at
                """
            ).map(StoredForm.consumptionAnswerTask)
        }
    }

    public func consumptionFacts(of task: ConsumptionAnswerTask) async throws -> ConsumptionRules.Facts {
        let environment = task.environment.rawValue
        return try await run {
            let row = try await rows(
                """
                SELECT t.delivered_at, t.consumption_milli, t.consumption_delivery, t.consumption_reported_at,
                    t.product_id, t.product_type, t.purchase_date, t.expires_date, t.revocation_date
                FROM ledger_transactions t
                WHERE t.app_id = \(task.appID) AND t.store = 'app_store' AND t.environment = \(environment)
                    AND t.transaction_id = \(task.transactionID)
                """
            ).first
            // The customer: the claimant of the transaction's original transaction, else that original alone.
            let refunds =
                try await rows(
                    """
                    SELECT count(*)::int8 AS n FROM ledger_transactions o
                    JOIN ledger_transactions t ON t.app_id = o.app_id AND t.store = o.store
                        AND t.environment = o.environment
                    LEFT JOIN ledger_claims tc ON tc.app_id = t.app_id AND tc.store = t.store
                        AND tc.environment = t.environment AND tc.original_transaction_id = t.original_transaction_id
                    LEFT JOIN ledger_claims oc ON oc.app_id = o.app_id AND oc.store = o.store
                        AND oc.environment = o.environment AND oc.original_transaction_id = o.original_transaction_id
                    WHERE t.app_id = \(task.appID) AND t.store = 'app_store' AND t.environment = \(environment)
                        AND t.transaction_id = \(task.transactionID)
                        AND o.transaction_id <> t.transaction_id AND o.revocation_date IS NOT NULL
                        AND (CASE WHEN tc.app_user_id IS NOT NULL THEN oc.app_user_id = tc.app_user_id
                            ELSE o.original_transaction_id = t.original_transaction_id END)
                    """
                ).first.map { try $0.int("n") } ?? 0
            return try StoredForm.consumptionFacts(row, refunds: refunds)
        }
    }

    public func recordConsumptionAnswer(
        _ task: ConsumptionAnswerTask, outcome: ConsumptionAnswerOutcome, event: WebhookEvent?, at date: Date
    ) async throws {
        let columns = StoredForm.consumptionAnswerColumns(outcome)
        let answeredAt: Date? = columns.answered ? date : nil
        try await transaction { connection in
            let updated = try await self.rows(
                """
                UPDATE consumption_requests SET answer_state = \(columns.state),
                    answer_attempts = answer_attempts + 1, answer_due_at = \(columns.due)::timestamptz,
                    answer_body = COALESCE(\(columns.body)::text, answer_body), answer_status = \(columns.status),
                    answer_error = \(columns.error), answered_at = \(answeredAt)::timestamptz
                WHERE app_id = \(task.appID) AND environment = \(task.environment.rawValue)
                    AND transaction_id = \(task.transactionID) AND answer_state = 'pending'
                RETURNING transaction_id
                """, on: connection)
            // Recorded once: an attempt whose lease ran out and was recorded by another server adds no event.
            if !updated.isEmpty, let event { try await self.insertEvents([event], onlyTaken: true, on: connection) }
        }
    }

    public func reportConsumption(
        appID: UUID, environment: StoreEnvironment?, transactionIDs: [String], report: ConsumptionReport
    ) async throws -> Set<String> {
        guard !transactionIDs.isEmpty else { return [] }
        let environment = environment?.rawValue
        let delivery = report.deliveryStatus?.rawValue
        return try await run {
            Set(
                try await rows(
                    """
                    UPDATE ledger_transactions SET consumption_milli = \(report.consumedMilli),
                        consumption_delivery = \(delivery), consumption_reported_at = \(report.reportedAt)
                    WHERE app_id = \(appID) AND transaction_id = ANY(\(transactionIDs))
                        AND (\(environment)::text IS NULL OR environment = \(environment))
                    RETURNING transaction_id
                    """
                ).map { try $0.text("transaction_id") })
        }
    }

    public func consumptionAnswers(appID: UUID, limit: Int) async throws -> [ConsumptionAnswerStatus] {
        try await run {
            try await rows(
                """
                SELECT * FROM consumption_requests WHERE app_id = \(appID) ORDER BY first_at DESC, transaction_id
                LIMIT \(limit)
                """
            ).map(StoredForm.consumptionAnswerStatus)
        }
    }
}
