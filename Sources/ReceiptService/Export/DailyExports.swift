import Foundation
import ReceiptCore

/// The daily files of `serve --export-directory DIR` (docs/operations.md, "Daily exports"): for each app, each UTC day
/// that ended, `DIR/APP_ID/YYYY-MM-DD/transactions.jsonl`, `events.jsonl` and `usage.jsonl` of that day, and
/// `customers.jsonl`, every customer as of the run (the last ended day only: a customer's view of a past day is not
/// kept). A file is written beside its name, flushed to disk and renamed into place: it is whole or absent, never
/// half-written, and a file that exists is never written again (so two servers, or a restart, write each once; at
/// worst both write the same rows and the last rename wins). Days missed while no server ran are written for
/// `catchUpDays` back.
public struct DailyExports: Sendable {
    /// The folder the operator named.
    public let directory: URL
    let store: any DataStore
    let exporter: Exporter
    /// How many ended days back a missing file is written.
    public var catchUpDays = 7

    /// Daily exports of every app in `store` to the folder at `path` (created if absent).
    public init(directory path: String, store: any DataStore, exporter: Exporter) {
        self.directory = URL(fileURLWithPath: path)
        self.store = store
        self.exporter = exporter
    }

    /// Writes every file due at `now` that is missing; returns the paths written.
    @discardableResult
    public func writeDue(now: Date) async throws -> [String] {
        let today = UsageDay.start(containing: now)
        var written: [String] = []
        for app in try await store.apps(accountID: nil) {
            let created = UsageDay.start(containing: app.createdAt)
            for back in (1...max(1, catchUpDays)).reversed() {
                let day = today.addingTimeInterval(-86_400 * Double(back))
                guard day >= created else { continue }
                let range = try ExportRange(from: day, to: day.addingTimeInterval(86_400))
                var kinds: [ExportKind] = [.transactions, .events, .usage]
                if back == 1 { kinds.append(.customers) }
                for kind in kinds {
                    let path = try await write(
                        ExportRequest(appID: app.id, kind: kind, range: kind == .customers ? .all : range),
                        app: app, day: day, now: now)
                    if let path { written.append(path) }
                }
            }
        }
        return written
    }

    /// The file of `request` for `day`, written unless it exists; returns its path when written.
    func write(_ request: ExportRequest, app: App, day: Date, now: Date) async throws -> String? {
        let folder = directory.appendingPathComponent(app.id.uuidString.lowercased())
            .appendingPathComponent(UsageDay(containing: day).description)
        let file = folder.appendingPathComponent("\(request.kind.rawValue).\(request.format.fileExtension)")
        let manager = FileManager.default
        if manager.fileExists(atPath: file.path) { return nil }
        try manager.createDirectory(at: folder, withIntermediateDirectories: true)
        // A name of its own per writer: two servers never write into one part file.
        let part = folder.appendingPathComponent(".\(request.kind.rawValue).\(UUID().uuidString).part")
        _ = try await AtomicFile.write(path: file.path, partPath: part.path) { output in
            try await exporter.run(request, app: app, now: now) { try output.write($0) }
        }
        return file.path
    }
}
