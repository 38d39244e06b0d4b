import ArgumentParser
import ReceiptService

/// `receiptverify account …`
struct AccountCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "account", abstract: "Create and manage customer accounts.",
        subcommands: [Create.self, List.self, Show.self, SetPlan.self, Disable.self, Enable.self])

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Create an account.")
        @Option(help: "Display name.") var name: String
        @Option(help: "Contact email; unique.") var email: String
        @Option(help: "Plan name.") var plan = "free"
        @OptionGroup var options: GlobalOptions

        func run() async throws {
            let account = try await options.withTenancy { [name, email, plan] in
                try await $0.createAccount(name: name, email: email, planName: plan)
            }
            try Output.show(AccountView(account), json: options.json)
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List accounts.")
        @OptionGroup var options: GlobalOptions

        func run() async throws {
            let accounts = try await options.withTenancy { try await $0.accounts() }
            try Output.list(
                accounts.map(AccountView.init), json: options.json,
                columns: [
                    ("ID", \.id), ("EMAIL", \.email), ("PLAN", \.plan), ("ENABLED", { $0.enabled ? "yes" : "no" }),
                    ("NAME", \.name),
                ])
        }
    }

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Show one account.")
        @Argument(help: "Account id or email.") var account: String
        @OptionGroup var options: GlobalOptions

        func run() async throws {
            let found = try await options.withTenancy { [account] in try await $0.account(account) }
            try Output.show(AccountView(found), json: options.json)
        }
    }

    struct SetPlan: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "set-plan", abstract: "Move an account to a plan.")
        @Argument(help: "Account id or email.") var account: String
        @Argument(help: "Plan name.") var plan: String
        @OptionGroup var options: GlobalOptions

        func run() async throws {
            let updated = try await options.withTenancy { [account, plan] in
                try await $0.setPlan(ofAccount: account, to: plan)
            }
            try Output.show(AccountView(updated), json: options.json)
        }
    }

    struct Disable: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Disable an account: its calls get 401.")
        @Argument(help: "Account id or email.") var account: String
        @OptionGroup var options: GlobalOptions

        func run() async throws {
            let updated = try await options.withTenancy { [account] in try await $0.setEnabled(account: account, false)
            }
            try Output.show(AccountView(updated), json: options.json)
        }
    }

    struct Enable: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Enable a disabled account.")
        @Argument(help: "Account id or email.") var account: String
        @OptionGroup var options: GlobalOptions

        func run() async throws {
            let updated = try await options.withTenancy { [account] in try await $0.setEnabled(account: account, true) }
            try Output.show(AccountView(updated), json: options.json)
        }
    }
}
