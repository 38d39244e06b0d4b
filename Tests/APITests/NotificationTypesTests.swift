import Foundation
import NIOHTTP1
import ReceiptCore
import ReceiptTestKit
import TestSupport
import Testing

/// Every notification type and subtype Apple documents today (the App Store Server Library's `NotificationTypeV2` and
/// `Subtype`, 3.1), the Advanced Commerce ones included, is taken by a live server on both stores, recorded once and
/// listed, and each one carrying a transaction records it (docs/notifications.md, "Effects").
@Suite struct NotificationTypesTests {
    /// Each type with the subtypes Apple sends it with ("" for none).
    static let documented: [(type: String, subtypes: [String])] = [
        ("SUBSCRIBED", ["INITIAL_BUY", "RESUBSCRIBE"]), ("DID_CHANGE_RENEWAL_PREF", ["UPGRADE", "DOWNGRADE", ""]),
        ("DID_CHANGE_RENEWAL_STATUS", ["AUTO_RENEW_ENABLED", "AUTO_RENEW_DISABLED"]),
        ("OFFER_REDEEMED", ["UPGRADE", "DOWNGRADE", ""]), ("DID_RENEW", ["BILLING_RECOVERY", ""]),
        ("EXPIRED", ["VOLUNTARY", "BILLING_RETRY", "PRICE_INCREASE", "PRODUCT_NOT_FOR_SALE"]),
        ("DID_FAIL_TO_RENEW", ["GRACE_PERIOD", ""]), ("GRACE_PERIOD_EXPIRED", [""]),
        ("PRICE_INCREASE", ["PENDING", "ACCEPTED"]), ("REFUND", [""]), ("REFUND_DECLINED", [""]),
        ("REFUND_REVERSED", [""]), ("CONSUMPTION_REQUEST", [""]), ("RENEWAL_EXTENDED", [""]),
        ("RENEWAL_EXTENSION", ["SUMMARY", "FAILURE"]), ("REVOKE", [""]), ("TEST", [""]),
        ("EXTERNAL_PURCHASE_TOKEN", ["UNREPORTED"]), ("ONE_TIME_CHARGE", [""]), ("RESCIND_CONSENT", [""]),
        ("METADATA_UPDATE", [""]), ("MIGRATION", [""]), ("PRICE_CHANGE", [""]),
    ]

    @Test("every type and subtype Apple documents is recorded once", arguments: StoreKind.available)
    func everyDocumentedTypeIsRecorded(kind: StoreKind) async throws {
        try await withLiveService(kind) { service in
            let tenant = try service.tenant(appArguments: ["--allow-test-data"])
            var sent = 0
            for (index, (type, subtypes)) in Self.documented.enumerated() {
                for (offset, subtype) in subtypes.enumerated() {
                    let id = String(2_000_000_000_100_000 + index * 10 + offset)
                    let payload: String
                    switch (type, subtype) {
                    case ("RENEWAL_EXTENSION", "SUMMARY"), ("EXTERNAL_PURCHASE_TOKEN", _):
                        var builder = JWSBuilder()
                        builder.payload = .notification
                        builder.notificationType = type
                        builder.notificationSubtype = subtype
                        builder.notificationUUID = UUID().uuidString
                        builder.signedDate = Date()
                        builder.notificationContainer =
                            type == "RENEWAL_EXTENSION" ? "summary" : "externalPurchaseToken"
                        payload = try builder.build(signedBy: service.jwsPKI)
                    case ("RESCIND_CONSENT", _):
                        var app = JWSBuilder()
                        app.payload = .appTransaction
                        var builder = JWSBuilder()
                        builder.payload = .notification
                        builder.notificationType = type
                        builder.notificationUUID = UUID().uuidString
                        builder.signedDate = Date()
                        builder.signedAppTransactionInfo = try app.build(signedBy: service.jwsPKI)
                        payload = try builder.build(signedBy: service.jwsPKI)
                    default:
                        payload = try NotificationAPITests.notification(
                            service, type, subtype: subtype.isEmpty ? nil : subtype, transactionID: id, original: id,
                            productType: type == "ONE_TIME_CHARGE" ? "Consumable" : "Auto-Renewable Subscription")
                    }
                    let answer = try await NotificationAPITests.send(service, tenant.token, payload)
                    #expect(answer.httpStatus == 200, "\(type) \(subtype): \(answer.text)")
                    #expect(try answer.json()["duplicate"] == .bool(false), "\(type) \(subtype)")
                    sent += 1
                    if ![
                        "RENEWAL_EXTENSION/SUMMARY", "EXTERNAL_PURCHASE_TOKEN/UNREPORTED", "RESCIND_CONSENT/", "TEST/",
                    ]
                    .contains("\(type)/\(subtype)") {
                        // What carries a transaction records it.
                        let rows = try await NotificationAPITests.lookUp(service, tenant, original: id)
                        #expect(
                            rows["transactions"]?.arrayValue?.count == 1, "\(type) \(subtype) records its transaction")
                    }
                }
            }
            let listed = try service.cli.expectSuccess(
                ["notifications", "list", "--app", tenant.token, "--limit", "200", "--json"]
            ).stdout
            let rows = try #require(try JSONParser.parse(Array(listed.utf8)).arrayValue)
            #expect(rows.count == sent)
            let types = Set(rows.compactMap { $0["notification_type"]?.stringValue })
            #expect(types == Set(Self.documented.map(\.type)))
            // Counted under their own names in the metrics, none as `other`.
            let metrics = try await service.post("/metrics", body: "", method: .GET).text
            for type in Self.documented.map(\.type) {
                #expect(metrics.contains(#"receiptverify_notifications_total{type="\#(type)""#), "\(type)")
            }
            #expect(!metrics.contains(#"receiptverify_notifications_total{type="other""#))
        }
    }
}
