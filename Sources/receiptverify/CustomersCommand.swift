import ArgumentParser
import Foundation
import ReceiptCore
import ReceiptService

/// `receiptverify customers …`: what an app's customers may use now.
struct CustomersCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "customers", abstract: "Show an app's customers: their entitlements, subscriptions and purchases.",
        subcommands: [Show.self, Import.self, Refunds.self])

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show what a user of the app may use now (docs/api.md, \"Customers and entitlements\").")
        @Argument(help: "App token.") var app: String
        @Argument(help: "The app's user id (app_user_id); leave out with --original-transaction-id.") var user: String?
        @Option(help: "The original transaction, when no user is given.") var originalTransactionID: String?
        @Option(help: "production, sandbox or xcode (default: the customer's production facts, else sandbox).")
        var environment: String?
        @OptionGroup var options: GlobalOptions

        func run() async throws {
            var chosen: StoreEnvironment?
            if let environment {
                guard let named = StoreEnvironment(configurationName: environment) else {
                    throw CommandFailure("--environment must be production, sandbox or xcode")
                }
                chosen = named
            }
            let view = try await options.withTenancy { [app, user, originalTransactionID, chosen] in
                try await $0.customer(
                    token: app, user: user, originalTransactionID: originalTransactionID, environment: chosen
                ).view
            }
            if options.json {
                print(String(decoding: JSONValue.object(view.json).encoded, as: UTF8.self))
                return
            }
            let date: (Int64?) -> String = { $0.map { AppleDate.rfc3339(milliseconds: $0) } ?? "-" }
            print("customer \(view.appUserID ?? view.originalTransactionID ?? "-") (\(view.environment.rawValue))")
            print("\nENTITLEMENTS")
            Output.table(
                view.entitlements,
                columns: [
                    ("NAME", \.name), ("ACTIVE", { $0.isActive ? "yes" : "no" }),
                    ("EXPIRES", { $0.expiresAt == nil ? "never" : date($0.expiresAt) }),
                    ("GRACE UNTIL", { date($0.gracePeriodExpiresAt) }),
                    ("RENEWS", { $0.willRenew.map { $0 ? "yes" : "no" } ?? "-" }), ("PERIOD", \.periodType.rawValue),
                    ("PRODUCT", \.productID), ("REFUNDED", { date($0.refundedAt) }),
                ])
            print("\nSUBSCRIPTIONS")
            Output.table(
                view.subscriptions,
                columns: [
                    ("ORIGINAL", \.originalTransactionID), ("PRODUCT", \.productID), ("STATUS", \.status.rawValue),
                    ("EXPIRES", { date($0.expiresAt) }), ("PERIODS", { String($0.periods) }),
                ])
            print("\nPURCHASES")
            Output.table(
                view.purchases,
                columns: [
                    ("TRANSACTION", \.transactionID), ("PRODUCT", \.productID), ("TYPE", { $0.kind?.name ?? "-" }),
                    ("PURCHASED", { date($0.purchasedAt) }), ("REFUNDED", { date($0.refundedAt) }),
                ])
            if !view.unknownProducts.isEmpty {
                print("\nnot in the catalog (grant nothing): \(view.unknownProducts.joined(separator: ", "))")
            }
        }
    }

    struct Import: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "import",
            abstract:
                "Fill the ledger and entitlements of existing customers from Apple's Transaction History (the app's "
                + "App Store Server API credentials).",
            discussion:
                "Each original transaction's history is recorded as a verified input, claimed by the user given "
                + "beside it, and counts as delivered. Idempotent: run it again after an interruption, with "
                + "--skip-known to leave out what the ledger holds already.")
        @Argument(help: "App token.") var app: String
        @Option(help: "An original transaction id to import; repeat.") var originalTransactionID: [String] = []
        @Option(help: "A file of lines ORIGINAL_TRANSACTION_ID[,APP_USER_ID] (# starts a comment).") var file: String?
        @Flag(help: "Leave out original transactions the app's ledger holds already (resumes a run cut short).")
        var skipKnown = false
        @OptionGroup var storeKit: StoreKitOptions
        @OptionGroup var options: GlobalOptions

        func run() async throws {
            var items = originalTransactionID.map { CustomerImport.Item(originalTransactionID: $0, user: nil) }
            if let file {
                guard let data = FileManager.default.contents(atPath: file) else {
                    throw CommandFailure("cannot read \(file)")
                }
                items += try CustomerImport.Item.parse(String(decoding: data, as: UTF8.self))
            }
            guard !items.isEmpty else { throw CommandFailure("give --original-transaction-id or --file") }
            let verifier = try await storeKit.verifier()
            let json = options.json
            let report = try await storeKit.withClient(verifier: verifier) { client in
                try await options.withTenancy { [app, items, skipKnown] tenancy in
                    try await CustomerImport(storeKit: client, tenancy: tenancy).run(
                        token: app, items: items, skipKnown: skipKnown
                    ) { done, total in
                        // A progress bar on the terminal (stderr), twenty steps wide.
                        guard !json else { return }
                        let filled = total == 0 ? 20 : done * 20 / total
                        let bar = String(repeating: "#", count: filled) + String(repeating: ".", count: 20 - filled)
                        FileHandle.standardError.write(Data("\r[\(bar)] \(done)/\(total)".utf8))
                        if done == total { FileHandle.standardError.write(Data("\n".utf8)) }
                    }
                }
            }
            if json {
                var object = JSONObject(capacity: 5)
                object.append("imported", .integer(Int64(report.imported)))
                object.append("new_transactions", .integer(Int64(report.newTransactions)))
                object.append("known_transactions", .integer(Int64(report.knownTransactions)))
                object.append("skipped", .integer(Int64(report.skipped)))
                object.append("failed", .array(report.failed.map { .string($0) }))
                print(JSONValue.object(object).encodedString)
            } else {
                print(
                    "\(report.imported) of \(items.count) imported: \(report.newTransactions) transactions new, "
                        + "\(report.knownTransactions) known"
                        + (report.skipped > 0 ? "; \(report.skipped) skipped, already in the ledger" : ""))
                for failure in report.failed { print("failed: \(failure)") }
            }
            if !report.failed.isEmpty { throw ExitCode(1) }
        }
    }

    struct Refunds: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "List Apple's refund requests of the app (CONSUMPTION_REQUEST) and the app's answers "
                + "(docs/notifications.md, \"Refund requests\").")
        @Argument(help: "App token.") var app: String
        @Option(help: "How many, newest first (1-1000).") var limit = 50
        @OptionGroup var options: GlobalOptions

        func run() async throws {
            guard (1...1_000).contains(limit) else { throw CommandFailure("--limit must be from 1 to 1000") }
            let answers = try await options.withTenancy { [app, limit] in
                try await $0.consumptionAnswers(token: app, limit: limit)
            }
            let date: (Date?) -> String = { $0.map(LedgerEntry.rfc3339) ?? "-" }
            if options.json {
                let list: [JSONValue] = answers.map { answer in
                    var object = JSONObject(capacity: 10)
                    object.append("transaction_id", .string(answer.transactionID))
                    object.append("environment", .string(answer.environment.rawValue))
                    object.append("requests", .integer(Int64(answer.requests)))
                    object.append("requested_at", .string(date(answer.firstRequestedAt)))
                    object.append("state", answer.state.map { .string($0) } ?? .null)
                    object.append("attempts", .integer(Int64(answer.attempts)))
                    let sent = answer.body.flatMap { try? JSONParser.parse(Array($0.utf8)) }
                    object.append("sent", sent ?? .null)
                    object.append("apple_status", answer.appleStatus.map { .integer(Int64($0)) } ?? .null)
                    object.append("error", answer.lastError.map { .string($0) } ?? .null)
                    object.append("answered_at", answer.answeredAt.map { .string(date($0)) } ?? .null)
                    return .object(object)
                }
                print(JSONValue.array(list).encodedString)
                return
            }
            Output.table(
                answers,
                columns: [
                    ("TRANSACTION", \.transactionID), ("ENVIRONMENT", \.environment.rawValue),
                    ("REQUESTS", { String($0.requests) }), ("REQUESTED", { date($0.firstRequestedAt) }),
                    ("ANSWER", { $0.state ?? "not answered (policy off)" }), ("ATTEMPTS", { String($0.attempts) }),
                    ("APPLE", { $0.appleStatus.map(String.init) ?? "-" }), ("ANSWERED", { date($0.answeredAt) }),
                    ("ERROR", { $0.lastError ?? "" }),
                ])
        }
    }
}
