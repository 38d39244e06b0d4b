import Foundation
import PostgresNIO
import ReceiptCore
import ReceiptService

/// Renewal-date extensions (``RenewalExtensionStore``). Taking an identifier is an insert that loses to a concurrent
/// one (the loser then reads the winner's row, locked); a poll claim leases the due rows it takes, skipping rows
/// another claim holds.
extension PostgresStore: RenewalExtensionStore {
    public func beginRenewalExtension(_ record: RenewalExtensionRecord) async throws -> RenewalExtensionRecord? {
        try await transaction { connection in
            let storefronts = record.storefronts.joined(separator: ",")
            let inserted = try await rows(
                """
                INSERT INTO renewal_extensions (app_id, request_identifier, environment, original_transaction_id,
                    product_id, storefronts, days, reason, state, actor, created_at, updated_at, next_poll_at)
                VALUES (\(record.appID), \(record.requestIdentifier), \(record.environment.rawValue),
                    \(record.originalTransactionID), \(record.productID), \(storefronts), \(record.days),
                    \(record.reason.rawValue), \(record.state.rawValue), \(record.actor), \(record.createdAt),
                    \(record.updatedAt), \(record.nextPollAt))
                ON CONFLICT (app_id, request_identifier) DO NOTHING RETURNING request_identifier
                """, on: connection)
            guard inserted.isEmpty else { return nil }
            guard
                let held = try await rows(
                    """
                    SELECT * FROM renewal_extensions
                    WHERE app_id = \(record.appID) AND request_identifier = \(record.requestIdentifier) FOR UPDATE
                    """, on: connection
                ).first.map(StoredForm.renewalExtension)
            else { throw ServiceError(.storage, "renewal extension \(record.requestIdentifier) vanished") }
            guard held.state.mayRetry else { return held }
            try await rows(
                """
                UPDATE renewal_extensions SET environment = \(record.environment.rawValue),
                    original_transaction_id = \(record.originalTransactionID), product_id = \(record.productID),
                    storefronts = \(storefronts), days = \(record.days), reason = \(record.reason.rawValue),
                    state = \(record.state.rawValue), effective_date = NULL, succeeded_count = NULL,
                    failed_count = NULL, complete_date = NULL, error = NULL, expires_before = NULL,
                    actor = \(record.actor),
                    created_at = \(record.createdAt), updated_at = \(record.updatedAt),
                    next_poll_at = \(record.nextPollAt)
                WHERE app_id = \(record.appID) AND request_identifier = \(record.requestIdentifier)
                """, on: connection)
            return nil
        }
    }

    public func saveRenewalExtension(_ record: RenewalExtensionRecord) async throws {
        let error = record.error.map { String($0.prefix(500)) }
        _ = try await run {
            try await rows(
                """
                UPDATE renewal_extensions SET state = \(record.state.rawValue),
                    effective_date = \(record.effectiveDate), succeeded_count = \(record.succeeded),
                    failed_count = \(record.failed), complete_date = \(record.completeDate), error = \(error),
                    updated_at = \(record.updatedAt), next_poll_at = \(record.nextPollAt),
                    expires_before = \(record.expiresBefore)
                WHERE app_id = \(record.appID) AND request_identifier = \(record.requestIdentifier)
                """)
        }
    }

    public func renewalExtensions(appID: UUID, limit: Int) async throws -> [RenewalExtensionRecord] {
        try await run {
            try await rows(
                """
                SELECT * FROM renewal_extensions WHERE app_id = \(appID)
                ORDER BY created_at DESC, request_identifier LIMIT \(limit)
                """
            ).map(StoredForm.renewalExtension)
        }
    }

    public func claimRenewalExtensionPolls(dueBy now: Date, lease: Duration, limit: Int) async throws
        -> [RenewalExtensionRecord]
    {
        let leased = now.addingTimeInterval(Double(lease.components.seconds))
        return try await run {
            try await rows(
                """
                UPDATE renewal_extensions SET next_poll_at = \(leased)
                WHERE (app_id, request_identifier) IN (
                    SELECT r.app_id, r.request_identifier FROM renewal_extensions r
                    JOIN apps a ON a.id = r.app_id JOIN accounts c ON c.id = a.account_id
                    WHERE r.state = 'requested' AND r.next_poll_at <= \(now) AND a.enabled AND c.enabled
                    ORDER BY r.next_poll_at LIMIT \(limit) FOR UPDATE OF r SKIP LOCKED)
                    AND state = 'requested' AND next_poll_at <= \(now)
                RETURNING *
                """
            ).map(StoredForm.renewalExtension)
        }
    }
}
