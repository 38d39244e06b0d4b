import ArgumentParser

/// `receiptverify`: runs the service and administers accounts, keys, apps and plans.
@main
struct ReceiptVerify: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "receiptverify",
        abstract: "App Store receipt verification service and its administration.",
        subcommands: [
            Serve.self, Migrate.self, AccountCommand.self, KeyCommand.self, AppCommand.self, PlanCommand.self,
        ])
}
