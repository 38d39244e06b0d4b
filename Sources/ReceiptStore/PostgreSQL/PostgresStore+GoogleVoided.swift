import Foundation
import PostgresNIO
import ReceiptCore
import ReceiptService

/// Google Play's voided-purchase cursors (``GoogleVoidedStore``). A claim leases the due cursors it takes, and a cursor
/// another server's claim leased is no longer due: each is read by one server at a time.
extension PostgresStore: GoogleVoidedStore {
    public func ensureVoidedCursors(_ packages: [(appID: UUID, packageName: String)], at now: Date) async throws {
        guard !packages.isEmpty else { return }
        try await run {
            _ = try await rows(
                """
                INSERT INTO google_voided_cursors (app_id, package_name, next_run_at, updated_at)
                SELECT p.app_id, p.package_name, \(now), \(now)
                FROM UNNEST(\(packages.map(\.appID))::uuid[], \(packages.map(\.packageName))::text[])
                    AS p(app_id, package_name)
                ON CONFLICT DO NOTHING
                """)
        }
    }

    public func claimVoidedCursors(dueBy now: Date, lease: Duration, limit: Int) async throws -> [VoidedCursor] {
        let leased = now.addingTimeInterval(Double(lease.components.seconds))
        return try await run {
            try await rows(
                """
                UPDATE google_voided_cursors SET next_run_at = \(leased)
                WHERE (app_id, package_name) IN (
                    SELECT v.app_id, v.package_name FROM google_voided_cursors v
                    JOIN apps a ON a.id = v.app_id JOIN accounts c ON c.id = a.account_id
                    WHERE v.next_run_at <= \(now) AND a.enabled AND c.enabled ORDER BY v.next_run_at LIMIT \(limit))
                    AND next_run_at <= \(now)
                RETURNING app_id, package_name, start_time, page_token
                """
            ).map(StoredForm.voidedCursor)
        }
    }

    public func saveVoidedCursor(_ cursor: VoidedCursor, nextRunAt: Date, at now: Date) async throws {
        try await run {
            _ = try await rows(
                """
                UPDATE google_voided_cursors SET start_time = \(cursor.startTime), page_token = \(cursor.pageToken),
                    next_run_at = \(nextRunAt), updated_at = \(now)
                WHERE app_id = \(cursor.appID) AND package_name = \(cursor.packageName)
                """)
        }
    }

    public func keepVoidedPurchase(appID: UUID, orderID: String, void: PurchaseVoid, at now: Date) async throws {
        _ = try await run {
            try await rows(
                """
                INSERT INTO google_voided_purchases
                    (app_id, order_id, voided_time, voided_reason, voided_quantity, recorded_at)
                VALUES (\(appID), \(orderID), \(void.voidedAt), \(void.reason), \(void.quantity), \(now))
                ON CONFLICT DO NOTHING
                """)
        }
    }

    public func voidedOrders(appID: UUID, keptSince date: Date, limit: Int) async throws -> [String] {
        try await run {
            try await rows(
                """
                SELECT DISTINCT order_id FROM google_voided_purchases
                WHERE app_id = \(appID) AND recorded_at >= \(date) ORDER BY order_id LIMIT \(limit)
                """
            ).map { try $0.text("order_id") }
        }
    }
}
