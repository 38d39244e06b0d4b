import Foundation
import ReceiptCore

/// Writes an export: the rows of a kind in its order, a page at a time, each page's lines handed to a sink before
/// the next page is read, so that an export of any size holds one page in memory (docs/api.md, "Exports"). The same
/// for `GET /api/export`, `receiptverify export` and the daily files.
public struct Exporter: Sendable {
    /// Rows read per page.
    public static let pageSize = 500

    let store: any DataStore
    let customers: CustomerLookup

    /// An exporter over `store`; customers' views are computed by `customers` (one fresh view per user).
    public init(store: any DataStore, customers: CustomerLookup) {
        self.store = store
        self.customers = customers
    }

    /// An exporter over `store` with a customer look-up of its own.
    public init(store: any DataStore) {
        self.init(
            store: store,
            customers: CustomerLookup(ledger: Ledger(store: store), statuses: SubscriptionStatusView(store: store)))
    }

    /// Writes `request`'s rows of `app` to `sink`, one call per page (the CSV header first, unless the export
    /// resumes from a cursor); returns how many rows were written. A failure of the store or the sink ends it: what
    /// the sink took is whole lines, each with its `cursor` to resume after.
    @discardableResult
    public func run(
        _ request: ExportRequest, app: App, now: Date = Date(), pageSize: Int = Exporter.pageSize,
        sink: ([UInt8]) async throws -> Void
    ) async throws -> Int {
        if request.format == .csv, request.cursor == nil {
            try await sink(Self.csvLine(["cursor"] + request.kind.columns))
        }
        var written = 0
        var cursor = request.cursor
        while request.limit.map({ written < $0 }) ?? true {
            let size = min(pageSize, request.limit.map { $0 - written } ?? pageSize)
            let rows = try await page(request, app: app, after: cursor, limit: size, now: now)
            guard let last = rows.last else { break }
            var bytes: [UInt8] = []
            bytes.reserveCapacity(rows.count * 512)
            for (position, object) in rows {
                bytes += line(position, object, kind: request.kind, format: request.format)
            }
            try await sink(bytes)
            written += rows.count
            cursor = last.position
            if rows.count < size { break }
        }
        return written
    }

    /// One page: each row's position and its JSON form.
    func page(_ request: ExportRequest, app: App, after cursor: ExportCursor?, limit: Int, now: Date) async throws
        -> [(position: ExportCursor, object: JSONObject)]
    {
        let kind = request.kind
        switch kind {
        case .transactions:
            let after = try cursor.map { cursor -> LedgerPosition in
                guard let firstSeen = Int64(cursor.parts[0]) else {
                    throw ServiceError(.invalidArgument, "cursor is not one an export gave")
                }
                return LedgerPosition(
                    firstSeen: firstSeen, environment: cursor.parts[1], transactionID: cursor.parts[2])
            }
            let entries = try await store.ledgerEntries(
                LedgerQuery(
                    appID: app.id, since: request.range.from, until: request.range.to, after: after, limit: limit))
            return entries.map { entry in
                let position = LedgerPosition(of: entry)
                return (
                    ExportCursor(
                        kind: kind, parts: [String(position.firstSeen), position.environment, position.transactionID]),
                    entry.json
                )
            }
        case .customers:
            let after = cursor.map { ($0.parts[0], $0.parts[1]) }
            let claimants = try await store.exportClaimants(
                appID: app.id, range: request.range, after: after, limit: limit)
            var rows: [(ExportCursor, JSONObject)] = []
            rows.reserveCapacity(claimants.count)
            for claimant in claimants {
                let view = try await customers.view(
                    of: .user(claimant.user), app: app, environment: claimant.environment, now: now, fresh: true)
                var object = view.json
                object.append(
                    "active_entitlements",
                    .array(view.entitlements.filter(\.isActive).map { .string($0.name) }))
                rows.append(
                    (ExportCursor(kind: kind, parts: [claimant.environment.rawValue, claimant.user]), object))
            }
            return rows
        case .events:
            let after = try cursor.map { cursor -> (Int64, UUID) in
                guard let micros = Int64(cursor.parts[0]), let id = UUID(uuidString: cursor.parts[1]) else {
                    throw ServiceError(.invalidArgument, "cursor is not one an export gave")
                }
                return (micros, id)
            }
            let events = try await store.exportEvents(
                appID: app.id, range: request.range, after: after, limit: limit)
            return events.map { event, microseconds in
                var object = JSONObject(capacity: 6)
                object.append("id", .string(event.id.uuidString.lowercased()))
                object.append("type", .string(event.type))
                object.append("environment", .string(event.environment.rawValue))
                object.append("created_at", .string(LedgerEntry.rfc3339(event.createdAt)))
                if let uuid = event.notificationUUID { object.append("notification_uuid", .string(uuid)) }
                object.append("data", .object(event.data))
                return (
                    ExportCursor(
                        kind: kind,
                        parts: [String(microseconds), event.id.uuidString.lowercased()]),
                    object
                )
            }
        case .usage:
            let days = request.range.days
            let rows = try await store.exportUsage(
                appID: app.id, fromDay: days.from, toDay: days.to, after: cursor?.parts, limit: limit)
            return rows.map { row in
                var object = JSONObject(capacity: 4)
                object.append("day", .string(row.day))
                object.append("endpoint", .string(row.endpoint))
                object.append("outcome", .string(row.outcome))
                object.append("calls", .integer(Int64(row.calls)))
                return (ExportCursor(kind: kind, parts: [row.day, row.endpoint, row.outcome]), object)
            }
        }
    }

    /// One row's line: JSON with `cursor` first, or CSV in the kind's columns.
    func line(_ position: ExportCursor, _ object: JSONObject, kind: ExportKind, format: ExportFormat) -> [UInt8] {
        switch format {
        case .jsonl:
            var line = JSONObject(capacity: object.members.count + 1)
            line.append("cursor", .string(position.text))
            for (name, value) in object.members { line.append(name, value) }
            return JSONValue.object(line).encoded + [UInt8(ascii: "\n")]
        case .csv:
            return Self.csvLine([position.text] + kind.columns.map { Self.csvText(object[$0]) })
        }
    }

    /// A value as CSV cell text: strings as they are, numbers and booleans as JSON writes them, objects and arrays as
    /// JSON text, absent and null empty.
    static func csvText(_ value: JSONValue?) -> String {
        switch value {
        case nil, .null?: ""
        case .string(let text)?: text
        case let value?: value.encodedString
        }
    }

    /// One CSV line (RFC 4180): a cell with a comma, quote, CR or LF is quoted, its quotes doubled; CRLF ends it.
    static func csvLine(_ cells: [String]) -> [UInt8] {
        var line: [UInt8] = []
        for (index, cell) in cells.enumerated() {
            if index > 0 { line.append(UInt8(ascii: ",")) }
            if cell.utf8.contains(where: { $0 == 0x2C || $0 == 0x22 || $0 == 0x0D || $0 == 0x0A }) {
                line.append(0x22)
                for byte in cell.utf8 {
                    if byte == 0x22 { line.append(0x22) }
                    line.append(byte)
                }
                line.append(0x22)
            } else {
                line += cell.utf8
            }
        }
        return line + [0x0D, 0x0A]
    }
}
