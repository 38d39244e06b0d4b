import Clients
import ArgumentParser
import Foundation
import Logging
import ReceiptCore
import ReceiptService

/// `receiptverify webhooks …`: an app's webhook endpoints (docs/webhooks.md).
struct WebhooksCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "webhooks", abstract: "Add, list, remove and test an app's webhook endpoints.",
        subcommands: [Add.self, List.self, Pause.self, Resume.self, RotateSecret.self, Remove.self, Test.self])

    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Add an endpoint; prints its signing secret, shown this once.")
        @Option(help: "App token.") var app: String
        @Option(help: "Where events are POSTed (https://…).") var url: String
        @Option(help: "An environment whose events it takes: production, sandbox, xcode; repeat (default: all).")
        var environment: [String] = []
        @Option(help: "An event type it takes: a type, prefix.*, or * (default); repeat.") var event: [String] = []
        @Flag(help: "Add Apple's signedPayload to notification events.") var forwardSignedPayload = false
        @OptionGroup var options: GlobalOptions

        func run() async throws {
            let environments = try Set(
                environment.map { name in
                    guard let value = StoreEnvironment(configurationName: name) else {
                        throw CommandFailure("unknown environment \(name): production, sandbox or xcode")
                    }
                    return value
                })
            let types = event.isEmpty ? ["*"] : event
            let (endpoint, secret) = try await options.withTenancy {
                [app, url, environments, types, forwardSignedPayload] in
                try await $0.addWebhookEndpoint(
                    token: app, url: url, environments: environments, eventTypes: types,
                    forwardsSignedPayload: forwardSignedPayload)
            }
            if options.json {
                var object = endpoint.json
                object.append("secret", .string(secret))
                print(JSONValue.object(object).encodedString)
            } else {
                print("endpoint \(endpoint.id.uuidString.lowercased()) → \(endpoint.url)")
                print(
                    "secret \(secret)  (shown once: verify each delivery's webhook-signature with a Standard Webhooks library, or its ReceiptVerify-Signature)"
                )
            }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List an app's endpoints.")
        @Option(help: "App token.") var app: String
        @OptionGroup var options: GlobalOptions

        func run() async throws {
            let endpoints = try await options.withTenancy { [app] in try await $0.webhookEndpoints(token: app) }
            if options.json {
                print(JSONValue.array(endpoints.map { .object($0.json) }).encodedString)
                return
            }
            Output.table(
                endpoints,
                columns: [
                    ("ID", { $0.id.uuidString.lowercased() }), ("URL", \.url),
                    ("ENVIRONMENTS", { $0.environments.map(\.configurationName).sorted().joined(separator: ",") }),
                    ("EVENTS", { $0.eventTypes.joined(separator: ",") }),
                    ("FORWARDS", { $0.forwardsSignedPayload ? "signed payload" : "-" }),
                    ("STATE", { $0.isEnabled ? "active" : "paused" }),
                    ("CREATED", { Output.date($0.createdAt) }),
                ])
        }
    }

    struct Pause: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Pause an endpoint: its deliveries wait, unattempted, until it is resumed.")
        @Option(help: "App token.") var app: String
        @Option(help: "Endpoint id.") var id: String
        @OptionGroup var options: GlobalOptions

        func run() async throws { try await set(app: app, id: id, enabled: false, options: options) }
    }

    struct Resume: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Resume a paused endpoint.")
        @Option(help: "App token.") var app: String
        @Option(help: "Endpoint id.") var id: String
        @OptionGroup var options: GlobalOptions

        func run() async throws { try await set(app: app, id: id, enabled: true, options: options) }
    }

    /// Pauses or resumes an endpoint and prints it.
    static func set(app: String, id: String, enabled: Bool, options: GlobalOptions) async throws {
        guard let endpointID = UUID(uuidString: id) else { throw CommandFailure("--id is not an endpoint id") }
        let endpoint = try await options.withTenancy {
            try await $0.setWebhookEndpoint(token: app, id: endpointID, enabled: enabled)
        }
        if options.json {
            print(JSONValue.object(endpoint.json).encodedString)
        } else {
            print("\(enabled ? "resumed" : "paused") \(endpointID.uuidString.lowercased())")
        }
    }

    struct RotateSecret: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "rotate-secret",
            abstract:
                "Give an endpoint a new secret, shown once; the previous one also signs deliveries for --grace-hours.")
        @Option(help: "App token.") var app: String
        @Option(help: "Endpoint id.") var id: String
        @Option(help: "Hours the previous secret still signs (0-168).") var graceHours = 24
        @OptionGroup var options: GlobalOptions

        func run() async throws {
            guard let endpointID = UUID(uuidString: id) else { throw CommandFailure("--id is not an endpoint id") }
            let (endpoint, secret) = try await options.withTenancy { [app, graceHours] in
                try await $0.rotateWebhookSecret(token: app, id: endpointID, graceHours: graceHours)
            }
            if options.json {
                var object = endpoint.json
                object.append("secret", .string(secret))
                print(JSONValue.object(object).encodedString)
            } else {
                print(
                    "secret \(secret)  (shown once; the previous secret signs too until \(endpoint.previousSecretUntil.map(Output.date) ?? "now"))"
                )
            }
        }
    }

    struct Remove: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Remove an endpoint with its pending deliveries.")
        @Option(help: "App token.") var app: String
        @Option(help: "Endpoint id.") var id: String
        @OptionGroup var options: GlobalOptions

        func run() async throws {
            guard let endpointID = UUID(uuidString: id) else { throw CommandFailure("--id is not an endpoint id") }
            try await options.withTenancy { [app] in try await $0.removeWebhookEndpoint(token: app, id: endpointID) }
            if !options.json { print("removed \(endpointID.uuidString.lowercased())") }
        }
    }

    struct Test: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Send one signed webhook.test event to an endpoint now and print its answer (exit 1 unless 2xx).")
        @Option(help: "App token.") var app: String
        @Option(help: "Endpoint id.") var id: String
        @Option(help: "Seconds to wait for the answer.") var timeout = 10
        @OptionGroup var options: GlobalOptions

        func run() async throws {
            guard let endpointID = UUID(uuidString: id) else { throw CommandFailure("--id is not an endpoint id") }
            guard (1...60).contains(timeout) else { throw CommandFailure("--timeout must be from 1 to 60") }
            let (event, endpoint, secret) = try await options.withTenancy { [app] tenancy in
                let found = try await tenancy.app(token: app)
                guard
                    let endpoint = try await tenancy.webhookEndpoints(token: app).first(where: { $0.id == endpointID })
                else {
                    throw CommandFailure("app \(app) has no webhook endpoint \(endpointID.uuidString.lowercased())")
                }
                var data = JSONObject(capacity: 2)
                data.append("message", .string("A test event from receiptverify webhooks test"))
                data.append("app", .string(found.token))
                let event = WebhookEvent(
                    appID: found.id,
                    environment: found.allowedEnvironments.sorted { $0.rawValue < $1.rawValue }.first
                        ?? .production, kind: .test, createdAt: Date(), data: data)
                return (event, endpoint, try tenancy.webhookSecret(endpoint.secret, endpointID: endpoint.id))
            }
            let client = WebhookClient(
                timeout: .seconds(timeout), allowsPrivateAddresses: try GlobalOptions.allowsPrivateWebhookURLs(),
                logger: Logger(label: "receiptverify.webhooks"))
            let result = await client.deliver(
                event.body(), eventID: event.idText, eventType: event.type, to: endpoint.url, secret: secret,
                now: Date())
            try? await client.shutdown()
            switch result {
            case .answered(let status) where (200...299).contains(status):
                print("delivered \(event.idText): HTTP \(status)")
            case .answered(let status):
                throw CommandFailure("the endpoint answered HTTP \(status) to event \(event.idText)")
            case .failed(let error):
                throw CommandFailure("the endpoint could not be reached: \(error)")
            }
        }
    }
}

/// `receiptverify events …`: an app's webhook events and their deliveries (docs/webhooks.md).
struct EventsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "events", abstract: "List an app's webhook events and redeliver them.",
        subcommands: [List.self, Redeliver.self])

    /// Which events: the options `list` and `redeliver` share.
    struct Selection: ParsableArguments {
        @Option(help: "App token.") var app: String
        @Option(help: "Only events with a delivery in this state: pending, delivered, dead.") var state: String?
        @Option(help: "Only events made on or after this UTC day (YYYY-MM-DD).") var since: String?

        func parsed() throws -> (state: WebhookDeliveryState?, since: Date?) {
            let parsedState = try state.map { name in
                guard let value = WebhookDeliveryState(rawValue: name) else {
                    throw CommandFailure("--state must be pending, delivered or dead")
                }
                return value
            }
            return (parsedState, try since.map { try Day.start($0, option: "--since") })
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List an app's events with each delivery's state, newest first.")
        @OptionGroup var selection: Selection
        @Option(help: "At most this many events.") var limit = 100
        @OptionGroup var options: GlobalOptions

        func run() async throws {
            let (state, since) = try selection.parsed()
            let records = try await options.withTenancy { [app = selection.app, limit] in
                try await $0.webhookEvents(token: app, state: state, since: since, eventIDs: nil, limit: limit)
            }
            if options.json {
                print(JSONValue.array(records.map { .object($0.json) }).encodedString)
                return
            }
            Output.table(
                records,
                columns: [
                    ("EVENT", { $0.event.idText }), ("TYPE", { $0.event.type }),
                    ("ENVIRONMENT", { $0.event.environment.configurationName }),
                    ("CREATED", { Output.date($0.event.createdAt) }),
                    (
                        "DELIVERIES",
                        {
                            $0.deliveries.isEmpty
                                ? "-"
                                : $0.deliveries.map { "\($0.state.rawValue)/\($0.attempts)" }.joined(separator: " ")
                        }
                    ),
                ])
        }
    }

    struct Redeliver: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Make events' deliveries due now: those named by --id, or those pending or dead (or in --state)."
        )
        @OptionGroup var selection: Selection
        @Option(help: "An event id; repeat.") var id: [String] = []
        @Option(help: "At most this many events.") var limit = 10_000
        @OptionGroup var options: GlobalOptions

        func run() async throws {
            let (state, since) = try selection.parsed()
            let ids = try id.map { text in
                guard let value = UUID(uuidString: text) else { throw CommandFailure("\(text) is not an event id") }
                return value
            }
            let count = try await options.withTenancy { [app = selection.app, limit] in
                try await $0.redeliverWebhookEvents(
                    token: app, state: state, since: since, eventIDs: ids.isEmpty ? nil : ids, limit: limit)
            }
            print(options.json ? "{\"deliveries\":\(count)}" : "\(count) deliveries due now")
        }
    }
}

/// A UTC day on the command line.
enum Day {
    /// The start of `text`, a UTC day `YYYY-MM-DD`, given as `option`.
    static func start(_ text: String, option: String) throws -> Date {
        guard let day = UsageDay(text) else { throw CommandFailure("\(option) must be a day, YYYY-MM-DD") }
        return day.start
    }
}
