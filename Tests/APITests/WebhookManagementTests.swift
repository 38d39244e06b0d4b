import Foundation
import Synchronization
import ReceiptCore
import TestSupport
import Testing

/// A customer runs their webhooks: pause and resume an endpoint, rotate its secret with both signatures sent for a
/// grace period, and see each delivery's status, latency and answer.
@Suite(.serialized) struct WebhookManagementTests {
    @Test(
        "pause, resume, rotate the secret with a grace period, and each delivery's latency",
        arguments: StoreKind.available)
    func customersRunTheirEndpoints(kind: StoreKind) async throws {
        try await FakeWebhookReceiver.run { receiver, receiverURL in
            try await withLiveService(kind, serveArguments: ["--webhook-retry-seconds", "1"]) { service in
                let tenant = try service.tenant(appArguments: ["--allow-test-data"])
                let hook = try NotificationAPITests.addEndpoint(service, tenant.token, url: receiverURL + "/hook")
                receiver.expect(secret: hook.secret, on: "/hook")
                let cli = service.cli
                Self.seen.withLock { $0 = 0 }

                // Paused: an event waits, unattempted.
                let paused = try cli.expectSuccess(
                    ["webhooks", "pause", "--app", tenant.token, "--id", hook.id, "--json"]
                ).jsonObject()
                #expect(paused["enabled"] == .bool(false))
                let first = try NotificationAPITests.notification(
                    service, "DID_RENEW", uuid: "paused-1", transactionID: "2000000000000301")
                #expect(try await NotificationAPITests.send(service, tenant.token, first).httpStatus == 200)
                try await Task.sleep(for: .seconds(3))
                #expect(receiver.deliveries.isEmpty)

                // Resumed: it goes out, signed, and its latency and answer are recorded.
                try cli.expectSuccess(["webhooks", "resume", "--app", tenant.token, "--id", hook.id])
                #expect(try await receiver.wait { !$0.isEmpty })
                #expect(receiver.deliveries.allSatisfy { $0.isSigned })
                #expect(
                    try await Self.eventually {
                        let listed = try cli.expectSuccess(
                            ["events", "list", "--app", tenant.token, "--state", "delivered", "--json"]).stdout
                        return listed.contains("\"latency_ms\":") && listed.contains("\"last_status\":200")
                    })

                try await Task.sleep(for: .seconds(2))
                Self.seen.withLock { $0 = receiver.deliveries.count }

                // Rotated with a grace period: each delivery is signed with the new and the previous secret.
                let rotated = try cli.expectSuccess(
                    [
                        "webhooks", "rotate-secret", "--app", tenant.token, "--id", hook.id, "--grace-hours", "1",
                        "--json",
                    ]
                ).jsonObject()
                let newSecret = try #require(rotated["secret"]?.stringValue)
                #expect(newSecret != hook.secret && newSecret.hasPrefix("whsec_"))
                #expect(rotated["previous_secret_until"]?.stringValue != nil)
                let second = try NotificationAPITests.notification(
                    service, "DID_RENEW", uuid: "rotated-2", transactionID: "2000000000000302")
                #expect(try await NotificationAPITests.send(service, tenant.token, second).httpStatus == 200)
                let underOld = try await Self.newDeliveries(receiver)
                #expect(!underOld.isEmpty && underOld.allSatisfy(\.isSigned))  // the old secret checks out
                receiver.expect(secret: newSecret, on: "/hook")
                let third = try NotificationAPITests.notification(
                    service, "DID_RENEW", uuid: "rotated-3", transactionID: "2000000000000303")
                #expect(try await NotificationAPITests.send(service, tenant.token, third).httpStatus == 200)
                let underNew = try await Self.newDeliveries(receiver)
                #expect(!underNew.isEmpty && underNew.allSatisfy(\.isSigned))  // and so does the new one

                // Without a grace period the old secret stops at once.
                let abrupt = try cli.expectSuccess(
                    [
                        "webhooks", "rotate-secret", "--app", tenant.token, "--id", hook.id, "--grace-hours", "0",
                        "--json",
                    ]
                ).jsonObject()
                #expect(abrupt["previous_secret_until"] == .null)
                let fourth = try NotificationAPITests.notification(
                    service, "DID_RENEW", uuid: "rotated-4", transactionID: "2000000000000304")
                #expect(try await NotificationAPITests.send(service, tenant.token, fourth).httpStatus == 200)
                // The receiver still holds the secret before: nothing checks out with it.
                let afterAbrupt = try await Self.newDeliveries(receiver)
                #expect(!afterAbrupt.isEmpty && afterAbrupt.allSatisfy { !$0.isSigned })
                let refused = try cli.run(
                    ["webhooks", "rotate-secret", "--app", tenant.token, "--id", hook.id, "--grace-hours", "169"])
                #expect(refused.status != 0 && refused.stderr.contains("grace period"))

                // Every action is in the audit log.
                let audit = try cli.expectSuccess(["audit", "--account", tenant.email]).stdout
                for action in ["webhook.create", "webhook.pause", "webhook.resume", "webhook.rotate_secret"] {
                    #expect(audit.contains(action), "\(action) is audited")
                }
            }
        }
    }

    @Test("a script runs the endpoints through /api/webhooks, within its own app", arguments: StoreKind.available)
    func aScriptRunsTheEndpoints(kind: StoreKind) async throws {
        try await withLiveService(kind) { service in
            let tenant = try service.tenant(plan: "free")
            let other = try service.tenant()
            func call(_ fields: [(String, String)], as caller: LiveService.Tenant? = nil) async throws -> JSONObject {
                let caller = caller ?? tenant
                return try await service.post(
                    "/api/webhooks", form: [("apikey", caller.apiKey), ("token", tenant.token)] + fields
                ).json()
            }
            let added = try await call([("action", "add"), ("url", "https://hooks.example.com/a")])
            #expect(added["status"] == .integer(0) && added["secret"]?.stringValue?.hasPrefix("whsec_") == true)
            let id = try #require(added["endpoint"]?["id"]?.stringValue)
            #expect(try await call([("action", "list")])["endpoints"]?.arrayValue?.count == 1)
            // The free plan's second endpoint is its last; the third is refused by name.
            #expect(
                try await call([("action", "add"), ("url", "https://hooks.example.com/b")])["status"] == .integer(0))
            let third = try await call([("action", "add"), ("url", "https://hooks.example.com/c")])
            #expect(third["status"] == .integer(400))
            #expect(third["description"]?.stringValue?.contains("plan 'free' allows 2 webhook endpoints") == true)
            // Another account's key cannot reach this app's endpoints.
            let stranger = try await call([("action", "pause"), ("endpoint_id", id)], as: other)
            #expect(stranger["status"] == .integer(401))
            #expect(
                try service.cli.expectSuccess(["webhooks", "list", "--app", tenant.token]).stdout.contains("active"))
        }
    }

    /// The deliveries counted so far.
    static let seen = Mutex(0)

    /// The deliveries that arrived since the last call: waits for some, then for the burst to end.
    static func newDeliveries(_ receiver: FakeWebhookReceiver) async throws -> [FakeWebhookReceiver.Delivery] {
        let before = seen.withLock { $0 }
        _ = try await receiver.wait { $0.count > before }
        try await Task.sleep(for: .seconds(2))
        let all = receiver.deliveries
        seen.withLock { $0 = all.count }
        return Array(all.dropFirst(before))
    }

    /// Whether `condition` holds within ten seconds.
    static func eventually(_ condition: () throws -> Bool) async throws -> Bool {
        for _ in 0..<100 {
            if try condition() { return true }
            try await Task.sleep(for: .milliseconds(100))
        }
        return try condition()
    }
}
