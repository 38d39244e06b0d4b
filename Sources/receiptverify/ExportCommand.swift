import ArgumentParser
import Foundation
import ReceiptCore
import ReceiptService

/// `receiptverify export`: an app's transactions, customers, events or usage as JSON Lines or CSV, straight from the
/// database, in constant memory whatever the size (docs/api.md, "Exports").
struct ExportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Export an app's transactions, customers, events or usage as JSON Lines or CSV.",
        discussion:
            "Rows come in the kind's order, each line with a `cursor`: --cursor with the last line's resumes an "
            + "export cut short. With --output the file appears only when complete (written beside it as FILE.part, "
            + "then renamed); a count of the rows goes to standard error.")
    @Argument(help: "App token.") var app: String
    @Option(help: "transactions, customers, events or usage.") var kind: String
    @Option(help: "jsonl or csv.") var format = "jsonl"
    @Option(help: "From this time (RFC 3339) or UTC day (YYYY-MM-DD), included.") var from: String?
    @Option(help: "To this time or UTC day, excluded.") var to: String?
    @Option(help: "Start after the line that carries this cursor.") var cursor: String?
    @Option(help: "At most this many rows.") var limit: Int?
    @Option(name: .shortAndLong, help: "Write to this file (default: standard output).") var output: String?
    @OptionGroup var options: GlobalOptions

    func run() async throws {
        var parameters = ["kind": kind, "format": format]
        parameters["from"] = from
        parameters["to"] = to
        parameters["cursor"] = cursor
        parameters["limit"] = limit.map(String.init)
        let written = try await options.withTenancy { [app, parameters, output] tenancy in
            let app = try await tenancy.app(token: app)
            let request = try ExportRequest(parameters: parameters, appID: app.id)
            // Only an export that can run opens its file.
            let sink = try ExportSink(path: output)
            do {
                let count = try await Exporter(store: tenancy.store).run(request, app: app) { try sink.write($0) }
                try sink.finish()
                return count
            } catch {
                sink.abandon()
                throw error
            }
        }
        FileHandle.standardError.write(Data("exported \(written) \(kind.lowercased()) rows\n".utf8))
    }
}

/// Where an export's bytes go: standard output, or FILE.part renamed to FILE once complete (a failed export leaves
/// no FILE; the part file is removed).
final class ExportSink: @unchecked Sendable {
    private let handle: FileHandle
    private let path: String?

    init(path: String?) throws {
        self.path = path
        guard let path else {
            handle = FileHandle.standardOutput
            return
        }
        let part = path + ".part"
        guard FileManager.default.createFile(atPath: part, contents: nil) else {
            throw CommandFailure("cannot write \(part)")
        }
        handle = try FileHandle(forWritingTo: URL(fileURLWithPath: part))
    }

    func write(_ bytes: [UInt8]) throws { try handle.write(contentsOf: bytes) }

    func finish() throws {
        guard let path else { return }
        try handle.synchronize()
        try handle.close()
        // rename(2) replaces an existing FILE in one step.
        guard rename(path + ".part", path) == 0 else {
            throw CommandFailure("cannot rename \(path).part to \(path): \(String(cString: strerror(errno)))")
        }
    }

    func abandon() {
        guard let path else { return }
        try? handle.close()
        try? FileManager.default.removeItem(atPath: path + ".part")
    }
}
