import Clients
import Foundation
import Logging
import ReceiptService
import TestSupport
import Testing

/// A customer's webhook URL cannot reach inside, whatever was stored: the client checks, on every delivery, the
/// addresses the host resolves to and connects only to one it checked. A real receiver on loopback proves no
/// connection is made.
@Suite struct WebhookReachTests {
    @Test func aDeliveryToLoopbackIsRefusedBeforeAnyConnection() async throws {
        try await FakeWebhookReceiver.run { receiver, base in
            let port = try #require(URLComponents(string: base)?.port)
            let client = WebhookClient(timeout: .seconds(5), logger: Logger(label: "test"))
            let cases = [
                ("https://localhost:\(port)/hook", "the host resolves to a non-public address"),
                ("https://127.0.0.1:\(port)/hook", "the host resolves to a non-public address"),
                ("https://[::ffff:127.0.0.1]:\(port)/hook", "the host resolves to a non-public address"),
                ("https://0x7f.1:\(port)/hook", "the host is a number in an unusual spelling"),
                ("\(base)/hook", "the URL is not https"),
            ]
            for (url, reason) in cases {
                let result = await client.deliver(
                    Array("{}".utf8), eventID: "evt", eventType: "webhook.test", to: url,
                    secret: Array("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw".utf8), now: Date())
                #expect(result == .failed(reason), "\(url)")
            }
            try await client.shutdown()
            #expect(receiver.deliveries.isEmpty)

            // The operator's self-hosted setting reaches the same receiver.
            let own = WebhookClient(timeout: .seconds(5), allowsPrivateAddresses: true, logger: Logger(label: "test"))
            let reached = await own.deliver(
                Array("{}".utf8), eventID: "evt", eventType: "webhook.test", to: "\(base)/hook",
                secret: Array("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw".utf8), now: Date())
            try await own.shutdown()
            #expect(reached == .answered(status: 200))
            #expect(receiver.deliveries.count == 1)
        }
    }

    @Test func theCLIRefusesAnInsideURLUnlessTheOperatorAllowsIt() async throws {
        try await withCLI(.sqlite) { cli in
            let email = "hooks@example.com"
            #expect(try cli.run(["account", "create", "--name", "H", "--email", email]).status == 0)
            let app = try cli.run(["app", "add", "--account", email, "--bundle-id", "com.example.app", "--json"])
            let token = try #require(app.stdout.split(separator: "\"").drop { $0 != "token" }.dropFirst(2).first)
            for url in ["http://hooks.example.com/x", "https://10.0.0.1/x", "https://0x7f.1/x", "https://localhost/x"] {
                let refused = try cli.run(["webhooks", "add", "--app", String(token), "--url", url])
                #expect(refused.status != 0 && refused.stderr.contains("webhook URL"), "\(url): \(refused.stderr)")
            }
            #expect(
                try cli.run(["webhooks", "add", "--app", String(token), "--url", "https://hooks.example.com/x"]).status
                    == 0)
            var allowing = cli
            allowing.extraEnvironment["RECEIPTVERIFY_WEBHOOK_PRIVATE_URLS"] = "on"
            #expect(
                try allowing.run(["webhooks", "add", "--app", String(token), "--url", "http://10.0.0.1/x"]).status == 0)
        }
    }
}
