import Foundation
import ReceiptCore

/// What an export holds (docs/api.md, "Exports").
public enum ExportKind: String, Sendable, CaseIterable {
    /// The app's ledger rows, oldest first, as `POST /api/transactions` gives them.
    case transactions
    /// Each user of the app that claimed a purchase, with what they may use now (the customer view), by environment
    /// and user.
    case customers
    /// The app's events (the webhook events, whether or not an endpoint took them), oldest first.
    case events
    /// The app's billable calls by day, endpoint and outcome.
    case usage

    /// Names `text` (any case); nil for another.
    public init?(name text: String) { self.init(rawValue: text.lowercased()) }

    /// The CSV columns after `cursor`, in order; a value is the JSON line's member of that name (objects and
    /// arrays as JSON text, absent and null as empty).
    public var columns: [String] {
        switch self {
        case .transactions:
            [
                "transaction_id", "original_transaction_id", "product_id", "environment", "store", "app_user_id",
                "purchase_date_ms", "original_purchase_date_ms", "expires_date_ms", "quantity",
                "web_order_line_item_id", "ownership_type", "app_transaction_id", "offer_period", "billing_plan_type",
                "commitment", "refunded_at", "reason", "refund_type", "refund_percentage", "first_seen_at",
                "last_seen_at", "first_request_id", "delivered_at", "apple_finish", "google_acknowledgement",
            ]
        case .customers:
            [
                "app_user_id", "environment", "active_entitlements", "entitlements", "subscriptions", "purchases",
                "unknown_products", "computed_at",
            ]
        case .events: ["id", "type", "environment", "created_at", "notification_uuid", "data"]
        case .usage: ["day", "endpoint", "outcome", "calls"]
        }
    }
}

/// How an export is written.
public enum ExportFormat: String, Sendable, CaseIterable {
    /// JSON Lines: one JSON object per line, `cursor` first.
    case jsonl
    /// CSV (RFC 4180, CRLF line ends): a header line, then one line per row, `cursor` first.
    case csv

    /// Names `text` (any case; `ndjson` and `json` are JSON Lines); nil for another.
    public init?(name text: String) {
        switch text.lowercased() {
        case "jsonl", "ndjson", "json": self = .jsonl
        case "csv": self = .csv
        default: return nil
        }
    }

    /// The answer's `Content-Type`.
    public var contentType: String {
        switch self {
        case .jsonl: "application/x-ndjson"
        case .csv: "text/csv; charset=utf-8"
        }
    }

    /// The file name extension.
    public var fileExtension: String { rawValue }
}

/// The times an export covers: from `from` (included) to `to` (excluded), either open. Transactions by when the
/// ledger first saw them, customers by their first claim, events by when they happened, usage by day.
public struct ExportRange: Sendable, Equatable {
    /// The start, included.
    public var from: Date?
    /// The end, excluded.
    public var to: Date?

    /// Creates a range; throws ``ServiceError/Code/invalidArgument`` unless `from` is before `to`.
    public init(from: Date? = nil, to: Date? = nil) throws {
        if let from, let to, from >= to {
            throw ServiceError(.invalidArgument, "the range's from must be before its to")
        }
        self.from = from
        self.to = to
    }

    /// The whole of time.
    public static let all = try! ExportRange()

    /// The UTC days the range covers, for usage: the day of `from` (included) to the day of `to` (excluded, unless
    /// `to` is within it).
    var days: (from: String?, to: String?) {
        let from = from.map { UsageDay(containing: $0).description }
        let to = to.map { date -> String in
            // A `to` after the start of its day includes that day.
            let start = UsageDay.start(containing: date)
            return UsageDay(containing: date > start ? start.addingTimeInterval(86_400) : start).description
        }
        return (from, to)
    }
}

/// A position in an export's order, carried by each line as `cursor`: an export asked with it starts after that
/// line. Opaque to callers: base64url of the kind and the position's parts, `|`-separated.
public struct ExportCursor: Sendable, Equatable {
    /// The kind it belongs to.
    public let kind: ExportKind
    /// The position: transactions (first seen in milliseconds, environment, transaction id); customers
    /// (environment, user); events (microseconds since 1970, id); usage (day, endpoint, outcome).
    public let parts: [String]

    /// Creates one.
    public init(kind: ExportKind, parts: [String]) {
        self.kind = kind
        self.parts = parts
    }

    /// The cursor's text.
    public var text: String { Base64URL.encode(([kind.rawValue] + parts).joined(separator: "|").utf8) }

    /// The longest cursor text taken.
    public static let maximumLength = 2_048

    /// The cursor `text` names for `kind`; throws ``ServiceError/Code/invalidArgument`` for text no export made, or
    /// one of another kind.
    public init(text: String, kind: ExportKind) throws {
        guard text.utf8.count <= Self.maximumLength, let bytes = Base64URL.decode(text),
            let decoded = String(validating: bytes, as: UTF8.self)
        else { throw ServiceError(.invalidArgument, "cursor is not one an export gave") }
        let parts = decoded.split(separator: "|", omittingEmptySubsequences: false).map(String.init)
        guard parts.first == kind.rawValue else {
            throw ServiceError(.invalidArgument, "cursor is not one of a \(kind.rawValue) export")
        }
        let expected = kind == .transactions || kind == .usage ? 3 : 2
        let position = Array(parts.dropFirst())
        // A user or a transaction id may hold `|`: the last part takes the rest.
        guard position.count >= expected, position.allSatisfy({ !$0.isEmpty }) else {
            throw ServiceError(.invalidArgument, "cursor is not one an export gave")
        }
        let joined = Array(position.prefix(expected - 1)) + [position.dropFirst(expected - 1).joined(separator: "|")]
        // Each part in the form its kind writes: a crafted cursor is refused here, before an export starts.
        let wellFormed =
            switch kind {
            case .transactions:
                Int64(joined[0]) != nil && StoreEnvironment(rawValue: joined[1]) != nil
            case .customers: StoreEnvironment(rawValue: joined[0]) != nil
            case .events: Int64(joined[0]) != nil && UUID(uuidString: joined[1]) != nil
            case .usage: UsageDay(joined[0]) != nil
            }
        guard wellFormed else { throw ServiceError(.invalidArgument, "cursor is not one an export gave") }
        self.init(kind: kind, parts: joined)
    }
}

/// An export's question: an app, a kind, a format, a range, where to start and how much.
public struct ExportRequest: Sendable {
    /// The app.
    public var appID: UUID
    /// What to export.
    public var kind: ExportKind
    /// How it is written.
    public var format: ExportFormat
    /// The times covered.
    public var range: ExportRange
    /// Start after this line (nil: from the first).
    public var cursor: ExportCursor?
    /// At most this many rows (nil: all).
    public var limit: Int?

    /// Creates one.
    public init(
        appID: UUID, kind: ExportKind, format: ExportFormat = .jsonl, range: ExportRange = .all,
        cursor: ExportCursor? = nil, limit: Int? = nil
    ) {
        self.appID = appID
        self.kind = kind
        self.format = format
        self.range = range
        self.cursor = cursor
        self.limit = limit
    }
}

extension ExportRequest {
    /// The export `parameters` ask for (`kind`, `format`, `from`, `to`, `cursor`, `limit`: the query of
    /// `GET /api/export`, the options of `receiptverify export`); throws ``ServiceError/Code/invalidArgument``
    /// naming the first one that is malformed.
    public init(parameters: [String: String], appID: UUID) throws {
        guard let kindText = parameters["kind"], !kindText.isEmpty else {
            throw ServiceError(.invalidArgument, "kind is required: transactions, customers, events or usage")
        }
        guard let kind = ExportKind(name: kindText) else {
            throw ServiceError(.invalidArgument, "kind must be transactions, customers, events or usage")
        }
        let format =
            try parameters["format"].map { text -> ExportFormat in
                guard let format = ExportFormat(name: text) else {
                    throw ServiceError(.invalidArgument, "format must be jsonl or csv")
                }
                return format
            } ?? .jsonl
        let range = try ExportRange(
            from: try Self.time(parameters["from"], "from"), to: try Self.time(parameters["to"], "to"))
        let cursor = try parameters["cursor"].flatMap { $0.isEmpty ? nil : try ExportCursor(text: $0, kind: kind) }
        let limit = try parameters["limit"].map { text -> Int in
            guard let limit = Int(text), limit >= 1, limit <= 1_000_000_000 else {
                throw ServiceError(.invalidArgument, "limit must be a whole number from 1 to 1000000000")
            }
            return limit
        }
        self.init(appID: appID, kind: kind, format: format, range: range, cursor: cursor, limit: limit)
    }

    /// An RFC 3339 time (`2026-11-01T00:00:00Z`, fractions and offsets allowed) or a UTC day (`2026-11-01`, its
    /// start); nil for none or empty.
    static func time(_ text: String?, _ name: String) throws -> Date? {
        guard let text, !text.isEmpty else { return nil }
        if let day = UsageDay(text) { return day.start }
        guard let milliseconds = RFC3339.milliseconds(text) else {
            throw ServiceError(.invalidArgument, "\(name) must be an RFC 3339 time or a day (YYYY-MM-DD)")
        }
        return Date(millisecondsSince1970: milliseconds)
    }
}

/// A user of an app who claimed a purchase, in one environment, and when they first did.
public struct ExportClaimant: Sendable, Equatable {
    /// The environment.
    public var environment: StoreEnvironment
    /// The app's user.
    public var user: String
    /// Their first claim there.
    public var firstClaimedAt: Date

    /// Creates one.
    public init(environment: StoreEnvironment, user: String, firstClaimedAt: Date) {
        self.environment = environment
        self.user = user
        self.firstClaimedAt = firstClaimedAt
    }
}

/// A row of the app's usage.
public struct ExportUsageRow: Sendable, Equatable {
    /// The UTC day, `YYYY-MM-DD`.
    public var day: String
    /// The endpoint.
    public var endpoint: String
    /// The outcome class.
    public var outcome: String
    /// Billable calls.
    public var calls: Int

    /// Creates one.
    public init(day: String, endpoint: String, outcome: String, calls: Int) {
        self.day = day
        self.endpoint = endpoint
        self.outcome = outcome
        self.calls = calls
    }
}

/// What exports read of a store, a page at a time in each kind's order (the ledger's own
/// ``LedgerStore/ledgerEntries(_:)`` for transactions). Each page is one short read: an export of any size holds no
/// long transaction and no more than a page in memory.
public protocol ExportStore: StoreLifecycle {
    /// Claimants of the app, by environment then user, whose first claim is within `range`, after
    /// (environment, user), at most `limit`.
    func exportClaimants(appID: UUID, range: ExportRange, after: (String, String)?, limit: Int) async throws
        -> [ExportClaimant]
    /// The app's events by creation then id, created within `range`, after (microseconds since 1970, id), at most
    /// `limit`; each with its creation time in microseconds exactly as the store keeps it (a `Date` read back may
    /// round), which is its position.
    func exportEvents(appID: UUID, range: ExportRange, after: (Int64, UUID)?, limit: Int) async throws
        -> [(event: WebhookEvent, microseconds: Int64)]
    /// The app's usage by day, endpoint and outcome, of the days `fromDay` (included) to `toDay` (excluded), after
    /// (day, endpoint, outcome), at most `limit`.
    func exportUsage(appID: UUID, fromDay: String?, toDay: String?, after: [String]?, limit: Int) async throws
        -> [ExportUsageRow]
}
