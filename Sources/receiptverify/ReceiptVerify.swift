import ArgumentParser
import Foundation

/// `receiptverify`: runs the service and administers accounts, keys, apps and plans.
@main
struct ReceiptVerify: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "receiptverify",
        abstract: "App Store receipt verification service and its administration.",
        subcommands: [
            Serve.self, Migrate.self, VerifyCommand.self, AccountCommand.self, KeyCommand.self, AppCommand.self,
            PlanCommand.self, UsageCommand.self, BillingCommand.self, TransactionsCommand.self, AuditCommand.self,
            AppleCommand.self, NotificationsCommand.self, WebhooksCommand.self, EventsCommand.self,
            CustomersCommand.self, ExportCommand.self,
        ])

    /// Parses and runs a command; a usage error is one `error: …` line, like every other failure.
    static func main() async {
        do {
            var command = try parseAsRoot()
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch let exitCode as ExitCode {
            // Already reported by the command.
            Foundation.exit(exitCode.rawValue)
        } catch {
            let code = exitCode(for: error)
            guard code != .success else { exit(withError: error) }  // --help and friends
            let message = self.message(for: error)
            FileHandle.standardError.write(Data("error: \(message) (see --help)\n".utf8))
            Foundation.exit(code.rawValue)
        }
    }
}
