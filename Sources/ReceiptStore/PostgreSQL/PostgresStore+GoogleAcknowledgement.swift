import Foundation
import PostgresNIO
import ReceiptCore
import ReceiptService

/// Google Play's acknowledgement of delivered purchases (``GoogleAcknowledgementStore``), on the ledger rows. A claim
/// leases the due rows it takes past `lease`, and a row another server's claim leased is no longer due: each
/// acknowledgement is attempted by one server at a time. Those of a disabled app or account wait until it is enabled.
extension PostgresStore: GoogleAcknowledgementStore {
    public func claimGoogleAcknowledgements(dueBy now: Date, lease: Duration, limit: Int) async throws
        -> [GoogleAcknowledgementTask]
    {
        let leased = now.addingTimeInterval(Double(lease.components.seconds))
        return try await run {
            try await rows(
                """
                UPDATE ledger_transactions SET google_ack_due_at = \(leased)
                WHERE store = 'google_play' AND (app_id, environment, transaction_id) IN (
                    SELECT app_id, environment, transaction_id FROM (
                        SELECT l.app_id, l.environment, l.transaction_id, l.google_ack_due_at,
                            row_number() OVER (PARTITION BY l.app_id ORDER BY l.google_ack_due_at) AS turn
                        FROM ledger_transactions l
                        JOIN apps a ON a.id = l.app_id JOIN accounts c ON c.id = a.account_id
                        WHERE l.google_ack = 'pending' AND l.google_ack_due_at <= \(now) AND a.enabled
                            AND c.enabled) due
                    ORDER BY turn, google_ack_due_at LIMIT \(limit))
                    AND google_ack = 'pending' AND google_ack_due_at <= \(now)
                RETURNING app_id, environment, transaction_id, package_name, product_id, purchase_token, product_type,
                    google_ack_attempts, delivered_at, purchase_date
                """
            ).map(StoredForm.googleAcknowledgementTask)
        }
    }

    public func recordGoogleAcknowledgement(
        _ task: GoogleAcknowledgementTask, outcome: AppleFinishOutcome, at date: Date
    ) async throws {
        let (state, due, error) = StoredForm.appleFinishColumns(outcome, finished: "acknowledged")
        let acknowledgedAt: Date? = state == "acknowledged" ? date : nil
        try await run {
            _ = try await rows(
                """
                UPDATE ledger_transactions SET google_ack = \(state), google_ack_attempts = google_ack_attempts + 1,
                    google_ack_due_at = \(due), google_ack_error = \(error), google_acknowledged_at = \(acknowledgedAt)
                WHERE app_id = \(task.appID) AND store = 'google_play'
                    AND environment = \(task.environment.rawValue) AND transaction_id = \(task.transactionID)
                    AND google_ack = 'pending'
                """)
        }
    }

    public func pendingGoogleAcknowledgements(purchasedBefore date: Date) async throws -> Int {
        try await run {
            let row = try await rows(
                """
                SELECT count(*)::int8 AS n FROM ledger_transactions
                WHERE google_ack = 'pending' AND (purchase_date < \(date.millisecondsSince1970)
                    OR (purchase_date IS NULL AND delivered_at < \(date)))
                """
            ).first
            return Int(try row?["n"].decode(Int64.self) ?? 0)
        }
    }
}
