import Foundation
import NIOHTTP1
import ReceiptCore
import ReceiptTestKit
import TestSupport
import Testing

/// Exports through the real server and CLI (docs/api.md, "Exports"), on both stores: `GET /api/export` streams every
/// row with its cursor, resumes after any of them, writes CSV, refuses what it cannot answer before the first byte
/// and is counted once per export; `receiptverify export` writes the same lines, to a file that appears only whole.
@Suite struct ExportAPITests {
    static func get(_ service: LiveService, _ query: String, key: String?) async throws -> LiveService.Answer {
        try await service.post(
            "/api/export?" + query, body: "", headers: key.map { [("Authorization", "Bearer \($0)")] } ?? [],
            method: .GET)
    }

    static func lines(_ answer: LiveService.Answer) throws -> [JSONObject] {
        try answer.text.split(separator: "\n").map { line in
            guard case .object(let object) = try JSONParser.parse(Array(line.utf8)) else {
                throw SetupError("not a JSON object: \(line)")
            }
            return object
        }
    }

    @Test(
        "an export over the API and the CLI: every row with its cursor, resumed, as CSV, refused, counted once",
        arguments: StoreKind.available)
    func exportsOverTheAPIAndTheCLI(kind: StoreKind) async throws {
        try await withLiveService(kind, serveArguments: ["--usage-flush-interval-ms", "100"]) { service in
            let tenant = try service.tenant(appArguments: ["--allow-test-data"] + EntitlementAPITests.catalog)
            for index in 0..<5 {
                let item = try EntitlementAPITests.transaction(
                    service, id: "880\(index)", product: EntitlementAPITests.lifetime, type: "Non-Consumable")
                _ = try await EntitlementAPITests.verify(service, tenant, item, user: "user-\(index)")
            }
            let query = "token=\(tenant.token)&kind=transactions"
            let whole = try await Self.get(service, query, key: tenant.apiKey)
            #expect(whole.httpStatus == 200)
            #expect(whole.header("Content-Type") == "application/x-ndjson")
            #expect(whole.header("Content-Disposition") == "attachment; filename=\"transactions.jsonl\"")
            #expect(whole.header("X-Request-ID") != nil)
            let rows = try Self.lines(whole)
            #expect(rows.map { $0["transaction_id"]?.stringValue } == (0..<5).map { "880\($0)" })
            #expect(rows.map { $0["app_user_id"]?.stringValue } == (0..<5).map { "user-\($0)" })
            #expect(rows.allSatisfy { $0.keys.first == "cursor" })

            // After the second line's cursor: the last three, exactly.
            let cursor = try #require(rows[1]["cursor"]?.stringValue)
            let rest = try await Self.get(service, query + "&cursor=\(cursor)", key: tenant.apiKey)
            #expect(try Self.lines(rest) == Array(rows[2...]))

            // CSV: a header, then the same rows; its lines end in CR LF.
            let csv = try await Self.get(service, query + "&format=csv", key: tenant.apiKey)
            #expect(csv.header("Content-Type") == "text/csv; charset=utf-8")
            let csvLines = csv.text.components(separatedBy: "\r\n")
            #expect(csvLines.first?.hasPrefix("cursor,transaction_id,original_transaction_id,product_id,") == true)
            #expect(csvLines.count == 7 && csvLines.last == "")
            #expect(csvLines[1].hasPrefix("\(rows[0]["cursor"]!.stringValue!),8800,8800,"))

            // Customers: each user, with what they may use now.
            let customers = try Self.lines(
                try await Self.get(service, "token=\(tenant.token)&kind=customers", key: tenant.apiKey))
            #expect(customers.map { $0["app_user_id"]?.stringValue } == (0..<5).map { "user-\($0)" })
            #expect(
                customers.allSatisfy {
                    $0["active_entitlements"]?.arrayValue?.contains(.string("pro")) == true
                        && $0["entitlements"]?.arrayValue?.isEmpty == false
                })

            // Refused before the first byte, in the API's JSON shape.
            for (query, status) in [
                ("token=\(tenant.token)", 400), ("token=\(tenant.token)&kind=receipts", 400),
                ("token=\(tenant.token)&kind=events&cursor=\(cursor)", 400),
                ("token=\(tenant.token)&kind=usage&apikey=\(tenant.apiKey)", 400),
            ] {
                let refused = try await Self.get(service, query, key: tenant.apiKey)
                #expect(refused.httpStatus == status, "\(query)")
                #expect(try refused.json()["status"] == .integer(Int64(status)), "\(query)")
            }
            #expect(try await Self.get(service, query, key: nil).httpStatus == 401)
            #expect(
                try await Self.get(service, query, key: "rvk_" + String(repeating: "0", count: 43)).httpStatus == 401)

            // The CLI writes the same lines; its file appears whole.
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("export-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: folder) }
            let file = folder.appendingPathComponent("transactions.jsonl").path
            let written = try service.cli.expectSuccess(
                ["export", tenant.token, "--kind", "transactions", "--output", file])
            #expect(written.stderr.contains("exported 5 transactions rows"))
            #expect(try String(contentsOfFile: file, encoding: .utf8) == whole.text)
            #expect(!FileManager.default.fileExists(atPath: file + ".part"))
            let resumed = try service.cli.expectSuccess(
                ["export", tenant.token, "--kind", "transactions", "--cursor", cursor, "--format", "csv"])
            #expect(resumed.stdout == csvLines[3...].joined(separator: "\r\n"))
            let failed = try service.cli.run(
                ["export", tenant.token, "--kind", "transactions", "--from", "yesterday", "--output", file + ".2"])
            #expect(failed.status != 0 && failed.stderr.contains("from must be an RFC 3339 time"))
            #expect(!FileManager.default.fileExists(atPath: file + ".2"))
            #expect(!FileManager.default.fileExists(atPath: file + ".2.part"))

            // Each API export was counted once, as `export`: 7 answered 200 above.
            var counted: Int64 = 0
            for _ in 0..<50 {
                let usage = try Self.lines(
                    try await Self.get(service, "token=\(tenant.token)&kind=usage", key: tenant.apiKey))
                counted = usage.filter { $0["endpoint"] == .string("export") }
                    .compactMap { row -> Int64? in if case .integer(let calls)? = row["calls"] { calls } else { nil } }
                    .reduce(0, +)
                if counted >= 7 { break }
                try await Task.sleep(for: .milliseconds(100))
            }
            #expect(counted >= 7)
        }
    }
}
