import Foundation
import ReceiptCore
import ReceiptTestKit
import Testing

/// A header read once is remembered by its bytes; what it saves must never change a verdict.
@Suite struct JWSHeaderCacheTests {
    static let pki = try! TestPKI(TestPKI.Options(keyType: .p256))

    @Test func aRememberedHeaderStillLeavesEveryPayloadAndSignatureChecked() throws {
        let verifier = ReceiptVerifier(anchors: try TrustAnchors(encoded: [Self.pki.rootDER]))
        func verify(_ builder: JWSBuilder) throws -> VerifiedReceipt {
            try verifier.verify(try ReceiptInput.decode(try builder.build(signedBy: Self.pki)), allowTestData: true)
        }
        var builder = JWSBuilder()
        #expect(try verify(builder).bundleID == "com.example.app")
        // Same certificates, so the same header bytes: the second and later items take the remembered header.
        builder.transactionID = "2000000999999999"
        #expect(try verify(builder).receipt["transactionId"] == .string("2000000999999999"))
        for tampering in [JWSBuilder.Tampering.payload, .signature, .unsigned] {
            builder.tampering = tampering
            #expect(throws: ReceiptError(.invalidSignature), "\(tampering)") { try verify(builder) }
        }
        builder.tampering = .none
        // Dates are checked on every call, header remembered or not.
        builder.signedDate = RFC3339.date("1999-01-01T00:00:00Z")
        #expect(throws: ReceiptError(.notYetValidAtSigningDate)) { try verify(builder) }
        // A different header (another alg) is read whole again, and refused for its own reason.
        builder.signedDate = JWSBuilder().signedDate
        builder.algorithm = "none"
        #expect(throws: ReceiptError(.unsupportedAlgorithm)) { try verify(builder) }
    }

    @Test func aJWSWithSpacesOrStrayCharactersIsMalformed() throws {
        let text = try JWSBuilder().build(signedBy: Self.pki)
        let verifier = ReceiptVerifier(anchors: try TrustAnchors(encoded: [Self.pki.rootDER]))
        for broken in [text.replacingOccurrences(of: "A", with: " "), text.replacingOccurrences(of: "A", with: "+")] {
            #expect(throws: ReceiptError(.malformedJWS)) {
                try verifier.verify(try ReceiptInput.decode(broken), allowTestData: true)
            }
        }
    }
}
