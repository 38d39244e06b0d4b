import Foundation
import ReceiptCore
import ReceiptTestKit
import Testing

/// The verdicts where Apple's App Store Server Library and Apple's documentation are the reference: AppTransaction
/// dates, marker extensions under any root, unsecured JWS, receipt types, trailing bytes and date forms.
@Suite struct AppleVerdictTests {
    static let jwsPKI = GeneratedReceiptTests.jwsPKI

    static func verifyJWS(_ builder: JWSBuilder, pki: TestPKI = jwsPKI, allowTestData: Bool = true) throws
        -> VerifiedReceipt
    {
        try ReceiptVerifier(anchors: pki.trustAnchors()).verify(
            ReceiptInput.decode(builder.build(signedBy: pki)), allowTestData: allowTestData)
    }

    static func code(_ body: () throws -> Any) -> ReceiptError.Code? {
        do {
            _ = try body()
            return nil
        } catch let error as ReceiptError {
            return error.code
        } catch {
            Issue.record("unexpected error \(error)")
            return nil
        }
    }

    // MARK: AppTransaction

    @Test func anAppTransactionVerifiesAtItsReceiptCreationDateAndDecodes() throws {
        var builder = JWSBuilder()
        builder.payload = .appTransaction
        let verified = try Self.verifyJWS(builder)
        #expect(verified.kind == .appTransaction)
        #expect(verified.signingDate == builder.signedDateMilliseconds)
        #expect(verified.bundleID == "com.example.app")
        #expect(verified.receipt["appTransactionId"] == .string("704528340000000001"))
        #expect(verified.receipt["receiptType"] == .string("Sandbox"))
        #expect(verified.receipt["originalPurchaseDate"] == .integer(builder.signedDateMilliseconds - 86_400_000))
        #expect(verified.response["kind"] == .string("app_transaction"))

        // The receiptCreationDate is the date the chain is checked at: outside the leaf's 2020–2035 window it fails.
        builder.signedDate = RFC3339.date("2019-06-01T00:00:00Z")
        #expect(Self.code { try Self.verifyJWS(builder) } == .notYetValidAtSigningDate)
        builder.signedDate = RFC3339.date("2036-06-01T00:00:00Z")
        #expect(Self.code { try Self.verifyJWS(builder) } == .expiredAtSigningDate)
    }

    /// Xcode's StoreKit testing signs transactions and app transactions with one self-signed certificate: trusted
    /// only as a configured test anchor, and only for apps that allow test data.
    @Test(arguments: JWSBuilder.Payload.allCases)
    func xcodeSingleCertificateDataKeepsItsExemption(payload: JWSBuilder.Payload) throws {
        var builder = JWSBuilder()
        builder.payload = payload
        builder.chain = .selfSigned
        builder.environment = "Xcode"
        let verified = try Self.verifyJWS(builder)
        #expect(verified.isTestData)
        #expect(verified.environment == .xcode)
        let kinds: [JWSBuilder.Payload: VerifiedReceipt.Kind] = [
            .transaction: .signedTransaction, .appTransaction: .appTransaction, .renewalInfo: .signedRenewalInfo,
            .notification: .notification,
        ]
        #expect(verified.kind == kinds[payload])
        #expect(Self.code { try Self.verifyJWS(builder, allowTestData: false) } == .testDataNotAllowed)
        let appleOnly = ReceiptVerifier(anchors: .apple)
        #expect(
            Self.code {
                try appleOnly.verify(ReceiptInput.decode(builder.build(signedBy: Self.jwsPKI)), allowTestData: true)
            }
                == .untrustedRoot)
    }

    // MARK: Marker extensions

    @Test(arguments: [(false, true), (true, false), (false, false)])
    func threeCertificateChainsNeedAppleMarkersUnderTestRootsToo(leafHasMarker: Bool, intermediateHasMarker: Bool)
        throws
    {
        let pki = GeneratedPKI.make(
            TestPKI.Options(
                keyType: .p256, name: "Unmarked", leafHasMarker: leafHasMarker,
                intermediateHasMarker: intermediateHasMarker))
        for payload in JWSBuilder.Payload.allCases {
            var builder = JWSBuilder()
            builder.payload = payload
            do {
                _ = try Self.verifyJWS(builder, pki: pki)
                Issue.record("an unmarked chain verified")
            } catch let error as ReceiptError {
                #expect(error.code == .missingMarkerOID)
                #expect(VerificationStatus(error) == .notAuthentic)
            }
        }
        // The same chain with both markers verifies (the generated default).
        #expect(try Self.verifyJWS(JWSBuilder()).isTestData)
    }

    @Test func aStoreKitChainIsThreeCertificates() throws {
        var builder = JWSBuilder()
        builder.chain = .withoutRoot
        #expect(Self.code { try Self.verifyJWS(builder) } == .invalidChain)
    }

    // MARK: Unsecured JWS

    @Test func anUnsignedJWSIsNotAuthenticNotMalformed() throws {
        var builder = JWSBuilder()
        builder.algorithm = "none"
        builder.tampering = .unsigned
        let jws = try builder.build(signedBy: Self.jwsPKI)
        #expect(jws.hasSuffix("."))
        let verifier = ReceiptVerifier(anchors: try Self.jwsPKI.trustAnchors())
        do {
            _ = try verifier.verify(ReceiptInput.decode(jws), allowTestData: true)
            Issue.record("an unsigned JWS verified")
        } catch let error as ReceiptError {
            #expect(error.code == .unsupportedAlgorithm)
            #expect(VerificationStatus(error) == .notAuthentic)
        }
        // An ES256 header with the signature removed is not authentic either.
        builder.algorithm = "ES256"
        let stripped = try builder.build(signedBy: Self.jwsPKI)
        #expect(
            Self.code { try verifier.verify(ReceiptInput.decode(stripped), allowTestData: true) } == .invalidSignature)
    }

    @Test func aRealJWSWithItsSignatureStrippedAndAlgNoneIsNotAuthentic() throws {
        guard let fixtures = Fixtures.directory else { return }
        let text = try String(
            contentsOf: fixtures.appendingPathComponent("jws/apple_transaction_voicerec_sub_2022.jws"), encoding: .utf8)
        let parts = text.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: ".")
        let header = JWSBuilder.base64URL(Array(#"{"alg":"none"}"#.utf8))
        let unsigned = "\(header).\(parts[1])."
        let error = try #require(
            Self.code { try ReceiptVerifier(anchors: .apple).verify(ReceiptInput.decode(unsigned)) })
        #expect(VerificationStatus(ReceiptError(error)) == .notAuthentic)
    }

    // MARK: Receipt types

    @Test(arguments: [
        ("Production", StoreEnvironment.production), ("ProductionVPP", .production),
        ("ProductionSandbox", .sandbox), ("ProductionVPPSandbox", .sandbox), ("Xcode", .xcode),
        ("SomethingApple adds later", .sandbox),
    ])
    func receiptTypesNameTheirEnvironment(type: String, environment: StoreEnvironment) throws {
        var builder = ReceiptBuilder()
        builder.receiptType = type
        let payload = try ReceiptPayload(der: builder.payload())
        #expect(payload.environment == environment)
        #expect(payload.json["receipt_type"] == .string(type))
    }

    // MARK: Trailing bytes

    @Test(arguments: ReceiptBuilder.Encoding.allCases)
    func bytesAfterThePKCS7StructureAreMalformed(encoding: ReceiptBuilder.Encoding) throws {
        for trailing: [UInt8] in [[0x00], [0x00, 0x00], Array("junk".utf8), [0x30, 0x00]] {
            var builder = ReceiptBuilder()
            builder.encoding = encoding
            builder.trailingBytes = trailing
            do {
                _ = try GeneratedReceiptTests.verify(try builder.build(signedBy: GeneratedReceiptTests.pki))
                Issue.record("a receipt with trailing bytes verified")
            } catch let error as ReceiptError {
                #expect(error.code == .malformedContainer)
                #expect(VerificationStatus(error) == .malformed)
            }
        }
    }

    @Test(arguments: ["revenuecat_sandbox_ios_2020", "xcode_applelib_with_transaction_2023"])
    func aRealReceiptWithTrailingBytesIsMalformed(name: String) throws {
        guard let fixtures = Fixtures.directory else { return }
        let receipt = try Fixtures.receipt(fixtures, name)
        let padded = Data(receipt.bytes + [0x00]).base64EncodedString()
        let verifier = ReceiptVerifier(anchors: .apple)
        #expect(
            Self.code { try verifier.verify(ReceiptInput.decode(padded), allowTestData: true) } == .malformedContainer)
    }

    // MARK: Date forms

    @Test(arguments: [
        ReceiptBuilder.DateStyle.offset(minutes: 180, colon: false), .offset(minutes: 180, colon: true),
        .offset(minutes: -420, colon: true), .offset(minutes: 330, colon: false), .fractionalSeconds(digits: 3),
        .fractionalSeconds(digits: 6), .fractionalSeconds(digits: 9),
    ])
    func receiptDatesWithOffsetsOrFractionsNameTheSameInstants(style: ReceiptBuilder.DateStyle) throws {
        var builder = ReceiptBuilder(inAppPurchaseCount: 3)
        let reference = try GeneratedReceiptTests.verify(try builder.build(signedBy: GeneratedReceiptTests.pki))
        builder.dateStyle = style
        let styled = try GeneratedReceiptTests.verify(try builder.build(signedBy: GeneratedReceiptTests.pki))
        #expect(styled.signingDate == reference.signingDate)
        #expect(JSONValue.object(styled.receipt) == JSONValue.object(reference.receipt))
        #expect(styled.receipt["receipt_creation_date"] == .string("2023-05-09 23:20:55 Etc/GMT"))
        #expect(styled.receipt["receipt_creation_date_pst"] == .string("2023-05-09 16:20:55 America/Los_Angeles"))
    }

    @Test func fractionalSecondsAreKeptToTheMillisecond() throws {
        var builder = ReceiptBuilder()
        builder.creationDate = GeneratedReceiptTests.created.addingTimeInterval(0.1234)
        builder.dateStyle = .fractionalSeconds(digits: 4)
        let verified = try GeneratedReceiptTests.verify(try builder.build(signedBy: GeneratedReceiptTests.pki))
        #expect(verified.signingDate == 1_683_674_455_123)
        #expect(verified.receipt["receipt_creation_date_ms"] == .string("1683674455123"))
        #expect(verified.receipt["receipt_creation_date"] == .string("2023-05-09 23:20:55 Etc/GMT"))
    }
}
