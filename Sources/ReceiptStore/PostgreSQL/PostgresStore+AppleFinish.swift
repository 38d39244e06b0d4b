import Foundation
import PostgresNIO
import ReceiptCore
import ReceiptService

/// Apple's Finish Transaction of confirmed deliveries (``AppleFinishStore``), on the ledger rows. A claim locks the
/// due rows it takes and skips those another server's claim holds, then leases them past `lease`: each finish is
/// attempted by one server at a time.
extension PostgresStore: AppleFinishStore {
    public func claimAppleFinishes(dueBy now: Date, lease: Duration, limit: Int) async throws -> [AppleFinishTask] {
        let leased = now.addingTimeInterval(Double(lease.components.seconds))
        return try await run {
            try await rows(
                """
                UPDATE ledger_transactions SET apple_finish_due_at = \(leased)
                WHERE (app_id, environment, transaction_id) IN (
                    SELECT app_id, environment, transaction_id FROM ledger_transactions
                    WHERE apple_finish = 'pending' AND apple_finish_due_at <= \(now)
                    ORDER BY apple_finish_due_at LIMIT \(limit) FOR UPDATE SKIP LOCKED)
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
                WHERE app_id = \(task.appID) AND environment = \(task.environment.rawValue)
                    AND transaction_id = \(task.transactionID) AND apple_finish = 'pending'
                """)
        }
    }
}
