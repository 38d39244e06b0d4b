import Foundation
import ReceiptCore
import ReceiptService
import SQLiteNIO

extension SQLiteStore: ExportStore {
    public func exportClaimants(appID: UUID, range: ExportRange, after: (String, String)?, limit: Int) async throws
        -> [ExportClaimant]
    {
        var having: [String] = []
        var binds: [SQLiteData] = [.uuid(appID)]
        var conditions = ["app_id = ?"]
        if let after {
            conditions.append("(environment, app_user_id) > (?, ?)")
            binds += [.text(after.0), .text(after.1)]
        }
        if let from = range.from {
            having.append("MIN(claimed_at) >= ?")
            binds.append(.millis(from))
        }
        if let to = range.to {
            having.append("MIN(claimed_at) < ?")
            binds.append(.millis(to))
        }
        let sql = """
            SELECT environment, app_user_id, MIN(claimed_at) AS first_claimed_at FROM ledger_claims
            WHERE \(conditions.joined(separator: " AND ")) GROUP BY environment, app_user_id
            \(having.isEmpty ? "" : "HAVING " + having.joined(separator: " AND "))
            ORDER BY environment, app_user_id LIMIT ?
            """
        let allBinds = binds + [.integer(limit)]
        return try await run {
            try await self.query(sql, allBinds).map { row in
                ExportClaimant(
                    environment: try StoredForm.enumValue(try row.text("environment")),
                    user: try row.text("app_user_id"), firstClaimedAt: try row.date("first_claimed_at"))
            }
        }
    }

    public func exportEvents(appID: UUID, range: ExportRange, after: (Int64, UUID)?, limit: Int) async throws
        -> [(event: WebhookEvent, microseconds: Int64)]
    {
        var conditions = ["app_id = ?"]
        var binds: [SQLiteData] = [.uuid(appID)]
        if let from = range.from {
            conditions.append("created_at >= ?")
            binds.append(.millis(from))
        }
        if let to = range.to {
            conditions.append("created_at < ?")
            binds.append(.millis(to))
        }
        if let (micros, id) = after {
            // This store keeps milliseconds: the cursor's microseconds are whole milliseconds.
            conditions.append("(created_at, id) > (?, ?)")
            binds += [.integer(Int(micros / 1_000)), .uuid(id)]
        }
        let sql = """
            SELECT * FROM webhook_events WHERE \(conditions.joined(separator: " AND "))
            ORDER BY created_at, id LIMIT ?
            """
        let allBinds = binds + [.integer(limit)]
        return try await run {
            try await self.query(sql, allBinds).map { row in
                (try StoredForm.webhookEvent(row), Int64(try row.int("created_at")) * 1_000)
            }
        }
    }

    public func exportUsage(appID: UUID, fromDay: String?, toDay: String?, after: [String]?, limit: Int)
        async throws -> [ExportUsageRow]
    {
        var conditions = ["app_id = ?"]
        var binds: [SQLiteData] = [.uuid(appID)]
        if let fromDay {
            conditions.append("day >= ?")
            binds.append(.text(fromDay))
        }
        if let toDay {
            conditions.append("day < ?")
            binds.append(.text(toDay))
        }
        if let after, after.count == 3 {
            conditions.append("(day, endpoint, outcome) > (?, ?, ?)")
            binds += after.map { .text($0) }
        }
        // One row per day, endpoint and outcome: the app's calls summed over the account's rows.
        let sql = """
            SELECT day, endpoint, outcome, SUM(calls) AS calls FROM usage_daily
            WHERE \(conditions.joined(separator: " AND ")) GROUP BY day, endpoint, outcome
            ORDER BY day, endpoint, outcome LIMIT ?
            """
        let allBinds = binds + [.integer(limit)]
        return try await run {
            try await self.query(sql, allBinds).map { row in
                ExportUsageRow(
                    day: try row.text("day"), endpoint: try row.text("endpoint"), outcome: try row.text("outcome"),
                    calls: try row.int("calls"))
            }
        }
    }
}
