import Clients
import ArgumentParser
import Foundation
import Logging
import ReceiptCore
import ReceiptService

/// `receiptverify apple …`: asks Apple's App Store Server API with an app's stored credentials.
struct AppleCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "apple", abstract: "Ask Apple's App Store Server API with an app's credentials.",
        subcommands: [
            Transaction.self, SetAppAccountToken.self, Extend.self, ExtendAll.self, Extensions.self,
            AppTransaction.self,
        ])

    struct Transaction: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Get one transaction from Apple (production, then the sandbox), verified; prints its signed payload as JSON."
        )
        @Option(help: "The app's token.") var app: String
        @Argument(help: "The transaction id.") var transactionID: String
        @OptionGroup var storeKit: StoreKitOptions
        @OptionGroup var options: GlobalOptions

        func run() async throws {
            let verifier = try await storeKit.verifier()
            let credentials = try await storeKit.credentials(ofApp: app, options: options)
            let signed = try await storeKit.withClient(verifier: verifier) { client in
                try await client.transactionInfo(transactionID, credentials: credentials)
            }
            print(JSONValue.object(signed.verified.receipt).encodedString)
        }
    }

    /// Runs `body` with Apple's actions for the app with `token` (the operator's, audited as such); Apple's
    /// refusals and the service's become one-line errors.
    static func withActions<T: Sendable>(
        app token: String, storeKit: StoreKitOptions, options: GlobalOptions,
        _ body: @escaping @Sendable (AppleActions, App) async throws -> T
    ) async throws -> T {
        let verifier = try await storeKit.verifier()
        return try await storeKit.withClient(verifier: verifier) { client in
            try await options.withTenancy { tenancy in
                let app = try await tenancy.app(token: token)
                do {
                    return try await body(AppleActions(storeKit: client, tenancy: tenancy, requester: "cli"), app)
                } catch let refusal as AppleActionError {
                    throw CommandFailure("Apple refused: \(refusal.reason)")
                }
            }
        }
    }

    /// `--environment`: production, sandbox (nil when not given).
    static func environment(_ text: String?) throws -> StoreEnvironment? {
        guard let text else { return nil }
        guard let named = StoreEnvironment(configurationName: text), named != .xcode else {
            throw CommandFailure("--environment must be production or sandbox")
        }
        return named
    }

    static func printRecord(_ record: RenewalExtensionRecord, json: Bool) {
        if json {
            print(JSONValue.object(record.json).encodedString)
        } else {
            let target =
                record.originalTransactionID.map { "original transaction \($0)" }
                ?? "product \(record.productID ?? "-")"
            var line = "\(record.requestIdentifier): \(target), \(record.days) days: \(record.state.rawValue)"
            if let date = record.effectiveDate { line += ", now expires \(AppleDate.rfc3339(milliseconds: date))" }
            if let succeeded = record.succeeded { line += ", \(succeeded) extended" }
            if let failed = record.failed { line += ", \(failed) failed" }
            if let error = record.error { line += " (\(error))" }
            print(line)
        }
    }

    struct SetAppAccountToken: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "set-app-account-token",
            abstract:
                "Have Apple put an app account token (a UUID) on a purchase made without one, and claim it for that "
                + "token in the ledger.")
        @Option(help: "The app's token.") var app: String
        @Argument(help: "The original transaction id.") var originalTransactionID: String
        @Argument(help: "The app account token (a UUID).") var appAccountToken: String
        @Option(help: "production or sandbox (default: the ledger's, else production).") var environment: String?
        @OptionGroup var storeKit: StoreKitOptions
        @OptionGroup var options: GlobalOptions

        func run() async throws {
            guard let token = UUID(uuidString: appAccountToken) else {
                throw CommandFailure("the app account token must be a UUID")
            }
            let environment = try AppleCommand.environment(environment)
            let done = try await AppleCommand.withActions(app: app, storeKit: storeKit, options: options) {
                [originalTransactionID] actions, app in
                try await actions.setAppAccountToken(
                    app: app, originalTransactionID: originalTransactionID, token: token, environment: environment)
            }
            print(
                "app account token set in \(done.environment.rawValue)"
                    + (done.claimed ? "; the purchase is claimed by it" : ""))
        }
    }

    struct Extend: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Extend one customer's subscription renewal date (Apple: 1-90 days, twice a year at most).")
        @Option(help: "The app's token.") var app: String
        @Argument(help: "The subscription's original transaction id.") var originalTransactionID: String
        @Option(help: "Days, 1-90.") var days: Int
        @Option(help: "undeclared, customer_satisfaction, other or service_issue_or_outage (or 0-3).") var reason:
            String
        @Option(help: "Your identifier of the request (default: a new UUID); repeat it to repeat the request.")
        var requestIdentifier: String?
        @Option(help: "production or sandbox (default: the ledger's, else production).") var environment: String?
        @OptionGroup var storeKit: StoreKitOptions
        @OptionGroup var options: GlobalOptions

        func run() async throws {
            let request = try AppleCommand.renewalExtension(days: days, reason: reason, identifier: requestIdentifier)
            let environment = try AppleCommand.environment(environment)
            let record = try await AppleCommand.withActions(app: app, storeKit: storeKit, options: options) {
                [originalTransactionID] actions, app in
                try await actions.extendRenewalDate(
                    app: app, originalTransactionID: originalTransactionID, request, environment: environment)
            }
            AppleCommand.printRecord(record, json: options.json)
            if record.state != .extended { throw ExitCode(1) }
        }
    }

    struct ExtendAll: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "extend-all",
            abstract:
                "Extend the renewal date of every active subscriber of a product; the server polls Apple until it "
                + "is complete (--wait polls here).")
        @Option(help: "The app's token.") var app: String
        @Option(help: "The subscription product.") var product: String
        @Option(help: "Days, 1-90.") var days: Int
        @Option(help: "undeclared, customer_satisfaction, other or service_issue_or_outage (or 0-3).") var reason:
            String
        @Option(help: "Limit to a storefront (ISO 3166-1 alpha-3, e.g. USA); repeat.") var storefront: [String] = []
        @Option(help: "Your identifier of the request (default: a new UUID).") var requestIdentifier: String?
        @Option(help: "production or sandbox (default: production).") var environment: String?
        @Flag(help: "Poll Apple here until the extension is complete.") var wait = false
        @Option(help: "Seconds between polls (with --wait, and the server's first poll).") var pollSeconds = 300
        @OptionGroup var storeKit: StoreKitOptions
        @OptionGroup var options: GlobalOptions

        func run() async throws {
            let request = try AppleCommand.renewalExtension(days: days, reason: reason, identifier: requestIdentifier)
            let environment = try AppleCommand.environment(environment) ?? .production
            guard (1...86_400).contains(pollSeconds) else { throw CommandFailure("--poll-seconds must be 1 to 86400") }
            let storefronts: [String]
            do { storefronts = try RenewalExtension.storefronts(storefront) } catch let error as ServiceError {
                throw CommandFailure(error.reason)
            }
            let (product, wait, json, pause) = (product, wait, options.json, TimeInterval(pollSeconds))
            let record = try await AppleCommand.withActions(app: app, storeKit: storeKit, options: options) {
                actions, app in
                var record = try await actions.massExtendRenewalDate(
                    app: app, productID: product, storefronts: storefronts, request, environment: environment,
                    pollAfter: pause)
                while wait, record.state == .requested {
                    if !json { AppleCommand.printRecord(record, json: false) }
                    try await Task.sleep(for: .seconds(pause))
                    record = await actions.pollMassExtension(record, app: app, pollAfter: pause)
                }
                return record
            }
            AppleCommand.printRecord(record, json: options.json)
            if record.state != .requested && record.state != .complete { throw ExitCode(1) }
        }
    }

    struct Extensions: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List the app's renewal-date extensions, newest first, with Apple's answers.")
        @Option(help: "The app's token.") var app: String
        @Option(help: "How many (1-1000).") var limit = 50
        @OptionGroup var options: GlobalOptions

        func run() async throws {
            guard (1...1_000).contains(limit) else { throw CommandFailure("--limit must be from 1 to 1000") }
            let records = try await options.withTenancy { [app, limit] tenancy in
                try await tenancy.store.renewalExtensions(appID: try await tenancy.app(token: app).id, limit: limit)
            }
            if options.json {
                print(JSONValue.array(records.map { .object($0.json) }).encodedString)
                return
            }
            let date: (Int64?) -> String = { $0.map { AppleDate.rfc3339(milliseconds: $0) } ?? "-" }
            Output.table(
                records,
                columns: [
                    ("REQUEST", \.requestIdentifier), ("ENVIRONMENT", \.environment.rawValue),
                    ("SUBSCRIPTION", { $0.originalTransactionID ?? "all of \($0.productID ?? "-")" }),
                    ("DAYS", { String($0.days) }), ("REASON", \.reason.name), ("STATE", \.state.rawValue),
                    ("EXPIRES", { date($0.effectiveDate) }), ("EXTENDED", { $0.succeeded.map(String.init) ?? "-" }),
                    ("FAILED", { $0.failed.map(String.init) ?? "-" }), ("BY", \.actor), ("ERROR", { $0.error ?? "" }),
                ])
        }
    }

    struct AppTransaction: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "app-transaction",
            abstract: "Get the customer's app transaction from Apple by any of their transaction ids, verified.")
        @Option(help: "The app's token.") var app: String
        @Argument(help: "Any transaction id of the customer.") var transactionID: String
        @Option(help: "production or sandbox (default: production, then the sandbox).") var environment: String?
        @OptionGroup var storeKit: StoreKitOptions
        @OptionGroup var options: GlobalOptions

        func run() async throws {
            let environment = try AppleCommand.environment(environment)
            let signed = try await AppleCommand.withActions(app: app, storeKit: storeKit, options: options) {
                [transactionID] actions, app in
                try await actions.appTransaction(app: app, transactionID: transactionID, environment: environment)
            }
            print(JSONValue.object(signed.receipt).encodedString)
        }
    }

    /// An extension from the options; a one-line error for a bad one.
    static func renewalExtension(days: Int, reason: String, identifier: String?) throws -> RenewalExtension {
        guard let reason = RenewalExtension.Reason(text: reason) else {
            let names = RenewalExtension.Reason.allCases.map(\.name).joined(separator: ", ")
            throw CommandFailure("--reason must be one of \(names) (or 0-3)")
        }
        do {
            return try RenewalExtension(
                days: days, reason: reason, requestIdentifier: identifier ?? UUID().uuidString.lowercased())
        } catch let error as ServiceError {
            throw CommandFailure(error.reason.replacingOccurrences(of: "extend_by_days", with: "--days"))
        }
    }
}
