import Foundation
import ReceiptCore
import Testing
import X509

/// Real StoreKit 2 JWS verify at their signedDate and decode to their payloads; test-signed ones need permission.
@Suite struct JWSFixtureVerificationTests {
    static let apple: [(String, VerifiedReceipt.Kind)] = [
        ("apple_transaction_voicerec_sub_2022", .signedTransaction),
        ("apple_renewal_info_voicerec_2022", .signedRenewalInfo),
        ("apple_notification_did_renew_2022", .notification),
        ("apple_notification_did_renew_2022__signedTransactionInfo", .signedTransaction),
        ("apple_notification_did_renew_2022__signedRenewalInfo", .signedRenewalInfo),
    ]

    @Test(arguments: apple)
    func appleJWSVerifyAndDecode(name: String, kind: VerifiedReceipt.Kind) throws {
        guard let fixtures = Fixtures.directory else { return }
        let verifier = ReceiptVerifier(anchors: try Fixtures.anchors(fixtures, "AppleRootCA-G3.cer"))
        let verified = try verifier.verify(try Fixtures.jws(fixtures, name))
        #expect(verified.kind == kind)
        #expect(!verified.isTestData)
        #expect(verified.environment == .sandbox)
        let expected = try Fixtures.foundationJSON(
            Data(contentsOf: fixtures.appendingPathComponent("jws/\(name).payload.json")))
        #expect(try Fixtures.foundationJSON(JSONValue.object(verified.receipt).encoded) == expected)

        // Apple's G3 root is required: the unified-receipt root does not anchor StoreKit 2.
        let wrongRoot = ReceiptVerifier(anchors: try Fixtures.anchors(fixtures, "AppleIncRootCertificate.cer"))
        #expect(throws: ReceiptError(.untrustedRoot)) { try wrongRoot.verify(try Fixtures.jws(fixtures, name)) }
    }

    @Test(arguments: ["xcode_transaction_2023", "testca_transaction_info"])
    func testSignedJWSNeedTheirRootAndPermission(name: String) throws {
        guard let fixtures = Fixtures.directory else { return }
        let input = try Fixtures.jws(fixtures, name)
        let appleOnly = ReceiptVerifier(anchors: try Fixtures.anchors(fixtures, "AppleRootCA-G3.cer"))
        #expect(throws: ReceiptError(.untrustedRoot)) { try appleOnly.verify(input, allowTestData: true) }

        // Their root is the last certificate of their own x5c, passed in as a configured anchor.
        let root = try #require(try Fixtures.x5c(fixtures, name).last)
        let withRoot = ReceiptVerifier(anchors: try TrustAnchors(encoded: [root]))
        #expect(throws: ReceiptError(.testDataNotAllowed)) { try withRoot.verify(input) }
        let verified = try withRoot.verify(input, allowTestData: true)
        #expect(verified.isTestData)
        #expect(verified.environment == .xcode)
        let expected = try Fixtures.foundationJSON(
            Data(contentsOf: fixtures.appendingPathComponent("jws/\(name).payload.json")))
        #expect(try Fixtures.foundationJSON(JSONValue.object(verified.receipt).encoded) == expected)
    }

    @Test func aModifiedPayloadIsNotAuthentic() throws {
        guard let fixtures = Fixtures.directory else { return }
        let text = try String(
            contentsOf: fixtures.appendingPathComponent("tampered/jws_payload_modified.jws"), encoding: .utf8)
        let verifier = ReceiptVerifier(anchors: try Fixtures.anchors(fixtures, "AppleRootCA-G3.cer"))
        #expect(throws: ReceiptError(.invalidSignature)) { try verifier.verify(try ReceiptInput.decode(text)) }
    }
}

extension Fixtures {
    static func jws(_ fixtures: URL, _ name: String) throws -> ReceiptInput {
        try ReceiptInput.decode(
            try String(contentsOf: fixtures.appendingPathComponent("jws/\(name).jws"), encoding: .utf8))
    }

    /// The DER certificates of a JWS fixture's `x5c` header, read independently of the verifier.
    static func x5c(_ fixtures: URL, _ name: String) throws -> [[UInt8]] {
        let text = try String(contentsOf: fixtures.appendingPathComponent("jws/\(name).jws"), encoding: .utf8)
        var header = String(text.split(separator: ".")[0]).replacingOccurrences(of: "-", with: "+")
            .replacingOccurrences(of: "_", with: "/")
        header += String(repeating: "=", count: (4 - header.count % 4) % 4)
        let object = try JSONSerialization.jsonObject(with: Data(base64Encoded: header)!) as! [String: Any]
        return (object["x5c"] as! [String]).map { Array(Data(base64Encoded: $0)!) }
    }
}
