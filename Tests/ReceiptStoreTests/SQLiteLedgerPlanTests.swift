import Foundation
import Logging
import ReceiptService
import SQLiteNIO
import TestSupport
import Testing

@testable import ReceiptStore

/// SQLite keeps no statistics here, so its planner is told where a ledger look-up starts: a user's claims or an
/// original transaction's rows, never a walk through the whole app's ledger in its order (190 ms a look-up on a
/// million rows before, scripts/export-bench.sh). Read off `EXPLAIN QUERY PLAN` of the statements the store runs.
@Suite struct SQLiteLedgerPlanTests {
    @Test func aUsersOrAnOriginalTransactionsRowsAreReadByTheirIndexes() async throws {
        try await withTemporaryDirectory { directory in
            let store = try await SQLiteStore.open(
                path: directory.appendingPathComponent("plan.sqlite").path, logger: Logger(label: "test"))
            do {
                try await store.migrate()
                let app = UUID()
                let after = LedgerPosition(firstSeen: 1, environment: "Production", transactionID: "1")
                let statements: [(String, (sql: String, binds: [SQLiteData]), [String])] = [
                    (
                        "a user's page",
                        SQLiteStore.ledgerEntriesStatement(
                            LedgerQuery(appID: app, user: "alice", after: after, limit: 100)),
                        ["ledger_claims_user_idx", "ledger_transactions_original_idx"]
                    ),
                    (
                        "an original transaction's page",
                        SQLiteStore.ledgerEntriesStatement(
                            LedgerQuery(appID: app, originalTransactionID: "1000", limit: 1)),
                        ["ledger_transactions_original_idx"]
                    ),
                    (
                        "a user's original transaction",
                        SQLiteStore.ledgerEntriesStatement(
                            LedgerQuery(appID: app, user: "alice", originalTransactionID: "1000", limit: 100)),
                        ["ledger_transactions_original_idx"]
                    ),
                    (
                        "a customer's facts",
                        (
                            SQLiteLedgerWriter.customerFactsSQL,
                            [.uuid(app), .text("Production"), .text("alice"), .integer(10_000)]
                        ), ["ledger_claims_user_idx", "ledger_transactions_original_idx"]
                    ),
                    (
                        "a customer's statuses",
                        (SQLiteLedgerWriter.customerStatusesSQL, [.uuid(app), .text("Production"), .text("alice")]),
                        ["ledger_claims_user_idx"]
                    ),
                ]
                for (name, statement, indexes) in statements {
                    let plan = try await store.query("EXPLAIN QUERY PLAN " + statement.sql, statement.binds)
                        .compactMap { $0.column("detail")?.string }.joined(separator: "\n")
                    for index in indexes { #expect(plan.contains(index), "\(name): \(plan)") }
                    // The look-up starts from the user's claims or the original's rows: the first table searched is
                    // searched by one of the named indexes, not by the app's rows.
                    #expect(
                        indexes.contains { plan.split(separator: "\n").first?.contains($0) == true },
                        "\(name) starts elsewhere: \(plan)")
                    #expect(!plan.contains("ledger_transactions_order_idx"), "\(name): \(plan)")
                    #expect(!plan.contains("SCAN"), "\(name): \(plan)")
                }
                // The whole ledger in its order still walks the order index, unsorted.
                let all = SQLiteStore.ledgerEntriesStatement(LedgerQuery(appID: app, limit: 100))
                let plan = try await store.query("EXPLAIN QUERY PLAN " + all.sql, all.binds)
                    .compactMap { $0.column("detail")?.string }.joined(separator: "\n")
                #expect(plan.contains("ledger_transactions_order_idx") && !plan.contains("TEMP B-TREE"), "\(plan)")
            } catch {
                try await store.close()
                throw error
            }
            try await store.close()
        }
    }
}
