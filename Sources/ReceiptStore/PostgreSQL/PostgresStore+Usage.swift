import Foundation
import Logging
import PostgresNIO
import ReceiptCore
import ReceiptService
import ServiceLifecycle
import Synchronization

/// The usage concern (``UsageStore``): standing, counters, quota grants.
extension PostgresStore {
    public func standing(accountID: UUID, month: UsageMonth) async throws -> AccountStanding? {
        try await run {
            guard
                let row = try await rows(
                    """
                    SELECT a.enabled AS account_enabled, p.*, COALESCE(m.calls, 0) AS month_calls
                    FROM accounts a JOIN plans p ON p.name = a.plan_name
                    LEFT JOIN usage_monthly m ON m.account_id = a.id AND m.month = \(month.description)
                    WHERE a.id = \(accountID)
                    """
                ).first
            else { return nil }
            return AccountStanding(
                isEnabled: try row["account_enabled"].decode(Bool.self), plan: try StoredForm.plan(row),
                monthCalls: try row["month_calls"].decode(Int.self))
        }
    }

    public func addUsage(_ counts: [UsageKey: Int], grants: GrantRenewal?) async throws {
        let batch = UsageBatch(counts)
        guard !batch.daily.isEmpty else { return }
        try await transaction { connection in
            for (key, calls) in batch.daily {
                try await self.rows(
                    """
                    INSERT INTO usage_daily (account_id, day, app_id, endpoint, outcome, calls)
                    VALUES (\(key.accountID), \(key.day.description), \(key.appID), \(key.endpoint.rawValue),
                        \(key.outcome.rawValue), \(calls))
                    ON CONFLICT (account_id, day, app_id, endpoint, outcome)
                    DO UPDATE SET calls = usage_daily.calls + excluded.calls
                    """, on: connection)
            }
            for (key, calls) in batch.monthly {
                try await self.rows(
                    """
                    INSERT INTO usage_monthly (account_id, month, calls)
                    VALUES (\(key.accountID), \(key.month.description), \(calls))
                    ON CONFLICT (account_id, month) DO UPDATE SET calls = usage_monthly.calls + excluded.calls
                    """, on: connection)
                if let grants {
                    // The stored calls take the place of the grant that covered them.
                    try await self.rows(
                        """
                        UPDATE quota_grants SET granted = GREATEST(granted - \(calls), 0), flushed = flushed + \(calls),
                            expires_at = \(grants.expiresAt)
                        WHERE account_id = \(key.accountID) AND month = \(key.month.description)
                            AND server_id = \(grants.server)
                        """, on: connection)
                }
            }
        }
    }

    public func claimQuota(_ claim: QuotaClaim, now: Date) async throws -> Int {
        let account = claim.accountMonth.accountID
        let month = claim.accountMonth.month.description
        return try await transaction { connection in
            // One claim of a month at a time, across servers; flushes need no lock (they only move calls from a
            // grant into the stored count), and one statement reads both in a single snapshot.
            try await self.rows(
                "SELECT pg_advisory_xact_lock(hashtextextended(\("quota:\(account):\(month)"), 0))", on: connection)
            let row = try await self.rows(
                """
                SELECT (COALESCE((SELECT calls FROM usage_monthly WHERE account_id = \(account) AND month = \(month)), 0)
                    + COALESCE((SELECT SUM(granted) FROM quota_grants WHERE account_id = \(account)
                        AND month = \(month) AND server_id <> \(claim.server) AND expires_at > \(now)), 0))::BIGINT
                    AS used,
                    (SELECT flushed FROM quota_grants WHERE account_id = \(account) AND month = \(month)
                        AND server_id = \(claim.server)) AS flushed
                """, on: connection
            ).first
            let used = try row.map { try $0["used"].decode(Int.self) } ?? 0
            let holding = claim.holding(storedByServer: try row?["flushed"].decode(Int?.self))
            let granted = claim.grant(available: claim.quota - used - holding)
            try await self.rows(
                """
                INSERT INTO quota_grants (account_id, month, server_id, granted, flushed, expires_at)
                VALUES (\(account), \(month), \(claim.server), \(holding + granted), \(claim.flushed),
                    \(claim.expiresAt))
                ON CONFLICT (account_id, month, server_id)
                DO UPDATE SET granted = excluded.granted, expires_at = excluded.expires_at
                """, on: connection)
            try await self.rows(
                """
                DELETE FROM quota_grants WHERE account_id = \(account) AND month = \(month) AND expires_at <= \(now)
                """, on: connection)
            return granted
        }
    }

    public func releaseQuotaGrants(server: UUID) async throws {
        try await run { try await rows("DELETE FROM quota_grants WHERE server_id = \(server)") }
    }

    public func usage(month: UsageMonth, accountID: UUID?, appID: UUID?) async throws -> [UsageRecord] {
        var query: PostgresQuery =
            "SELECT * FROM usage_daily WHERE day >= \(month.firstDay.description) AND day < \(month.next.firstDay.description)"
        if let accountID {
            query.binds.append(accountID)
            query.sql += " AND account_id = $\(query.binds.count)"
        }
        if let appID {
            query.binds.append(appID)
            query.sql += " AND app_id = $\(query.binds.count)"
        }
        query.sql += " ORDER BY day, account_id, app_id, endpoint, outcome"
        return try await run {
            try await rows(query).map(StoredForm.usageRecord)
        }
    }

    public func monthlyCalls(month: UsageMonth) async throws -> [UUID: Int] {
        try await run {
            var calls: [UUID: Int] = [:]
            for row in try await rows("SELECT account_id, calls FROM usage_monthly WHERE month = \(month.description)")
            {
                calls[try row["account_id"].decode(UUID.self)] = try row["calls"].decode(Int.self)
            }
            return calls
        }
    }
}
