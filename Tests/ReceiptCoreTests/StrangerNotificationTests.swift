import Foundation
import ReceiptTestKit
import Testing

@testable import ReceiptCore

/// What a stranger who signs a notification with a key of its own can make the verifier spend (D10): its outer chain
/// is refused before any nested item is looked at, and none of its certificates take a place in the caches.
@Suite struct StrangerNotificationTests {
    static let trusted = try! TestPKI(TestPKI.Options(keyType: .p256))
    static let stranger = try! TestPKI(TestPKI.Options(keyType: .p256, name: "Apple Root CA - G3"))

    @Test func theOuterChainIsRefusedBeforeAnyNestedItem() throws {
        let verifier = ReceiptVerifier(anchors: try TrustAnchors(encoded: [Self.trusted.rootDER]))
        // A nested item that would fail on its own, and differently (two certificates in its x5c).
        var item = JWSBuilder()
        item.chain = .withoutRoot
        var outer = JWSBuilder()
        outer.payload = .notification
        outer.signedTransactionInfo = try item.build(signedBy: Self.stranger)
        let signed = try outer.build(signedBy: Self.stranger)
        do {
            _ = try verifier.verifyNotification(Array(signed.utf8), allowTestData: true)
            Issue.record("a stranger's notification verified")
        } catch let error as ReceiptError {
            #expect(error.code == .untrustedRoot || error.code == .invalidChain, "\(error)")
            #expect(!error.reason.contains("found 2"), "the nested item was looked at first: \(error.reason)")
        }
        // Nothing of the stranger's is remembered.
        #expect(verifier.headers.count == 0)
        #expect(verifier.chains.cachedCount == 0)

        // A trusted notification is remembered, with its nested item.
        var good = JWSBuilder()
        good.payload = .notification
        good.signedTransactionInfo = try JWSBuilder().build(signedBy: Self.trusted)
        let verified = try verifier.verifyNotification(
            Array(try good.build(signedBy: Self.trusted).utf8), allowTestData: true)
        #expect(verified.transaction?["transactionId"] == .string(JWSBuilder().transactionID))
        #expect(verifier.headers.count == 1 && verifier.chains.cachedCount == 1)
    }

    @Test func aNotificationWithoutASigningDateIsCheckedAtItsItemsDate() throws {
        let verifier = ReceiptVerifier(anchors: try TrustAnchors(encoded: [Self.trusted.rootDER]))
        var outer = JWSBuilder()
        outer.payload = .notification
        outer.omitsSignedDate = true
        outer.signedTransactionInfo = try JWSBuilder().build(signedBy: Self.trusted)
        let verified = try verifier.verifyNotification(
            Array(try outer.build(signedBy: Self.trusted).utf8), allowTestData: true)
        #expect(verified.signedDate == JWSBuilder().signedDateMilliseconds)
        // Without a date and without items there is nothing to check the chain at.
        var bare = JWSBuilder()
        bare.payload = .notification
        bare.omitsSignedDate = true
        #expect(throws: ReceiptError(.malformedJWS)) {
            try verifier.verifyNotification(Array(try bare.build(signedBy: Self.trusted).utf8), allowTestData: true)
        }
    }
}
