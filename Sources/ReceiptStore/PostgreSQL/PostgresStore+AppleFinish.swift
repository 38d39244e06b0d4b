import Foundation
import PostgresNIO
import ReceiptCore
import ReceiptService

/// Apple's Finish Transaction of confirmed deliveries (``AppleFinishStore``), on the ledger rows. A claim leases the
/// due rows it takes past `lease`, and a row another server's claim leased is no longer due: each finish is attempted
/// by one server at a time. Finishes of a disabled app or account wait until it is enabled again.
extension PostgresStore: AppleFinishStore {
    public func claimAppleFinishes(dueBy now: Date, lease: Duration, limit: Int) async throws -> [AppleFinishTask] {
        let leased = now.addingTimeInterval(Double(lease.components.seconds))
        return try await run {
            // The due rows taken in turns across apps (each app's oldest first), so that one app's backlog does not
            // hold the others' back. Another server's claim that committed meanwhile moved the row's due time past
            // `now`, and the update's own condition, checked again on the row it waited for, skips it.
            try await rows(
                """
                UPDATE ledger_transactions SET apple_finish_due_at = \(leased)
                WHERE (app_id, environment, transaction_id) IN (
                    SELECT app_id, environment, transaction_id FROM (
                        SELECT l.app_id, l.environment, l.transaction_id, l.apple_finish_due_at,
                            row_number() OVER (PARTITION BY l.app_id ORDER BY l.apple_finish_due_at) AS turn
                        FROM ledger_transactions l
                        JOIN apps a ON a.id = l.app_id JOIN accounts c ON c.id = a.account_id
                        WHERE l.apple_finish = 'pending' AND l.apple_finish_due_at <= \(now) AND a.enabled
                            AND c.enabled) due
                    ORDER BY turn, apple_finish_due_at LIMIT \(limit))
                    AND apple_finish = 'pending' AND apple_finish_due_at <= \(now)
                RETURNING app_id, environment, transaction_id, apple_finish_attempts, delivered_at
                """
            ).map(StoredForm.appleFinishTask)
        }
    }

    public func recordAppleFinish(_ task: AppleFinishTask, outcome: AppleFinishOutcome, at date: Date) async throws {
        let (state, due, error) = StoredForm.appleFinishColumns(outcome)
        let finishedAt: Date? = state == "finished" ? date : nil
        try await run {
            _ = try await rows(
                """
                UPDATE ledger_transactions SET apple_finish = \(state),
                    apple_finish_attempts = apple_finish_attempts + 1, apple_finish_due_at = \(due),
                    apple_finish_error = \(error), apple_finished_at = \(finishedAt)
                WHERE app_id = \(task.appID) AND store = 'app_store' AND environment = \(task.environment.rawValue)
                    AND transaction_id = \(task.transactionID) AND apple_finish = 'pending'
                """)
        }
    }
}
