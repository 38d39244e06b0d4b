import ArgumentParser
import Foundation
import ReceiptCore
import ReceiptService

/// `receiptverify customers …`: what an app's customers may use now.
struct CustomersCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "customers", abstract: "Show an app's customers: their entitlements, subscriptions and purchases.",
        subcommands: [Show.self])

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
            var chosen: AppStoreEnvironment?
            if let environment {
                guard let named = AppStoreEnvironment(configurationName: environment) else {
                    throw CommandFailure("--environment must be production, sandbox or xcode")
                }
                chosen = named
            }
            let view = try await options.withTenancy { [app, user, originalTransactionID, chosen] in
                try await $0.customer(
                    token: app, user: user, originalTransactionID: originalTransactionID, environment: chosen)
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
}
