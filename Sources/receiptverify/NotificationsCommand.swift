import Clients
import ArgumentParser
import Foundation
import ReceiptCore
import ReceiptService

/// `receiptverify notifications …`: App Store Server Notifications (docs/notifications.md).
struct NotificationsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "notifications",
        abstract:
            "List an app's App Store Server Notifications, recover missed ones, and have Apple send a test notification.",
        subcommands: [List.self, Test.self, Recover.self, RequestTest.self])

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "The app's latest notifications received, Apple's and Google Play's: type, subtype, environment, when signed and received."
        )
        @Option(help: "App token.") var app: String
        @Option(help: "How many (1-1000).") var limit = 20
        @OptionGroup var options: GlobalOptions

        func run() async throws {
            guard (1...1_000).contains(limit) else { throw CommandFailure("--limit must be from 1 to 1000") }
            let received = try await options.withTenancy { [app, limit] tenancy in
                try await tenancy.store.recentNotifications(appID: try await tenancy.app(token: app).id, limit: limit)
            }
            if options.json {
                print(JSONValue.array(received.map { .object($0.json) }).encodedString)
                return
            }
            Output.table(
                received,
                columns: [
                    ("RECEIVED", { Output.date($0.receivedAt) }), ("TYPE", \.type), ("SUBTYPE", { $0.subtype ?? "-" }),
                    ("ENVIRONMENT", \.environment.rawValue), ("SIGNED", { Output.date($0.signedDate) }),
                    ("SOURCE", { $0.source == "history" ? "recovered" : $0.source == "google" ? "Google" : "Apple" }),
                    ("UUID", \.uuid),
                ])
        }
    }

    struct Test: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Have Apple send a TEST notification to the app's URL, then wait for Apple's result (SUCCESS, or why not)."
        )
        @Option(help: "App token.") var app: String
        @Option(help: "production or sandbox.") var environment = "sandbox"
        @Option(help: "Seconds to wait for Apple's result (0-300).") var wait = 60
        @OptionGroup var storeKit: StoreKitOptions
        @OptionGroup var options: GlobalOptions

        func run() async throws {
            guard let chosen = StoreEnvironment(configurationName: environment), chosen != .xcode else {
                throw CommandFailure("--environment must be production or sandbox")
            }
            guard (0...300).contains(wait) else { throw CommandFailure("--wait must be from 0 to 300 seconds") }
            let credentials = try await storeKit.credentials(ofApp: app, options: options)
            let (token, results) = try await storeKit.withClient(verifier: try await storeKit.verifier()) {
                [wait] client in
                let token = try await client.requestTestNotification(environment: chosen, credentials: credentials)
                let deadline = ContinuousClock.now + .seconds(wait)
                var results: [String] = []
                while results.isEmpty && ContinuousClock.now < deadline {
                    try await Task.sleep(for: .seconds(1))
                    results = try await client.testNotificationStatus(
                        token: token, environment: chosen, credentials: credentials)
                }
                return (token, results)
            }
            if options.json {
                print(
                    JSONValue.object([
                        "test_notification_token": .string(token),
                        "send_attempts": .array(results.map { .string($0) }),
                    ]).encodedString)
            } else {
                print(
                    "test notification \(token): "
                        + (results.isEmpty ? "no attempt by Apple yet" : results.joined(separator: ", ")))
            }
            if let last = results.last, last != "SUCCESS" { throw ExitCode(1) }
        }
    }

    struct Recover: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "recover",
            abstract:
                "Ask Apple's Notification History (failures only) with the app's credentials and record what was missed.",
            aliases: ["reconcile"]
        )
        @Option(help: "App token.") var app: String
        @Option(help: "From this UTC day (YYYY-MM-DD); Apple keeps 180 days.") var since: String
        @Option(help: "Up to the end of this UTC day (default: now).") var until: String?
        @OptionGroup var storeKit: StoreKitOptions
        @OptionGroup var options: GlobalOptions

        func run() async throws {
            let start = try Day.start(since, option: "--since")
            let end = try until.map { try Day.start($0, option: "--until").addingTimeInterval(86_400) } ?? Date()
            let verifier = try await storeKit.verifier()
            let report = try await storeKit.withClient(verifier: verifier) { client in
                try await options.withTenancy { [app] tenancy in
                    let found = try await tenancy.app(token: app)
                    let reconciler = NotificationReconciler(
                        intake: NotificationIntake(
                            verifier: verifier, store: tenancy.store, deadline: StoreDeadline(nil)),
                        storeKit: client, tenancy: tenancy, maximumPages: .max)
                    return try await reconciler.reconcile(found, since: start, until: min(end, Date()))
                }
            }
            if options.json {
                var object = JSONObject(capacity: 4)
                object.append("found", .integer(Int64(report.found)))
                object.append("recorded", .integer(Int64(report.recorded)))
                object.append("duplicates", .integer(Int64(report.duplicates)))
                object.append("refused", .array(report.refused.map { .string($0) }))
                print(JSONValue.object(object).encodedString)
            } else {
                print(
                    "\(report.found) failed notifications listed by Apple: \(report.recorded) recorded now, "
                        + "\(report.duplicates) already recorded, \(report.refused.count) refused")
                for reason in report.refused { print("refused: \(reason)") }
            }
        }
    }

    struct RequestTest: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "request-test",
            abstract: "Ask Apple to send a TEST notification to the app's URL; prints Apple's test notification token.")
        @Option(help: "App token.") var app: String
        @Option(help: "production or sandbox.") var environment = "sandbox"
        @OptionGroup var storeKit: StoreKitOptions
        @OptionGroup var options: GlobalOptions

        func run() async throws {
            guard let chosen = StoreEnvironment(configurationName: environment), chosen != .xcode else {
                throw CommandFailure("--environment must be production or sandbox")
            }
            let credentials = try await storeKit.credentials(ofApp: app, options: options)
            let token = try await storeKit.withClient(verifier: try await storeKit.verifier()) { client in
                try await client.requestTestNotification(environment: chosen, credentials: credentials)
            }
            print(options.json ? JSONValue.object(["test_notification_token": .string(token)]).encodedString : token)
        }
    }
}
