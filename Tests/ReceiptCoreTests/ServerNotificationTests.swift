import Foundation
import ReceiptCore
import ReceiptTestKit
import Testing

/// App Store Server Notifications V2: the real one Apple signed, and generated ones of every type, each signed item
/// verified at its own signing date.
@Suite struct ServerNotificationTests {
    static let pki = GeneratedReceiptTests.jwsPKI
    static let otherPKI = GeneratedPKI.make(TestPKI.Options(keyType: .p256, name: "Another test CA"))

    static func verifier() throws -> ReceiptVerifier { ReceiptVerifier(anchors: try pki.trustAnchors()) }

    /// A notification of `type` carrying a signed transaction and renewal info of one subscription.
    static func notification(
        _ type: String, subtype: String? = nil, uuid: String = "6f1f7b6a-0000-4000-8000-000000000001",
        transaction: (inout JWSBuilder) -> Void = { _ in }, signedBy signer: TestPKI = pki
    ) throws -> String {
        var item = JWSBuilder()
        item.expiresDate = item.signedDate.addingTimeInterval(30 * 86_400)
        transaction(&item)
        var renewal = item
        renewal.payload = .renewalInfo
        renewal.expiresDate = nil
        var builder = JWSBuilder()
        builder.payload = .notification
        builder.notificationType = type
        builder.notificationSubtype = subtype
        builder.notificationUUID = uuid
        builder.signedTransactionInfo = try item.build(signedBy: signer)
        builder.signedRenewalInfo = try renewal.build(signedBy: pki)
        return try builder.build(signedBy: pki)
    }

    @Test func applesRealNotificationVerifiesWithItsNestedItems() throws {
        guard let fixtures = Fixtures.directory else { return }
        let verifier = ReceiptVerifier(anchors: try Fixtures.anchors(fixtures, "AppleRootCA-G3.cer"))
        let text = try String(
            contentsOf: fixtures.appendingPathComponent("jws/apple_notification_did_renew_2022.jws"), encoding: .utf8)
        let notification = try verifier.verifyNotification(
            Array(text.trimmingCharacters(in: .whitespacesAndNewlines).utf8))
        #expect(notification.type == "DID_RENEW")
        #expect(notification.subtype == nil)
        #expect(notification.uuid == "469bf30e-7715-4f9f-aae3-a7bfc12aea77")
        #expect(notification.environment == .sandbox)
        #expect(notification.bundleID == "com.audaos.audarecorder")
        #expect(!notification.isTestData)
        // No signedDate of its own: the nested transaction's date is the one it is checked and ordered by.
        #expect(notification.signedDate == 1_646_387_008_254)
        let purchase = try #require(notification.purchase)
        #expect(purchase.transactionID == "2000000004047119")
        #expect(purchase.originalTransactionID == "2000000000842607")
        #expect(purchase.expiresDate == 1_646_387_196_000)
        #expect(notification.renewalInfo?["autoRenewStatus"] == .integer(1))
        #expect(notification.originalTransactionID == "2000000000842607")
    }

    static let types = [
        "SUBSCRIBED", "DID_RENEW", "DID_FAIL_TO_RENEW", "GRACE_PERIOD_EXPIRED", "EXPIRED", "DID_CHANGE_RENEWAL_STATUS",
        "DID_CHANGE_RENEWAL_PREF", "OFFER_REDEEMED", "PRICE_INCREASE", "REFUND", "REFUND_DECLINED", "REFUND_REVERSED",
        "REVOKE", "RENEWAL_EXTENDED", "CONSUMPTION_REQUEST", "ONE_TIME_CHARGE", "METADATA_UPDATE", "MIGRATION",
        "PRICE_CHANGE", "TEST", "A_TYPE_APPLE_ADDS_LATER",
    ]

    @Test(arguments: types)
    func everyTypeVerifiesAndKeepsItsItems(type: String) throws {
        let notification = try Self.verifier().verifyNotification(
            Array(try Self.notification(type, subtype: "VOLUNTARY").utf8), allowTestData: true)
        #expect(notification.type == type)
        #expect(notification.subtype == "VOLUNTARY")
        #expect(notification.purchase?.transactionID == "2000000123456789")
        #expect(notification.renewalInfo?["autoRenewStatus"] == .integer(1))
        #expect(notification.isTestData)
    }

    @Test func rescindConsentCarriesAppDataAndNoData() throws {
        var appTransaction = JWSBuilder()
        appTransaction.payload = .appTransaction
        var builder = JWSBuilder()
        builder.payload = .notification
        builder.notificationType = "RESCIND_CONSENT"
        builder.signedAppTransactionInfo = try appTransaction.build(signedBy: Self.pki)
        let notification = try Self.verifier().verifyNotification(
            Array(try builder.build(signedBy: Self.pki).utf8), allowTestData: true)
        #expect(notification.type == "RESCIND_CONSENT")
        #expect(notification.payload["data"] == nil)
        #expect(notification.bundleID == "com.example.app")
        #expect(notification.environment == .xcode)
        #expect(notification.appTransaction?["appTransactionId"] == .string("704528340000000001"))
        #expect(notification.transaction == nil && notification.purchase == nil)
    }

    @Test(arguments: ["summary", "externalPurchaseToken"])
    func notificationsWithoutDataStateTheirAppElsewhere(container: String) throws {
        var builder = JWSBuilder()
        builder.payload = .notification
        builder.notificationType = container == "summary" ? "RENEWAL_EXTENSION" : "EXTERNAL_PURCHASE_TOKEN"
        builder.notificationSubtype = container == "summary" ? "SUMMARY" : "UNREPORTED"
        builder.notificationContainer = container
        let notification = try Self.verifier().verifyNotification(
            Array(try builder.build(signedBy: Self.pki).utf8), allowTestData: true)
        #expect(notification.payload["data"] == nil)
        #expect(notification.bundleID == "com.example.app")
        #expect(notification.transaction == nil && notification.originalTransactionID == nil)
    }

    @Test func aNestedItemThatDoesNotVerifyRefusesTheNotification() throws {
        #expect(throws: ReceiptError(.untrustedRoot)) {
            try Self.verifier().verifyNotification(
                Array(try Self.notification("DID_RENEW", signedBy: Self.otherPKI).utf8), allowTestData: true)
        }
        var tampered = JWSBuilder()
        tampered.tampering = .signature
        var builder = JWSBuilder()
        builder.payload = .notification
        builder.notificationType = "REFUND"
        builder.signedTransactionInfo = try tampered.build(signedBy: Self.pki)
        #expect(throws: ReceiptError(.invalidSignature)) {
            try Self.verifier().verifyNotification(
                Array(try builder.build(signedBy: Self.pki).utf8), allowTestData: true)
        }
    }

    @Test func whatIsNotANotificationIsMalformed() throws {
        let transaction = try JWSBuilder().build(signedBy: Self.pki)
        #expect(throws: ReceiptError(.malformedJWS)) {
            try Self.verifier().verifyNotification(Array(transaction.utf8), allowTestData: true)
        }
        var builder = JWSBuilder()
        builder.payload = .notification
        builder.notificationUUID = ""
        #expect(throws: ReceiptError(.malformedJWS)) {
            try Self.verifier().verifyNotification(
                Array(try builder.build(signedBy: Self.pki).utf8), allowTestData: true)
        }
        #expect(throws: ReceiptError.self) { try Self.verifier().verifyNotification(Array("not.a.jws".utf8)) }
    }

    @Test func testSignedNotificationsNeedPermission() throws {
        #expect(throws: ReceiptError(.testDataNotAllowed)) {
            try Self.verifier().verifyNotification(Array(try Self.notification("DID_RENEW").utf8))
        }
    }
}
