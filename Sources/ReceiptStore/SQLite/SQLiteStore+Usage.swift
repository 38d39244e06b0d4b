import Foundation
import Logging
import NIOCore
import NIOPosix
import ReceiptCore
import ReceiptService
import SQLiteNIO

/// The usage concern (``UsageStore``): standing, counters, quota grants.
extension SQLiteStore {
    public func standing(accountID: UUID, month: UsageMonth) async throws -> AccountStanding? {
        try await run {
            let rows = try await self.query(
                """
                SELECT a.enabled AS account_enabled, p.*, COALESCE(m.calls, 0) AS month_calls
                FROM accounts a JOIN plans p ON p.name = a.plan_name
                LEFT JOIN usage_monthly m ON m.account_id = a.id AND m.month = ?
                WHERE a.id = ?
                """, [.text(month.description), .uuid(accountID)])
            guard let row = rows.first else { return nil }
            return AccountStanding(
                isEnabled: try row.require("account_enabled").requireBool(), plan: try StoredForm.plan(row),
                monthCalls: try row.require("month_calls").requireInt())
        }
    }

    public func addUsage(_ counts: [UsageKey: Int], grants: GrantRenewal?) async throws {
        guard !counts.isEmpty else { return }
        try await transaction {
            let batch = UsageBatch(counts)
            for (key, calls) in batch.daily {
                _ = try await self.query(
                    """
                    INSERT INTO usage_daily (account_id, day, app_id, endpoint, outcome, calls) VALUES (?, ?, ?, ?, ?, ?)
                    ON CONFLICT (account_id, day, app_id, endpoint, outcome)
                    DO UPDATE SET calls = usage_daily.calls + excluded.calls
                    """,
                    [
                        .uuid(key.accountID), .text(key.day.description), .uuid(key.appID),
                        .text(key.endpoint.rawValue), .text(key.outcome.rawValue), .integer(calls),
                    ])
            }
            for (key, calls) in batch.monthly {
                _ = try await self.query(
                    """
                    INSERT INTO usage_monthly (account_id, month, calls) VALUES (?, ?, ?)
                    ON CONFLICT (account_id, month) DO UPDATE SET calls = usage_monthly.calls + excluded.calls
                    """, [.uuid(key.accountID), .text(key.month.description), .integer(calls)])
                if let grants {
                    // The stored calls take the place of the grant that covered them.
                    _ = try await self.query(
                        """
                        UPDATE quota_grants SET granted = MAX(granted - ?, 0), flushed = flushed + ?, expires_at = ?
                        WHERE account_id = ? AND month = ? AND server_id = ?
                        """,
                        [
                            .integer(calls), .integer(calls), .millis(grants.expiresAt), .uuid(key.accountID),
                            .text(key.month.description), .uuid(grants.server),
                        ])
                }
            }
        }
    }

    public func claimQuota(_ claim: QuotaClaim, now: Date) async throws -> Int {
        let account = SQLiteData.uuid(claim.accountMonth.accountID)
        let month = SQLiteData.text(claim.accountMonth.month.description)
        // BEGIN IMMEDIATE: one writer at a time across processes, so the read and the grant are one step.
        return try await transaction {
            let rows = try await self.query(
                """
                SELECT COALESCE((SELECT calls FROM usage_monthly WHERE account_id = ? AND month = ?), 0)
                    + COALESCE((SELECT SUM(granted) FROM quota_grants WHERE account_id = ? AND month = ?
                        AND server_id <> ? AND expires_at > ?), 0) AS used,
                    (SELECT flushed FROM quota_grants WHERE account_id = ? AND month = ? AND server_id = ?) AS flushed
                """,
                [
                    account, month, account, month, .uuid(claim.server), .millis(now), account, month,
                    .uuid(claim.server),
                ])
            let used = try rows.first?.require("used").requireInt() ?? 0
            let holding = claim.holding(storedByServer: rows.first?.column("flushed")?.integer.map { Int($0) })
            let granted = claim.grant(available: claim.quota - used - holding)
            _ = try await self.query(
                """
                INSERT INTO quota_grants (account_id, month, server_id, granted, flushed, expires_at)
                VALUES (?, ?, ?, ?, ?, ?)
                ON CONFLICT (account_id, month, server_id)
                DO UPDATE SET granted = excluded.granted, expires_at = excluded.expires_at
                """,
                [
                    account, month, .uuid(claim.server), .integer(holding + granted), .integer(claim.flushed),
                    .millis(claim.expiresAt),
                ])
            _ = try await self.query(
                "DELETE FROM quota_grants WHERE account_id = ? AND month = ? AND expires_at <= ?",
                [account, month, .millis(now)])
            return granted
        }
    }

    public func releaseQuotaGrants(server: UUID) async throws {
        try await run { _ = try await self.query("DELETE FROM quota_grants WHERE server_id = ?", [.uuid(server)]) }
    }

    public func usage(month: UsageMonth, accountID: UUID?, appID: UUID?) async throws -> [UsageRecord] {
        try await run {
            var sql = "SELECT * FROM usage_daily WHERE day >= ? AND day < ?"
            var binds: [SQLiteData] = [.text(month.firstDay.description), .text(month.next.firstDay.description)]
            if let accountID {
                sql += " AND account_id = ?"
                binds.append(.uuid(accountID))
            }
            if let appID {
                sql += " AND app_id = ?"
                binds.append(.uuid(appID))
            }
            sql += " ORDER BY day, account_id, app_id, endpoint, outcome"
            return try await self.query(sql, binds).map(StoredForm.usageRecord)
        }
    }

    public func monthlyCalls(month: UsageMonth) async throws -> [UUID: Int] {
        try await run {
            var calls: [UUID: Int] = [:]
            for row in try await self.query(
                "SELECT account_id, calls FROM usage_monthly WHERE month = ?", [.text(month.description)])
            {
                calls[try row.require("account_id").requireUUID()] = try row.require("calls").requireInt()
            }
            return calls
        }
    }

}
