import ArgumentParser
import Foundation
import ReceiptService

/// `receiptverify account …`
struct AccountCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "account", abstract: "Create and manage customer accounts.",
        subcommands: [
            Create.self, List.self, Show.self, SetPlan.self, Disable.self, Enable.self, LoginLink.self, SignOut.self,
        ])

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
                    ("SIGNED UP", \.signedUpWith), ("NAME", \.name),
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

    struct LoginLink: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "login-link",
            abstract:
                "Print a one-time, short-lived link that signs in to the account screen (no identity provider needed).")
        @Argument(help: "Account id or email.") var account: String
        @Option(
            help:
                "The server's public URL the link starts with. Env: RECEIPTVERIFY_PUBLIC_URL. Default: http://127.0.0.1:8080"
        )
        var publicURL: String?
        @Option(help: "Minutes the link works. Env: RECEIPTVERIFY_LOGIN_LINK_MINUTES. Default: 15") var minutes: Int?
        @OptionGroup var options: GlobalOptions

        func run() async throws {
            let environment = ProcessInfo.processInfo.environment
            let base = publicURL ?? environment["RECEIPTVERIFY_PUBLIC_URL"] ?? "http://127.0.0.1:8080"
            let minutes = minutes ?? environment["RECEIPTVERIFY_LOGIN_LINK_MINUTES"].flatMap { Int($0) } ?? 15
            guard (1...1_440).contains(minutes) else { throw CommandFailure("--minutes must be 1...1440") }
            let link = try await options.withTenancy { [account] tenancy in
                try await CustomerService(
                    tenancy: tenancy, settings: CustomerSettings(signInLinkLifetime: Double(minutes) * 60)
                ).makeSignInLink(account: account)
            }
            let url = (base.hasSuffix("/") ? String(base.dropLast()) : base) + "/auth/link?token=" + link.token
            if options.json {
                try Output.show(LinkView(url: url, expiresAt: link.expiresAt), json: true)
            } else {
                print(url)
                FileHandle.standardError.write(
                    Data("note: works once, until \(link.expiresAt.ISO8601Format())\n".utf8))
            }
        }

        struct LinkView: Encodable {
            var url: String
            var expiresAt: Date
            enum CodingKeys: String, CodingKey {
                case url
                case expiresAt = "expires_at"
            }
        }
    }

    struct SignOut: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "sign-out", abstract: "End every browser session of an account.")
        @Argument(help: "Account id or email.") var account: String
        @OptionGroup var options: GlobalOptions

        func run() async throws {
            let count = try await options.withTenancy { [account] tenancy in
                try await CustomerService(tenancy: tenancy, settings: CustomerSettings()).endSessions(account: account)
            }
            if options.json { print(#"{"sessions_ended":\#(count)}"#) } else { print("ended \(count) sessions") }
        }
    }
}
