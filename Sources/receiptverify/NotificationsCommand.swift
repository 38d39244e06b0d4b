import AppleClients
import ArgumentParser
import Foundation
import ReceiptCore
import ReceiptService

/// `receiptverify notifications …`: App Store Server Notifications (docs/notifications.md).
struct NotificationsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "notifications",
        abstract: "Recover missed App Store Server Notifications and ask Apple for a test notification.",
        subcommands: [Reconcile.self, RequestTest.self])

    struct Reconcile: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Ask Apple's Notification History (failures only) with the app's credentials and record what was missed."
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
            guard let chosen = AppStoreEnvironment(configurationName: environment), chosen != .xcode else {
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
