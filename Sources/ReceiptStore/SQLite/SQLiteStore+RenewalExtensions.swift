import Foundation
import ReceiptCore
import ReceiptService
import SQLiteNIO

/// Renewal-date extensions (``RenewalExtensionStore``); the connection is the only writer, so taking an identifier
/// and claiming polls are each one transaction.
extension SQLiteStore: RenewalExtensionStore {
    public func beginRenewalExtension(_ record: RenewalExtensionRecord) async throws -> RenewalExtensionRecord? {
        try await transaction {
            let held = try await self.query(
                "SELECT * FROM renewal_extensions WHERE app_id = ? AND request_identifier = ?",
                [.uuid(record.appID), .text(record.requestIdentifier)]
            ).first.map(StoredForm.renewalExtension)
            if let held {
                guard held.state.mayRetry else { return held }
                _ = try await self.query(
                    "DELETE FROM renewal_extensions WHERE app_id = ? AND request_identifier = ?",
                    [.uuid(record.appID), .text(record.requestIdentifier)])
            }
            _ = try await self.query(
                """
                INSERT INTO renewal_extensions (app_id, request_identifier, environment, original_transaction_id,
                    product_id, storefronts, days, reason, state, effective_date, succeeded_count, failed_count,
                    complete_date, error, actor, created_at, updated_at, next_poll_at, expires_before)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """, Self.renewalExtensionBinds(record))
            return nil
        }
    }

    public func saveRenewalExtension(_ record: RenewalExtensionRecord) async throws {
        _ = try await run {
            try await self.query(
                """
                UPDATE renewal_extensions SET state = ?, effective_date = ?, succeeded_count = ?, failed_count = ?,
                    complete_date = ?, error = ?, updated_at = ?, next_poll_at = ?, expires_before = ?
                WHERE app_id = ? AND request_identifier = ?
                """,
                [
                    .text(record.state.rawValue), record.effectiveDate.map { .integer(Int($0)) } ?? .null,
                    record.succeeded.map { .integer($0) } ?? .null, record.failed.map { .integer($0) } ?? .null,
                    record.completeDate.map { .integer(Int($0)) } ?? .null,
                    record.error.map { .text(String($0.prefix(500))) } ?? .null, .millis(record.updatedAt),
                    .millis(record.nextPollAt), record.expiresBefore.map { .integer(Int($0)) } ?? .null,
                    .uuid(record.appID), .text(record.requestIdentifier),
                ])
        }
    }

    public func renewalExtensions(appID: UUID, limit: Int) async throws -> [RenewalExtensionRecord] {
        try await run {
            try await self.query(
                """
                SELECT * FROM renewal_extensions WHERE app_id = ? ORDER BY created_at DESC, request_identifier
                LIMIT ?
                """, [.uuid(appID), .integer(limit)]
            ).map(StoredForm.renewalExtension)
        }
    }

    public func claimRenewalExtensionPolls(dueBy now: Date, lease: Duration, limit: Int) async throws
        -> [RenewalExtensionRecord]
    {
        let leased = now.addingTimeInterval(Double(lease.components.seconds))
        return try await transaction {
            try await self.query(
                """
                UPDATE renewal_extensions SET next_poll_at = ?
                WHERE (app_id, request_identifier) IN (
                    SELECT r.app_id, r.request_identifier FROM renewal_extensions r
                    JOIN apps a ON a.id = r.app_id JOIN accounts c ON c.id = a.account_id
                    WHERE r.state = 'requested' AND r.next_poll_at <= ? AND a.enabled AND c.enabled
                    ORDER BY r.next_poll_at LIMIT ?)
                RETURNING *
                """, [.millis(leased), .millis(now), .integer(limit)]
            ).map(StoredForm.renewalExtension)
        }
    }

    static func renewalExtensionBinds(_ record: RenewalExtensionRecord) -> [SQLiteData] {
        [
            .uuid(record.appID), .text(record.requestIdentifier), .text(record.environment.rawValue),
            record.originalTransactionID.map { .text($0) } ?? .null, record.productID.map { .text($0) } ?? .null,
            .text(record.storefronts.joined(separator: ",")), .integer(record.days), .integer(record.reason.rawValue),
            .text(record.state.rawValue), record.effectiveDate.map { .integer(Int($0)) } ?? .null,
            record.succeeded.map { .integer($0) } ?? .null, record.failed.map { .integer($0) } ?? .null,
            record.completeDate.map { .integer(Int($0)) } ?? .null, record.error.map { .text($0) } ?? .null,
            .text(record.actor), .millis(record.createdAt), .millis(record.updatedAt), .millis(record.nextPollAt),
            record.expiresBefore.map { .integer(Int($0)) } ?? .null,
        ]
    }
}
