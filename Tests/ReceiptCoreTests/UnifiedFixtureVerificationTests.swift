import Foundation
import ReceiptCore
import Testing

/// Real Apple receipts verify at their creation date against the configured roots, and nothing else does.
@Suite struct UnifiedFixtureVerificationTests {
    static let apple = [
        "revenuecat_sandbox_ios_2020", "tp_production_ios_g5_2024", "mbaasy_sandbox_ios_2015_08",
        "tp_sandbox_macos_pdfify_2020",
    ]

    @Test(arguments: apple)
    func appleReceiptsVerifyAndDecode(name: String) throws {
        guard let fixtures = Fixtures.directory else { return }
        let verifier = ReceiptVerifier(anchors: try Fixtures.anchors(fixtures, "AppleIncRootCertificate.cer"))
        let verified = try verifier.verify(try Fixtures.receipt(fixtures, name))
        #expect(verified.kind == .unifiedReceipt)
        #expect(!verified.isTestData)
        #expect(verified.environment == (name.contains("production") ? .production : .sandbox))
        let expected = Fixtures.withoutPrivateKeys(
            try Fixtures.foundationJSON(
                Data(contentsOf: fixtures.appendingPathComponent("receipts/\(name).expected.json"))))
        #expect(try Fixtures.foundationJSON(JSONValue.object(verified.receipt).encoded) == expected)
        #expect(verified.bundleID == (expected as? [String: Any])?["bundle_id"] as? String)
        // A second verification hits the chain cache and still checks the signature and dates.
        #expect(try verifier.verify(try Fixtures.receipt(fixtures, name)) == verified)
    }

    @Test func withoutTheRootNothingVerifies() throws {
        guard let fixtures = Fixtures.directory else { return }
        let verifier = ReceiptVerifier(anchors: try Fixtures.anchors(fixtures, "AppleRootCA-G3.cer"))
        #expect(throws: ReceiptError(.untrustedRoot)) {
            try verifier.verify(try Fixtures.receipt(fixtures, "revenuecat_sandbox_ios_2020"))
        }
        let empty = ReceiptVerifier(anchors: try TrustAnchors(encoded: []))
        #expect(throws: ReceiptError(.untrustedRoot)) {
            try empty.verify(try Fixtures.receipt(fixtures, "tp_production_ios_g5_2024"))
        }
    }

    @Test func xcodeReceiptsNeedTheirRootAndPermission() throws {
        guard let fixtures = Fixtures.directory else { return }
        let receipt = try Fixtures.receipt(fixtures, "xcode_applelib_with_transaction_2023")
        let appleOnly = ReceiptVerifier(anchors: try Fixtures.anchors(fixtures, "AppleIncRootCertificate.cer"))
        #expect(throws: ReceiptError(.untrustedRoot)) { try appleOnly.verify(receipt, allowTestData: true) }

        let withTestRoot = ReceiptVerifier(
            anchors: try Fixtures.anchors(fixtures, "AppleIncRootCertificate.cer", "StoreKitTestCertificate.cer"))
        #expect(throws: ReceiptError(.testDataNotAllowed)) { try withTestRoot.verify(receipt) }
        let verified = try withTestRoot.verify(receipt, allowTestData: true)
        #expect(verified.isTestData)
        #expect(verified.environment == .xcode)
        #expect(verified.receipt["receipt_type"] == .string("Xcode"))
    }

    @Test func aTamperedReceiptIsNotAuthentic() throws {
        guard let fixtures = Fixtures.directory else { return }
        let text = try String(
            contentsOf: fixtures.appendingPathComponent("tampered/receipt_signature_last_byte_flipped.b64"),
            encoding: .utf8)
        let verifier = ReceiptVerifier(anchors: try Fixtures.anchors(fixtures, "AppleIncRootCertificate.cer"))
        do {
            _ = try verifier.verify(try ReceiptInput.decode(text))
            Issue.record("a tampered receipt verified")
        } catch let error as ReceiptError {
            #expect(error.code == .invalidSignature)
            #expect(!error.isMalformed)
        }
    }
}

extension Fixtures {
    static func anchors(_ fixtures: URL, _ names: String...) throws -> TrustAnchors {
        try TrustAnchors(
            encoded: try names.map { Array(try Data(contentsOf: fixtures.appendingPathComponent("certs/\($0)"))) })
    }

    static func receipt(_ fixtures: URL, _ name: String) throws -> ReceiptInput {
        try ReceiptInput.decode(
            try String(contentsOf: fixtures.appendingPathComponent("receipts/\(name).b64"), encoding: .utf8))
    }
}
