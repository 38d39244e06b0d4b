import ArgumentParser
import Foundation
import ReceiptService

/// `receiptverify audit`: the audit log of account changes, newest first.
struct AuditCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "audit",
        abstract: "List the audit log: who changed what on which account, when, from which address; newest first.")

    @Option(help: "Only this account (id or email).") var account: String?
    @Option(help: "At most this many entries (1-10000).") var limit = 100
    @OptionGroup var options: GlobalOptions

    func run() async throws {
        let entries = try await options.withTenancy { [account, limit] tenancy in
            try await CustomerService(tenancy: tenancy, settings: CustomerSettings()).auditEntries(
                account: account, limit: limit)
        }
        try Output.list(
            entries.map(AuditEntryView.init), json: options.json,
            columns: [
                ("AT", { $0.at.ISO8601Format() }), ("ACCOUNT", \.accountID), ("ACTOR", \.actor), ("ACTION", \.action),
                ("ADDRESS", { $0.address ?? "-" }), ("DETAIL", \.detail),
            ])
    }
}
