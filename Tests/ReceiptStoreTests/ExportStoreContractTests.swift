import Foundation
import ReceiptCore
import ReceiptService
import ReceiptStore
import TestSupport
import Testing

/// Exports on both stores (docs/api.md, "Exports"): every kind in its order across page boundaries, resumed from any
/// line's cursor without a row lost or repeated, cut by a time range, in JSON Lines and in CSV.
@Suite struct ExportStoreContractTests {
    static let start = LedgerStoreContractTests.start

    /// Lines of an export of `request` read in pages of `pageSize`.
    static func lines(_ exporter: Exporter, _ request: ExportRequest, app: App, pageSize: Int = 2) async throws
        -> [String]
    {
        let collected = Collected()
        try await exporter.run(request, app: app, now: start.addingTimeInterval(3_600), pageSize: pageSize) {
            collected.append($0)
        }
        let text = String(decoding: collected.bytes, as: UTF8.self)
        let separator = request.format == .csv ? "\r\n" : "\n"
        #expect(text.hasSuffix(separator) || text.isEmpty)
        return text.components(separatedBy: separator).dropLast()
    }

    /// The JSON object of a JSON line.
    static func object(_ line: String) throws -> JSONObject {
        guard case .object(let object) = try JSONParser.parse(Array(line.utf8)) else {
            throw TestKitFailure("not a JSON object: \(line)")
        }
        return object
    }

    /// An app with a ledger of seven transactions over three users (one named with a comma, a quote and a bar),
    /// five events and a month of usage.
    static func withData(_ kind: StoreKind, _ body: @Sendable (any DataStore, App) async throws -> Void)
        async throws
    {
        try await LedgerStoreContractTests.withApp(kind) { store, app in
            let users = ["alice", "bob", "c,\"d\"|e"]
            for index in 0..<7 {
                _ = try await store.record(
                    LedgerStoreContractTests.recording(
                        app, [LedgerStoreContractTests.purchase("t\(index)")], user: users[index % 3],
                        at: TimeInterval(index * 60), request: "r\(index)"))
            }
            try await store.recordEvents(
                (0..<5).map { index in
                    WebhookEvent(
                        appID: app.id, environment: .production, kind: .test,
                        createdAt: start.addingTimeInterval(TimeInterval(index) * 0.000_5 + 10),
                        data: ["n": .integer(Int64(index))])
                })
            var counts: [UsageKey: Int] = [:]
            for day in 1...3 {
                for endpoint in [UsageEndpoint.api, .export] {
                    counts[
                        UsageKey(
                            accountID: app.accountID, appID: app.id, endpoint: endpoint, outcome: .valid,
                            day: UsageDay("2026-11-0\(day)")!)] = day * 10
                }
            }
            try await store.addUsage(counts)
            try await body(store, app)
        }
    }

    @Test(arguments: StoreKind.available)
    func everyKindComesWholeInOrderAcrossPagesAndResumesFromAnyCursor(kind: StoreKind) async throws {
        try await Self.withData(kind) { store, app in
            let exporter = Exporter(store: store)
            let expected: [ExportKind: Int] = [.transactions: 7, .customers: 3, .events: 5, .usage: 6]
            for exportKind in ExportKind.allCases {
                let request = ExportRequest(appID: app.id, kind: exportKind)
                let lines = try await Self.lines(exporter, request, app: app)
                #expect(lines.count == expected[exportKind], "\(exportKind)")
                // Read in one page, the same lines.
                #expect(try await Self.lines(exporter, request, app: app, pageSize: 500) == lines, "\(exportKind)")
                // From each line's cursor, exactly the lines after it.
                for (index, line) in lines.enumerated() {
                    let cursor = try #require(try Self.object(line)["cursor"]?.stringValue)
                    var resumed = request
                    resumed.cursor = try ExportCursor(text: cursor, kind: exportKind)
                    #expect(
                        try await Self.lines(exporter, resumed, app: app) == Array(lines[(index + 1)...]),
                        "\(exportKind) after line \(index)")
                }
                // A limit cuts it.
                var limited = request
                limited.limit = 3
                #expect(try await Self.lines(exporter, limited, app: app) == Array(lines.prefix(3)), "\(exportKind)")
            }

            let transactions = try await Self.lines(
                exporter, ExportRequest(appID: app.id, kind: .transactions), app: app)
            #expect(
                try transactions.map { try Self.object($0)["transaction_id"]?.stringValue }
                    == (0..<7).map { "t\($0)" })
            let customers = try await Self.lines(exporter, ExportRequest(appID: app.id, kind: .customers), app: app)
            #expect(
                try customers.map { try Self.object($0)["app_user_id"]?.stringValue } == ["alice", "bob", "c,\"d\"|e"])
            #expect(try Self.object(customers[0])["environment"] == .string("Production"))
            let events = try await Self.lines(exporter, ExportRequest(appID: app.id, kind: .events), app: app)
            // Ordered by creation, then id: events of one millisecond in any order of theirs, each once.
            #expect(
                Set(try events.map { try Self.object($0)["data"]?["n"] }) == Set((0..<5).map { .integer(Int64($0)) }))
            let usage = try await Self.lines(exporter, ExportRequest(appID: app.id, kind: .usage), app: app)
            #expect(
                try usage.map { line -> String in
                    let row = try Self.object(line)
                    return
                        "\(row["day"]?.stringValue ?? "") \(row["endpoint"]?.stringValue ?? "") \(row["calls"]?.encodedString ?? "")"
                } == [
                    "2026-11-01 api 10", "2026-11-01 export 10", "2026-11-02 api 20", "2026-11-02 export 20",
                    "2026-11-03 api 30", "2026-11-03 export 30",
                ])
        }
    }

    @Test(arguments: StoreKind.available)
    func aTimeRangeCutsEachKindAndACursorOfAnotherKindIsRefused(kind: StoreKind) async throws {
        try await Self.withData(kind) { store, app in
            let exporter = Exporter(store: store)
            // Transactions first seen from the third minute (included) to the sixth (excluded): t2, t3, t4.
            let middle = try ExportRange(
                from: Self.start.addingTimeInterval(120), to: Self.start.addingTimeInterval(300))
            let transactions = try await Self.lines(
                exporter, ExportRequest(appID: app.id, kind: .transactions, range: middle), app: app)
            #expect(try transactions.map { try Self.object($0)["transaction_id"]?.stringValue } == ["t2", "t3", "t4"])
            // Customers by their first claim: alice (t0), bob (t1) and the third (t2) first claimed in the first
            // three minutes.
            let early = try ExportRange(to: Self.start.addingTimeInterval(61))
            let customers = try await Self.lines(
                exporter, ExportRequest(appID: app.id, kind: .customers, range: early), app: app)
            #expect(try customers.map { try Self.object($0)["app_user_id"]?.stringValue } == ["alice", "bob"])
            // Usage by day: to 2026-11-02T12:00 includes the 2nd.
            let days = try ExportRange(
                from: Date(millisecondsSince1970: RFC3339.milliseconds("2026-11-02T00:00:00Z")!),
                to: Date(millisecondsSince1970: RFC3339.milliseconds("2026-11-02T12:00:00Z")!))
            let usage = try await Self.lines(
                exporter, ExportRequest(appID: app.id, kind: .usage, range: days), app: app)
            #expect(try usage.map { try Self.object($0)["day"]?.stringValue } == ["2026-11-02", "2026-11-02"])
            // Events created within the same millisecond keep their order by id and resume exactly.
            let events = try await Self.lines(exporter, ExportRequest(appID: app.id, kind: .events), app: app)
            let cursor = try #require(try Self.object(events[0])["cursor"]?.stringValue)
            #expect(throws: ServiceError.self) { try ExportCursor(text: cursor, kind: .transactions) }
            #expect(throws: ServiceError.self) { try ExportCursor(text: "not-a-cursor", kind: .events) }
            // Crafted cursors of the right kind but parts no export writes are refused before an export starts.
            for (kind, parts) in [
                (ExportKind.transactions, ["soon", "Production", "t1"]), (.transactions, ["1", "Staging", "t1"]),
                (.customers, ["Staging", "alice"]), (.events, ["1", "not-a-uuid"]),
                (.events, ["x", UUID().uuidString]),
                (.usage, ["2026-13-01", "api", "valid"]),
            ] {
                let text = ExportCursor(kind: kind, parts: parts).text
                #expect(throws: ServiceError.self, "\(kind) \(parts)") { try ExportCursor(text: text, kind: kind) }
            }
            #expect(throws: ServiceError.self) { try ExportRange(from: Self.start, to: Self.start) }
        }
    }

    @Test(arguments: StoreKind.available)
    func csvHasAHeaderQuotesWhatNeedsItAndResumesWithoutOne(kind: StoreKind) async throws {
        try await Self.withData(kind) { store, app in
            let exporter = Exporter(store: store)
            let request = ExportRequest(appID: app.id, kind: .customers, format: .csv)
            let lines = try await Self.lines(exporter, request, app: app)
            #expect(lines.first == (["cursor"] + ExportKind.customers.columns).joined(separator: ","))
            #expect(lines.count == 4)
            // The third user's id holds a comma and quotes: quoted, its quotes doubled.
            let third = lines[3]
            #expect(third.contains(",\"c,\"\"d\"\"|e\",Production,"))
            let active = lines[1].components(separatedBy: ",")[1...2]
            #expect(Array(active) == ["alice", "Production"])
            // Resuming from the first row's cursor: no header, the rows after it.
            var resumed = request
            resumed.cursor = try ExportCursor(
                text: String(lines[1].prefix { $0 != "," }), kind: .customers)
            #expect(try await Self.lines(exporter, resumed, app: app) == Array(lines[2...]))
            // JSON values in cells: the entitlements array as JSON text.
            let transactions = try await Self.lines(
                exporter, ExportRequest(appID: app.id, kind: .transactions, format: .csv), app: app)
            #expect(transactions.count == 8)
            #expect(transactions[1].contains(",t0,t0,com.example.coins,Production,"))
        }
    }
}

extension ExportStoreContractTests {
    @Test(arguments: StoreKind.available)
    func dailyFilesAreWrittenWholeOncePerAppAndDay(kind: StoreKind) async throws {
        try await Self.withData(kind) { store, app in
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("daily-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: folder) }
            let exporter = Exporter(store: store)
            var daily = DailyExports(directory: folder.path, store: store, exporter: exporter)
            daily.catchUpDays = 3
            // A day after the data's: its day has ended.
            let now = Self.start.addingTimeInterval(86_400)
            let written = try await daily.writeDue(now: now)
            let day = folder.appendingPathComponent(app.id.uuidString.lowercased()).appendingPathComponent("2026-09-21")
            // Three days of transactions, events and usage, and the customers of the last one.
            #expect(written.count == 3 * 3 + 1)
            let names = try FileManager.default.contentsOfDirectory(atPath: day.path).sorted()
            #expect(names == ["customers.jsonl", "events.jsonl", "transactions.jsonl", "usage.jsonl"])
            let dayStart = Date(timeIntervalSince1970: TimeInterval(1_790_000_000 - 1_790_000_000 % 86_400))
            let dayRange = try ExportRange(from: dayStart, to: dayStart.addingTimeInterval(86_400))
            for kind in [ExportKind.transactions, .events] {
                let expected = try await Self.lines(
                    exporter, ExportRequest(appID: app.id, kind: kind, range: dayRange), app: app)
                let text = try String(contentsOf: day.appendingPathComponent("\(kind.rawValue).jsonl"), encoding: .utf8)
                #expect(text.split(separator: "\n").map(String.init) == expected, "\(kind)")
                #expect(!expected.isEmpty)
            }
            let customers = try String(contentsOf: day.appendingPathComponent("customers.jsonl"), encoding: .utf8)
            #expect(customers.split(separator: "\n").count == 3)
            // The days before hold no rows: their files exist, empty; no part file is left anywhere.
            let before = folder.appendingPathComponent(app.id.uuidString.lowercased())
                .appendingPathComponent("2026-09-19").appendingPathComponent("transactions.jsonl")
            #expect(try String(contentsOf: before, encoding: .utf8).isEmpty)
            let everything = FileManager.default.enumerator(atPath: folder.path)?.allObjects as? [String] ?? []
            #expect(!everything.contains { $0.hasSuffix(".part") })

            // Written once: a second look writes nothing; a file removed is written again, alone.
            #expect(try await daily.writeDue(now: now.addingTimeInterval(600)).isEmpty)
            try FileManager.default.removeItem(at: day.appendingPathComponent("events.jsonl"))
            #expect(
                try await daily.writeDue(now: now.addingTimeInterval(1_200)) == [
                    day.appendingPathComponent("events.jsonl").path
                ])
        }
    }
}

/// Bytes a sink took, in order.
final class Collected: @unchecked Sendable {
    private let lock = NSLock()
    private var storage: [UInt8] = []

    func append(_ bytes: [UInt8]) { lock.withLock { storage += bytes } }

    var bytes: [UInt8] { lock.withLock { storage } }
}

struct TestKitFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
