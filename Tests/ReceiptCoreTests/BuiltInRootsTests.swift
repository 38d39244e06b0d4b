import Crypto
import Foundation
import ReceiptCore
import SwiftASN1
import Testing
import X509

/// Apple's public roots are built into the binary, each the certificate Apple publishes, so a fresh install verifies
/// real Apple data offline with no set-up.
@Suite struct BuiltInRootsTests {
    /// The SHA-256 fingerprints Apple publishes at https://www.apple.com/certificateauthority/ (and the fixtures'
    /// README repeats), typed here independently of the code under test.
    static let published = [
        "B0B1730ECBC7FF4505142C49F1295E6EDA6BCAED7E2C68C5BE91B5A11001F024": "AppleIncRootCertificate.cer",
        "C2B9B042DD57830E7D117DAC55AC8AE19407D38E41D88F3215BC3A890444A050": "AppleRootCA-G2.cer",
        "63343ABFB89A6A03EBB57E9B3F5FA7BE7C4F5C756F3017B3A8C488C3653E9179": "AppleRootCA-G3.cer",
        "447AD65484610F20FDC33804C8597A1E208FBE4EF9C5653485CC7D3DF730C016":
            "AppleiTunesStoreCertificationAuthority.cer",
    ]

    static func hex(_ bytes: some Sequence<UInt8>) -> String { bytes.map { String(format: "%02X", $0) }.joined() }

    @Test func theBinaryCarriesApplesFourAnchorsAtTheirPublishedFingerprints() throws {
        let anchors = TrustAnchors.apple.anchors
        #expect(anchors.count == 4)
        #expect(Set(anchors.map(\.fingerprint)) == Set(Self.published.keys))
        #expect(anchors.allSatisfy { $0.isApple })
        let names = anchors.map { $0.certificate.subject.description }
        #expect(names.contains { $0.contains("CN=Apple Root CA,") || $0.hasSuffix("CN=Apple Root CA") })
        #expect(names.contains { $0.contains("Apple Root CA - G2") })
        #expect(names.contains { $0.contains("Apple Root CA - G3") })
        #expect(names.contains { $0.contains("Apple iTunes Store Certification Authority") })
    }

    @Test func eachIsTheCertificateAppleDistributesByteForByte() throws {
        guard let fixtures = Fixtures.directory else { return }
        for (fingerprint, name) in Self.published {
            let der = Array(try Data(contentsOf: fixtures.appendingPathComponent("certs/\(name)")))
            #expect(Self.hex(SHA256.hash(data: der)) == fingerprint, "\(name)")
            let anchor = try #require(TrustAnchors.apple.anchors.first { $0.fingerprint == fingerprint })
            let distributed = try Certificate(derEncoded: der)
            #expect(anchor.certificate == distributed, "\(name)")
        }
    }

    /// Every real Apple item in the fixtures verifies with the built-in roots alone, the iOS 6 receipts included (the
    /// iTunes Store CA is built in), and Xcode's data does not.
    @Test func realAppleDataVerifiesWithTheBuiltInRootsAlone() throws {
        guard let fixtures = Fixtures.directory else { return }
        let verifier = ReceiptVerifier(anchors: .apple)
        for name in UnifiedFixtureVerificationTests.apple + [
            "ios6_sandbox_mindmob_2012", "ios6_sandbox_mbaasy_yearly_sub_2015",
        ] {
            let verified = try verifier.verify(try Fixtures.receipt(fixtures, name))
            #expect(!verified.isTestData, "\(name)")
        }
        for (name, kind) in JWSFixtureVerificationTests.apple {
            let verified = try verifier.verify(try Fixtures.jws(fixtures, name))
            #expect(verified.kind == kind)
            #expect(!verified.isTestData)
        }
        #expect(throws: ReceiptError(.untrustedRoot)) {
            try verifier.verify(
                try Fixtures.receipt(fixtures, "xcode_applelib_with_transaction_2023"), allowTestData: true)
        }
        #expect(throws: ReceiptError(.untrustedRoot)) {
            try verifier.verify(try Fixtures.jws(fixtures, "xcode_transaction_2023"), allowTestData: true)
        }
    }

    @Test func aDirectoryAddsToThemEachCertificateOnce() throws {
        guard let fixtures = Fixtures.directory else { return }
        let directory = try Fixtures.anchors(
            fixtures, "AppleIncRootCertificate.cer", "AppleRootCA-G2.cer", "AppleRootCA-G3.cer",
            "AppleiTunesStoreCertificationAuthority.cer", "StoreKitTestCertificate.cer")
        let combined = TrustAnchors.apple.adding(directory)
        #expect(combined.anchors.count == 5)
        #expect(combined.anchors.filter(\.isApple).count == 4)
        let verifier = ReceiptVerifier(anchors: combined)
        let xcode = try verifier.verify(
            try Fixtures.receipt(fixtures, "xcode_applelib_with_transaction_2023"), allowTestData: true)
        #expect(xcode.isTestData)
        #expect(try !verifier.verify(try Fixtures.receipt(fixtures, "revenuecat_sandbox_ios_2020")).isTestData)
    }
}
