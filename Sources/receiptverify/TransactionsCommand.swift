import ArgumentParser
import Foundation
import ReceiptCore
import ReceiptService

/// `receiptverify transactions …`: an app's ledger.
struct TransactionsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "transactions", abstract: "Look up an app's ledger and move or release claims.",
        subcommands: [List.self, Claim.self, Release.self])

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List an app's ledger rows, oldest first.")
        @Option(help: "App token.") var app: String
        @Option(help: "Only the purchases this user of the app claimed.") var user: String?
        @Option(help: "Only this original transaction's.") var originalTransactionID: String?
        @Option(help: "Only those first seen on or after this UTC day (YYYY-MM-DD).") var since: String?
        @Option(help: "At most this many rows.") var limit = 1_000
        @OptionGroup var options: GlobalOptions

        func run() async throws {
            let sinceDate = try since.map { try Day.start($0, option: "--since") }
            let entries = try await options.withTenancy { [app, user, originalTransactionID, limit, sinceDate] in
                try await $0.ledgerEntries(
                    token: app, user: user, originalTransactionID: originalTransactionID, since: sinceDate,
                    limit: limit)
            }
            if options.json {
                print(String(decoding: JSONValue.array(entries.map { .object($0.json) }).encoded, as: UTF8.self))
                return
            }
            Output.table(
                entries,
                columns: [
                    ("TRANSACTION", \.transaction.transactionID),
                    ("ORIGINAL", \.transaction.originalTransactionID), ("PRODUCT", \.transaction.productID),
                    ("ENVIRONMENT", \.environment.configurationName),
                    ("REFUNDED", { $0.transaction.revocationDate.map { AppleDate.rfc3339(milliseconds: $0) } ?? "-" }),
                    ("USER", { $0.claimant ?? "-" }), ("FIRST SEEN", { Output.date($0.firstSeenAt) }),
                    ("DELIVERED", { Output.date($0.deliveredAt) }),
                ])
        }
    }

    struct Claim: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Give an original transaction's purchases to a user of the app (moves an existing claim).")
        @Option(help: "App token.") var app: String
        @Argument(help: "Original transaction id.") var originalTransactionID: String
        @Option(help: "The app's user id that now owns the purchase.") var user: String
        @OptionGroup var options: GlobalOptions

        func run() async throws {
            try await options.withTenancy { [app, originalTransactionID, user] in
                try await $0.setClaim(token: app, originalTransactionID: originalTransactionID, user: user)
            }
            if !options.json { print("claimed \(originalTransactionID) for \(user)") }
        }
    }

    struct Release: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Release an original transaction's claim: the next user to present it claims it.")
        @Option(help: "App token.") var app: String
        @Argument(help: "Original transaction id.") var originalTransactionID: String
        @OptionGroup var options: GlobalOptions

        func run() async throws {
            try await options.withTenancy { [app, originalTransactionID] in
                try await $0.setClaim(token: app, originalTransactionID: originalTransactionID, user: nil)
            }
            if !options.json { print("released \(originalTransactionID)") }
        }
    }
}
