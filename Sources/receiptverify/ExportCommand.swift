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
            let exporter = Exporter(store: tenancy.store)
            // Only an export that can run opens its file: FILE.part, renamed to FILE once complete (a failed export
            // leaves no FILE and no part file).
            guard let output else {
                return try await exporter.run(request, app: app) { try FileHandle.standardOutput.write(contentsOf: $0) }
            }
            return try await AtomicFile.write(path: output) { file in
                try await exporter.run(request, app: app) { try file.write($0) }
            }
        }
        FileHandle.standardError.write(Data("exported \(written) \(kind.lowercased()) rows\n".utf8))
    }
}
