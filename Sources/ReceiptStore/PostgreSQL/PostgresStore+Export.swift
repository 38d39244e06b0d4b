import Foundation
import PostgresNIO
import ReceiptCore
import ReceiptService

extension PostgresStore: ExportStore {
    public func exportClaimants(appID: UUID, range: ExportRange, after: (String, String)?, limit: Int) async throws
        -> [ExportClaimant]
    {
        // Absent filters are NULL and match everything; one statement, planned once.
        let (environment, user) = (after?.0, after?.1)
        let (from, to) = (range.from, range.to)
        return try await run {
            try await rows(
                """
                SELECT environment, app_user_id, MIN(claimed_at) AS first_claimed_at FROM ledger_claims
                WHERE app_id = \(appID)
                    AND (\(environment)::text IS NULL OR (environment, app_user_id) > (\(environment), \(user)))
                GROUP BY environment, app_user_id
                HAVING (\(from)::timestamptz IS NULL OR MIN(claimed_at) >= \(from))
                    AND (\(to)::timestamptz IS NULL OR MIN(claimed_at) < \(to))
                ORDER BY environment, app_user_id LIMIT \(limit)
                """
            ).map { row in
                ExportClaimant(
                    environment: try StoredForm.enumValue(try row.text("environment")),
                    user: try row.text("app_user_id"), firstClaimedAt: try row.date("first_claimed_at"))
            }
        }
    }

    public func exportEvents(appID: UUID, range: ExportRange, after: (Int64, UUID)?, limit: Int) async throws
        -> [(event: WebhookEvent, microseconds: Int64)]
    {
        let (micros, id) = (after?.0, after?.1)
        let (from, to) = (range.from, range.to)
        return try await run {
            // The position's time in exact microseconds, as this store keeps it (a Date would round through a
            // double).
            try await rows(
                """
                SELECT *, (EXTRACT(EPOCH FROM created_at) * 1000000)::int8 AS created_microseconds FROM webhook_events
                WHERE app_id = \(appID)
                    AND (\(from)::timestamptz IS NULL OR created_at >= \(from))
                    AND (\(to)::timestamptz IS NULL OR created_at < \(to))
                    AND (\(micros)::int8 IS NULL
                        OR (created_at, id) > (TIMESTAMPTZ 'epoch' + \(micros)::int8 * INTERVAL '1 microsecond', \(id)))
                ORDER BY created_at, id LIMIT \(limit)
                """
            ).map { row in (try StoredForm.webhookEvent(row), Int64(try row.int("created_microseconds"))) }
        }
    }

    public func exportUsage(appID: UUID, fromDay: String?, toDay: String?, after: [String]?, limit: Int)
        async throws -> [ExportUsageRow]
    {
        let position = after?.count == 3 ? after : nil
        let (day, endpoint, outcome) = (position?[0], position?[1], position?[2])
        return try await run {
            // One row per day, endpoint and outcome: the app's calls summed over the account's rows.
            try await rows(
                """
                SELECT day, endpoint, outcome, SUM(calls)::int8 AS calls FROM usage_daily
                WHERE app_id = \(appID)
                    AND (\(fromDay)::text IS NULL OR day >= \(fromDay))
                    AND (\(toDay)::text IS NULL OR day < \(toDay))
                    AND (\(day)::text IS NULL OR (day, endpoint, outcome) > (\(day), \(endpoint), \(outcome)))
                GROUP BY day, endpoint, outcome
                ORDER BY day, endpoint, outcome LIMIT \(limit)
                """
            ).map { row in
                ExportUsageRow(
                    day: try row.text("day"), endpoint: try row.text("endpoint"), outcome: try row.text("outcome"),
                    calls: try row.int("calls"))
            }
        }
    }
}
