import ArgumentParser
import Foundation
import ReceiptService

/// `receiptverify key …`
struct KeyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "key", abstract: "Create, list and revoke an account's API keys.",
        subcommands: [Create.self, List.self, Revoke.self])

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create an API key; it is printed once and only its hash is stored.")
        @Option(help: "Account id or email.") var account: String
        @Option(help: "A label to recognise the key by.") var label: String?
        @OptionGroup var options: GlobalOptions

        func run() async throws {
            let created = try await options.withTenancy { [account, label] in
                try await $0.createAPIKey(account: account, label: label)
            }
            try Output.show(APIKeyView(created.key, clearText: created.clearText), json: options.json)
            if !options.json {
                FileHandle.standardError.write(Data("note: store this key now; it cannot be shown again\n".utf8))
            }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List an account's API keys (prefixes only).")
        @Option(help: "Account id or email.") var account: String
        @OptionGroup var options: GlobalOptions

        func run() async throws {
            let keys = try await options.withTenancy { [account] in try await $0.apiKeys(account: account) }
            try Output.list(
                keys.map { APIKeyView($0) }, json: options.json,
                columns: [
                    ("ID", \.id), ("PREFIX", \.prefix), ("CREATED", { Output.date($0.createdAt) }),
                    ("LAST USED", { Output.date($0.lastUsedAt) }), ("REVOKED", { Output.date($0.revokedAt) }),
                    ("LABEL", { $0.label ?? "-" }),
                ])
        }
    }

    struct Revoke: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Revoke an API key at once.")
        @Option(help: "Account id or email.") var account: String
        @Argument(help: "Key id or prefix.") var key: String
        @OptionGroup var options: GlobalOptions

        func run() async throws {
            let revoked = try await options.withTenancy { [account, key] in
                try await $0.revokeAPIKey(account: account, key: key)
            }
            try Output.show(APIKeyView(revoked), json: options.json)
        }
    }
}
