import Foundation
import ReceiptCore
import ReceiptService
import SQLiteNIO

/// Google Play's acknowledgement of delivered purchases (``GoogleAcknowledgementStore``), on the ledger rows; the
/// connection is the only writer, so a claim and its lease are one statement. Due rows are taken in turns across apps;
/// those of a disabled app or account wait until it is enabled again.
extension SQLiteStore: GoogleAcknowledgementStore {
    public func claimGoogleAcknowledgements(dueBy now: Date, lease: Duration, limit: Int) async throws
        -> [GoogleAcknowledgementTask]
    {
        let leased = now.addingTimeInterval(Double(lease.components.seconds))
        return try await transaction {
            try await self.query(
                """
                UPDATE ledger_transactions SET google_ack_due_at = ?
                WHERE store = 'google_play' AND (app_id, environment, transaction_id) IN (
                    SELECT app_id, environment, transaction_id FROM (
                        SELECT l.app_id, l.environment, l.transaction_id, l.google_ack_due_at,
                            row_number() OVER (PARTITION BY l.app_id ORDER BY l.google_ack_due_at) AS turn
                        FROM ledger_transactions l
                        JOIN apps a ON a.id = l.app_id JOIN accounts c ON c.id = a.account_id
                        WHERE l.google_ack = 'pending' AND l.google_ack_due_at <= ? AND a.enabled AND c.enabled)
                    ORDER BY turn, google_ack_due_at LIMIT ?)
                RETURNING app_id, environment, transaction_id, package_name, product_id, purchase_token, product_type,
                    google_ack_attempts, delivered_at, purchase_date
                """, [.millis(leased), .millis(now), .integer(limit)]
            ).map(StoredForm.googleAcknowledgementTask)
        }
    }

    public func recordGoogleAcknowledgement(
        _ task: GoogleAcknowledgementTask, outcome: AppleFinishOutcome, at date: Date
    ) async throws {
        let (state, due, error) = StoredForm.appleFinishColumns(outcome, finished: "acknowledged")
        _ = try await transaction {
            try await self.query(
                """
                UPDATE ledger_transactions SET google_ack = ?, google_ack_attempts = google_ack_attempts + 1,
                    google_ack_due_at = ?, google_ack_error = ?, google_acknowledged_at = ?
                WHERE app_id = ? AND store = 'google_play' AND environment = ? AND transaction_id = ?
                    AND google_ack = 'pending'
                """,
                [
                    .text(state), .millis(due), error.map { .text($0) } ?? .null,
                    .millis(state == "acknowledged" ? date : nil), .uuid(task.appID),
                    .text(task.environment.rawValue), .text(task.transactionID),
                ])
        }
    }

    public func pendingGoogleAcknowledgements(purchasedBefore date: Date) async throws -> Int {
        try await run {
            try await self.count(
                """
                SELECT count(*) AS n FROM ledger_transactions
                WHERE google_ack = 'pending' AND COALESCE(purchase_date, delivered_at) < ?
                """, [.millis(date)])
        }
    }
}
