import Foundation
import ReceiptCore
import Testing

@testable import ReceiptService

/// Test roots are bound to apps by the operator (D12): the settings that bind them, and what a customer may not set.
struct TestAnchorBindingTests {
    static let fingerprint = "0123456789ABCDEF" + String(repeating: "00", count: 24)

    @Test func fingerprintsAreNormalizedAndCheckedOnce() throws {
        let spelled = stride(from: 0, to: 64, by: 2).map { index -> String in
            let start = Self.fingerprint.index(Self.fingerprint.startIndex, offsetBy: index)
            return String(Self.fingerprint[start..<Self.fingerprint.index(start, offsetBy: 2)]).lowercased()
        }.joined(separator: ":")
        #expect(try AppSettings.fingerprints([spelled, Self.fingerprint]) == [Self.fingerprint])
        #expect(try AppSettings.fingerprints([]) == [])
        for bad in ["", "AB", String(repeating: "G", count: 64), Self.fingerprint + "00"] {
            #expect(throws: ServiceError.self) { try AppSettings.fingerprints([bad]) }
        }
        // Apple's roots are never test roots: binding one is a mistake, said so.
        let appleRoot = try #require(TrustAnchors.appleFingerprints.keys.first)
        let error = try #require(throws: ServiceError.self) { try AppSettings.fingerprints([appleRoot]) }
        #expect(error.reason.contains("Apple"))
    }

    @Test func anAppTrustsOnlyItsBoundRootsAndOnlyWhenItAllowsTestData() throws {
        var app = App(
            id: UUID(), accountID: UUID(), token: "app_0", name: "A", bundleIDs: [try #require(BundleID("com.a.b"))],
            allowedEnvironments: [.production], verificationMode: .local, sharedSecret: nil,
            appStoreServerCredentials: nil, resultCipher: .aes256GCM, resultKey: SealedSecret(bytes: []),
            allowsTestData: true, isEnabled: true, createdAt: Date(), updatedAt: Date())
        #expect(app.testDataTrust == .refused)
        app.testAnchors = [Self.fingerprint]
        #expect(app.testDataTrust == .anchors([Self.fingerprint]))
        app.allowsTestData = false
        #expect(app.testDataTrust == .refused)
    }

    @Test func aCustomerCannotBindARootNorSwitchTestDataWithoutOne() throws {
        var app = App(
            id: UUID(), accountID: UUID(), token: "app_0", name: "A", bundleIDs: [try #require(BundleID("com.a.b"))],
            allowedEnvironments: [.production], verificationMode: .local, sharedSecret: nil,
            appStoreServerCredentials: nil, resultCipher: .aes256GCM, resultKey: SealedSecret(bytes: []),
            allowsTestData: false, isEnabled: true, createdAt: Date(), updatedAt: Date())
        var binding = AppSettings()
        binding.testAnchors = [Self.fingerprint]
        #expect(throws: ServiceError.self) { try CustomerScope.customerSettings(binding, of: app) }
        binding.testAnchors = []
        #expect(throws: ServiceError.self) { try CustomerScope.customerSettings(binding, of: app) }
        #expect(throws: ServiceError.self) {
            try CustomerScope.customerSettings(AppSettings(allowsTestData: true), of: nil)
        }
        #expect(throws: ServiceError.self) {
            try CustomerScope.customerSettings(AppSettings(allowsTestData: true), of: app)
        }
        // Unchanged is no change; with a bound root the switch is the customer's.
        _ = try CustomerScope.customerSettings(AppSettings(allowsTestData: false), of: app)
        app.testAnchors = [Self.fingerprint]
        _ = try CustomerScope.customerSettings(AppSettings(allowsTestData: true), of: app)
    }
}
