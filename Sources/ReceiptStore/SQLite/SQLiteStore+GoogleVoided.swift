import Foundation
import ReceiptCore
import ReceiptService
import SQLiteNIO

/// Google Play's voided-purchase cursors (``GoogleVoidedStore``); the connection is the only writer, so a claim and its
/// lease are one statement.
extension SQLiteStore: GoogleVoidedStore {
    public func ensureVoidedCursors(_ packages: [(appID: UUID, packageName: String)], at now: Date) async throws {
        guard !packages.isEmpty else { return }
        _ = try await transaction {
            for chunk in packages.chunked(StoredForm.ledgerChunk) {
                _ = try await self.query(
                    """
                    INSERT INTO google_voided_cursors (app_id, package_name, next_run_at, updated_at)
                    VALUES \(Array(repeating: "(?, ?, ?, ?)", count: chunk.count).joined(separator: ", "))
                    ON CONFLICT DO NOTHING
                    """, chunk.flatMap { [.uuid($0.appID), .text($0.packageName), .millis(now), .millis(now)] })
            }
        }
    }

    public func claimVoidedCursors(dueBy now: Date, lease: Duration, limit: Int) async throws -> [VoidedCursor] {
        let leased = now.addingTimeInterval(Double(lease.components.seconds))
        return try await transaction {
            try await self.query(
                """
                UPDATE google_voided_cursors SET next_run_at = ?
                WHERE (app_id, package_name) IN (
                    SELECT v.app_id, v.package_name FROM google_voided_cursors v
                    JOIN apps a ON a.id = v.app_id JOIN accounts c ON c.id = a.account_id
                    WHERE v.next_run_at <= ? AND a.enabled AND c.enabled ORDER BY v.next_run_at LIMIT ?)
                RETURNING app_id, package_name, start_time, page_token
                """, [.millis(leased), .millis(now), .integer(limit)]
            ).map(StoredForm.voidedCursor)
        }
    }

    public func saveVoidedCursor(_ cursor: VoidedCursor, nextRunAt: Date, at now: Date) async throws {
        _ = try await transaction {
            try await self.query(
                """
                UPDATE google_voided_cursors SET start_time = ?, page_token = ?, next_run_at = ?, updated_at = ?
                WHERE app_id = ? AND package_name = ?
                """,
                [
                    cursor.startTime.map { .integer(Int($0)) } ?? .null, cursor.pageToken.map { .text($0) } ?? .null,
                    .millis(nextRunAt), .millis(now), .uuid(cursor.appID), .text(cursor.packageName),
                ])
        }
    }

    public func keepVoidedPurchase(appID: UUID, orderID: String, void: PurchaseVoid, at now: Date) async throws {
        _ = try await transaction {
            try await self.query(
                """
                INSERT INTO google_voided_purchases
                    (app_id, order_id, voided_time, voided_reason, voided_quantity, recorded_at)
                VALUES (?, ?, ?, ?, ?, ?)
                ON CONFLICT DO NOTHING
                """,
                [
                    .uuid(appID), .text(orderID), .integer(Int(void.voidedAt)),
                    void.reason.map { .integer($0) } ?? .null,
                    void.quantity.map { .integer($0) } ?? .null, .millis(now),
                ])
        }
    }

    public func voidedOrders(appID: UUID, keptSince date: Date, limit: Int) async throws -> [String] {
        try await query(
            """
            SELECT DISTINCT order_id FROM google_voided_purchases
            WHERE app_id = ? AND recorded_at >= ? ORDER BY order_id LIMIT ?
            """, [.uuid(appID), .millis(date), .integer(limit)]
        ).map { try $0.text("order_id") }
    }
}
