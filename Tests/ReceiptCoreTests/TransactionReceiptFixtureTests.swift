import Foundation
import ReceiptCore
import Testing

/// iOS 6 transaction receipts verify through the iTunes Store CA at their purchase date and match Apple's answers.
@Suite struct TransactionReceiptFixtureTests {
    @Test(arguments: ["ios6_sandbox_mindmob_2012", "ios6_sandbox_mbaasy_yearly_sub_2015"])
    func transactionReceiptsVerifyAndMatchApple(name: String) throws {
        guard let fixtures = Fixtures.directory else { return }
        let verifier = ReceiptVerifier(
            anchors: try Fixtures.anchors(
                fixtures, "AppleIncRootCertificate.cer", "AppleiTunesStoreCertificationAuthority.cer"))
        let verified = try verifier.verify(try Fixtures.receipt(fixtures, name))
        #expect(verified.kind == .transactionReceipt)
        #expect(verified.environment == .sandbox)
        let ours = try Fixtures.foundationJSON(JSONValue.object(verified.receipt).encoded)
        let receipts = fixtures.appendingPathComponent("receipts")
        let expected = try Fixtures.foundationJSON(
            Data(contentsOf: receipts.appendingPathComponent("\(name).expected.json")))
        #expect(ours == (expected as? [String: Any])?["receipt"] as? NSObject)
        let apple = try Fixtures.foundationJSON(
            Data(contentsOf: receipts.appendingPathComponent("\(name).apple-response.json")))
        #expect(ours == (apple as? [String: Any])?["receipt"] as? NSObject)
    }

    @Test func withoutTheITunesStoreCATheChainIsNotReached() throws {
        guard let fixtures = Fixtures.directory else { return }
        // The blob carries only its leaf: with Apple Root CA alone, no local verdict is possible.
        let verifier = ReceiptVerifier(anchors: try Fixtures.anchors(fixtures, "AppleIncRootCertificate.cer"))
        #expect(throws: ReceiptError(.untrustedRoot)) {
            try verifier.verify(try Fixtures.receipt(fixtures, "ios6_sandbox_mindmob_2012"))
        }
    }

    @Test func aModifiedPurchaseInfoIsNotAuthentic() throws {
        guard let fixtures = Fixtures.directory else { return }
        let original = try Fixtures.receipt(fixtures, "ios6_sandbox_mindmob_2012")
        var plist = String(decoding: original.bytes, as: UTF8.self)
        let range = try #require(plist.range(of: #""purchase-info" = ""#))
        let start = plist.index(range.upperBound, offsetBy: 40)
        // Change one base64 character of the purchase info (keeping it valid base64).
        plist.replaceSubrange(start...start, with: plist[start] == "A" ? "B" : "A")
        let verifier = ReceiptVerifier(
            anchors: try Fixtures.anchors(
                fixtures, "AppleIncRootCertificate.cer", "AppleiTunesStoreCertificationAuthority.cer"))
        do {
            _ = try verifier.verify(try ReceiptInput.decode(Data(plist.utf8).base64EncodedString()))
            Issue.record("a modified transaction receipt verified")
        } catch let error as ReceiptError {
            #expect(!error.isMalformed, "\(error)")
        }
    }
}
