import Foundation
import ReceiptCore
import ReceiptService
import SQLiteNIO

/// Apple's Finish Transaction of confirmed deliveries (``AppleFinishStore``), on the ledger rows; the connection is
/// the only writer, so a claim and its lease are one statement. Due rows are taken in turns across apps (each app's
/// oldest first); those of a disabled app or account wait until it is enabled again.
extension SQLiteStore: AppleFinishStore {
    public func claimAppleFinishes(dueBy now: Date, lease: Duration, limit: Int) async throws -> [AppleFinishTask] {
        let leased = now.addingTimeInterval(Double(lease.components.seconds))
        return try await transaction {
            try await self.query(
                """
                UPDATE ledger_transactions SET apple_finish_due_at = ?
                WHERE (app_id, environment, transaction_id) IN (
                    SELECT app_id, environment, transaction_id FROM (
                        SELECT l.app_id, l.environment, l.transaction_id, l.apple_finish_due_at,
                            row_number() OVER (PARTITION BY l.app_id ORDER BY l.apple_finish_due_at) AS turn
                        FROM ledger_transactions l
                        JOIN apps a ON a.id = l.app_id JOIN accounts c ON c.id = a.account_id
                        WHERE l.apple_finish = 'pending' AND l.apple_finish_due_at <= ? AND a.enabled AND c.enabled)
                    ORDER BY turn, apple_finish_due_at LIMIT ?)
                RETURNING app_id, environment, transaction_id, apple_finish_attempts, delivered_at
                """, [.millis(leased), .millis(now), .integer(limit)]
            ).map(StoredForm.appleFinishTask)
        }
    }

    public func recordAppleFinish(_ task: AppleFinishTask, outcome: AppleFinishOutcome, at date: Date) async throws {
        let (state, due, error) = StoredForm.appleFinishColumns(outcome)
        _ = try await transaction {
            try await self.query(
                """
                UPDATE ledger_transactions SET apple_finish = ?, apple_finish_attempts = apple_finish_attempts + 1,
                    apple_finish_due_at = ?, apple_finish_error = ?, apple_finished_at = ?
                WHERE app_id = ? AND store = 'app_store' AND environment = ? AND transaction_id = ?
                    AND apple_finish = 'pending'
                """,
                [
                    .text(state), .millis(due), error.map { .text($0) } ?? .null,
                    .millis(state == "finished" ? date : nil), .uuid(task.appID), .text(task.environment.rawValue),
                    .text(task.transactionID),
                ])
        }
    }
}
