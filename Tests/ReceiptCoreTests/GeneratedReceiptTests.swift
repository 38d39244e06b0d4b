import Foundation
import ReceiptCore
import ReceiptTestKit
import TestSupport
import Testing

/// Receipts and JWS generated in-process by ReceiptTestKit: every check of the verifier, one defect at a time.
///
/// A generated root is never one of Apple's, so every verification here allows test data, and the verifier checks
/// signatures and dates (Apple's CA flags are checked for Apple anchors alone, and its marker extensions too, except on
/// three-certificate StoreKit chains: see AppleVerdictTests).
@Suite struct GeneratedReceiptTests {
    /// One RSA chain valid 2020–2035 (leaf), shared because RSA key generation is slow.
    static let pki = GeneratedPKI.make(TestPKI.Options())
    /// The default creation date of ``ReceiptBuilder``.
    static let created = RFC3339.date("2023-05-09T23:20:55Z")

    static func verify(
        _ receipt: GeneratedReceipt, anchors pki: TestPKI = pki, allowTestData: Bool = true
    ) throws -> VerifiedReceipt {
        try ReceiptVerifier(anchors: pki.trustAnchors()).verify(
            ReceiptInput.decode(receipt.base64), allowTestData: allowTestData)
    }

    // MARK: Authentic receipts

    @Test(arguments: ReceiptBuilder.Encoding.allCases, ReceiptBuilder.Digest.allCases)
    func authenticReceiptsVerify(encoding: ReceiptBuilder.Encoding, digest: ReceiptBuilder.Digest) throws {
        for hasSignedAttributes in [true, false] {
            var builder = ReceiptBuilder()
            builder.encoding = encoding
            builder.digest = digest
            builder.hasSignedAttributes = hasSignedAttributes
            builder.chunkSize = 100  // several chunks under BER
            let receipt = try builder.build(signedBy: Self.pki)
            #expect(receipt.bytes.first == 0x30)
            if encoding == .berIndefinite { #expect(receipt.bytes[1] == 0x80) }

            let verified = try Self.verify(receipt)
            #expect(verified.kind == .unifiedReceipt)
            #expect(verified.isTestData)
            #expect(verified.environment == .xcode)  // a test anchor makes any receipt type Xcode data
            #expect(verified.bundleID == "com.example.app")
            #expect(verified.signingDate == 1_683_674_455_000)
        }
    }

    @Test func aLeafExpiredTodayVerifiesAtItsCreationDate() throws {
        let pki = GeneratedPKI.make(
            TestPKI.Options(leafValidity: TestPKI.Validity("2023-01-01T00:00:00Z", "2024-01-01T00:00:00Z")))
        let verified = try Self.verify(try ReceiptBuilder().build(signedBy: pki), anchors: pki)
        #expect(verified.signingDate == 1_683_674_455_000)
    }

    @Test func markerExtensionsAreNotRequiredOfATestChain() throws {
        let pki = GeneratedPKI.make(TestPKI.Options(leafHasMarker: false, intermediateHasMarker: false))
        let verified = try Self.verify(try ReceiptBuilder().build(signedBy: pki), anchors: pki)
        #expect(verified.isTestData)
    }

    // MARK: Dates

    @Test(arguments: ["2019-12-31T23:59:59Z", "2015-06-01T00:00:00Z"])
    func aReceiptCreatedBeforeTheLeafWasValidIsRejected(creation: String) throws {
        var builder = ReceiptBuilder()
        builder.creationDate = RFC3339.date(creation)
        let receipt = try builder.build(signedBy: Self.pki)
        #expect(throws: ReceiptError(.notYetValidAtSigningDate)) { try Self.verify(receipt) }
    }

    /// Which certificate of a chain expired before the receipt was created.
    enum ExpiredCertificate: String, CaseIterable, Sendable {
        case leaf, intermediate, root

        var options: TestPKI.Options {
            let expired = TestPKI.Validity("2014-01-01T00:00:00Z", "2022-01-01T00:00:00Z")
            var options = TestPKI.Options()
            switch self {
            case .leaf: options.leafValidity = expired
            case .intermediate: options.intermediateValidity = expired
            case .root: options.rootValidity = expired
            }
            return options
        }
    }

    @Test(arguments: ExpiredCertificate.allCases)
    func aReceiptCreatedAfterACertificateExpiredIsRejected(expired: ExpiredCertificate) throws {
        let pki = GeneratedPKI.make(expired.options)
        let receipt = try ReceiptBuilder().build(signedBy: pki)
        #expect(throws: ReceiptError(.expiredAtSigningDate)) { try Self.verify(receipt, anchors: pki) }
    }

    @Test func theChainCacheNeverSkipsDatesOrSignatures() throws {
        let verifier = ReceiptVerifier(anchors: try Self.pki.trustAnchors())
        let valid = try ReceiptBuilder().build(signedBy: Self.pki)
        _ = try verifier.verify(ReceiptInput.decode(valid.base64), allowTestData: true)

        var late = ReceiptBuilder()
        late.creationDate = RFC3339.date("2035-01-01T00:00:01Z")  // one second after the leaf expired
        let expired = try late.build(signedBy: Self.pki)
        #expect(throws: ReceiptError(.expiredAtSigningDate)) {
            try verifier.verify(ReceiptInput.decode(expired.base64), allowTestData: true)
        }
        var tampered = ReceiptBuilder()
        tampered.tampering = .signature
        let forged = try tampered.build(signedBy: Self.pki)
        #expect(throws: ReceiptError(.invalidSignature)) {
            try verifier.verify(ReceiptInput.decode(forged.base64), allowTestData: true)
        }
        #expect(throws: ReceiptError(.testDataNotAllowed)) {
            try verifier.verify(ReceiptInput.decode(valid.base64), allowTestData: false)
        }
        #expect(try verifier.verify(ReceiptInput.decode(valid.base64), allowTestData: true).isTestData)
    }

    // MARK: Trust

    @Test(arguments: ["ReceiptTestKit", "Another Test PKI"])
    func aReceiptFromAnotherRootIsUntrusted(otherName: String) throws {
        // Same names as ours (a different key behind the same subject), or different names altogether.
        let other = GeneratedPKI.make(TestPKI.Options(name: otherName))
        let receipt = try ReceiptBuilder().build(signedBy: Self.pki)
        #expect(throws: ReceiptError(.untrustedRoot)) { try Self.verify(receipt, anchors: other) }
    }

    @Test func aTestRootNeedsPermission() throws {
        let receipt = try ReceiptBuilder().build(signedBy: Self.pki)
        #expect(throws: ReceiptError(.testDataNotAllowed)) { try Self.verify(receipt, allowTestData: false) }
    }

    // MARK: Tampering

    @Test(arguments: ReceiptBuilder.Encoding.allCases, ReceiptBuilder.Digest.allCases)
    func tamperedReceiptsAreNotAuthentic(encoding: ReceiptBuilder.Encoding, digest: ReceiptBuilder.Digest) throws {
        // Without signed attributes the signature covers the content itself; with them, the content is bound by
        // the messageDigest attribute, which is compared first.
        let cases: [(ReceiptBuilder.Tampering, hasSignedAttributes: Bool, ReceiptError.Code)] = [
            (.content, false, .invalidSignature),
            (.content, true, .digestMismatch),
            (.signature, false, .invalidSignature),
            (.signature, true, .invalidSignature),
            (.messageDigest, true, .digestMismatch),
        ]
        for (tampering, hasSignedAttributes, expected) in cases {
            var builder = ReceiptBuilder()
            builder.encoding = encoding
            builder.digest = digest
            builder.hasSignedAttributes = hasSignedAttributes
            builder.tampering = tampering
            let receipt = try builder.build(signedBy: Self.pki)
            #expect(throws: ReceiptError(expected), "\(tampering), signed attributes: \(hasSignedAttributes)") {
                try Self.verify(receipt)
            }
        }
    }

    /// The SignerInfo names the intermediate (or root) although the leaf's key signed: the verifier finds the
    /// named certificate among those carried (issuer and serial match), checks the signature with *its* key, and
    /// fails there, before any chain is built: `.invalidSignature`, not `.invalidChain`.
    @Test(arguments: [ReceiptBuilder.Signer.intermediate, .root])
    func aSwappedSignerCertificateIsNotAuthentic(signer: ReceiptBuilder.Signer) throws {
        var builder = ReceiptBuilder()
        builder.signer = signer
        let receipt = try builder.build(signedBy: Self.pki)
        #expect(throws: ReceiptError(.invalidSignature)) { try Self.verify(receipt) }
    }

    // MARK: Malformed input

    @Test(arguments: ReceiptBuilder.Encoding.allCases)
    func everyTruncationIsAMalformedReceipt(encoding: ReceiptBuilder.Encoding) throws {
        var builder = ReceiptBuilder()
        builder.encoding = encoding
        builder.chunkSize = 64
        let receipt = try builder.build(signedBy: Self.pki)
        let verifier = ReceiptVerifier(anchors: try Self.pki.trustAnchors())
        var lengths = Array(stride(from: 0, to: receipt.bytes.count, by: 3))
        lengths += [receipt.bytes.count - 2, receipt.bytes.count - 1]
        for length in lengths {
            let text = Data(receipt.bytes.prefix(length)).base64EncodedString()
            do {
                _ = try verifier.verify(try ReceiptInput.decode(text), allowTestData: true)
                Issue.record("a receipt truncated to \(length) of \(receipt.bytes.count) bytes verified")
            } catch let error as ReceiptError {
                #expect(error.isMalformed, "truncated to \(length) bytes: \(error)")
            }
        }
    }

    @Test(
        arguments: [
            [0x84, 0x7F, 0xFF, 0xFF, 0xFF], [0x84, 0xFF, 0xFF, 0xFF, 0xFF],
            [0x88, 0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF],
            [0x88, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF], [0x89, 0x01, 0, 0, 0, 0, 0, 0, 0, 0], [0xFF],
        ] as [[UInt8]])
    func anAbsurdContainerLengthIsMalformed(length: [UInt8]) throws {
        let receipt = try ReceiptBuilder().build(signedBy: Self.pki)
        // A DER receipt of a few KiB starts 30 82 hi lo: replace that length with the absurd one.
        #expect(Array(receipt.bytes.prefix(2)) == [0x30, 0x82])
        let bytes = [0x30] + length + receipt.bytes.dropFirst(4)
        let verifier = ReceiptVerifier(anchors: try Self.pki.trustAnchors())
        #expect(throws: ReceiptError(.malformedContainer)) {
            try verifier.verify(try ReceiptInput.decode(Data(bytes).base64EncodedString()), allowTestData: true)
        }
    }

    @Test(arguments: [2, 12] as [Int64])
    func anAbsurdLengthInsideAFieldIsAMalformedPayload(field: Int64) throws {
        var builder = ReceiptBuilder()
        // Written before the real field, so it is the one the reader keeps.
        builder.leadingAttributes = [
            ReceiptBuilder.Attribute(
                type: field, value: [field == 2 ? 0x0C : 0x16, 0x84, 0x7F, 0xFF, 0xFF, 0xFF, 0x41])
        ]
        let receipt = try builder.build(signedBy: Self.pki)
        #expect(throws: ReceiptError(.malformedPayload)) { try Self.verify(receipt) }
    }

    // MARK: Decoded payload

    @Test(arguments: [1, 10, 100])
    func theDecodedPayloadIsWhatWasSigned(inAppPurchaseCount: Int) throws {
        var builder = ReceiptBuilder(inAppPurchaseCount: inAppPurchaseCount)
        builder.encoding = .berIndefinite
        let receipt = try builder.build(signedBy: Self.pki)
        let json = try Self.verify(receipt).receipt

        #expect(json["receipt_type"] == .string("ProductionSandbox"))
        #expect(json["app_item_id"] == .integer(1_234_567_890))
        #expect(json["bundle_id"] == .string("com.example.app"))
        #expect(json["application_version"] == .string("42"))
        #expect(json["original_application_version"] == .string("1.0"))
        #expect(json["receipt_creation_date"] == .string("2023-05-09 23:20:55 Etc/GMT"))
        #expect(json["receipt_creation_date_ms"] == .string("1683674455000"))
        #expect(json["receipt_creation_date_pst"] == .string("2023-05-09 16:20:55 America/Los_Angeles"))

        let inApp = try #require(json["in_app"]?.arrayValue)
        #expect(inApp.count == inAppPurchaseCount)
        // The first sample is a subscription bought an hour before the receipt, in its trial.
        let subscription = try #require(inApp.first)
        #expect(subscription["quantity"] == .string("1"))
        #expect(subscription["product_id"] == .string("com.example.app.monthly"))
        #expect(subscription["transaction_id"] == .string("1000000000"))
        #expect(subscription["original_transaction_id"] == .string("1000000000"))
        #expect(subscription["purchase_date"] == .string("2023-05-09 22:20:55 Etc/GMT"))
        #expect(subscription["original_purchase_date"] == .string("2023-05-09 22:20:55 Etc/GMT"))
        #expect(subscription["expires_date"] == .string("2023-06-08 22:20:55 Etc/GMT"))
        #expect(subscription["expires_date_ms"] == .string("1686262855000"))
        #expect(subscription["web_order_line_item_id"] == .string("2000000000"))
        #expect(subscription["is_trial_period"] == .string("true"))
        #expect(subscription["is_in_intro_offer_period"] == .string("false"))
        if inAppPurchaseCount > 1 {
            // The second is a consumable: an empty expiry and a zero line item leave both fields out.
            let consumable = inApp[1]
            #expect(consumable["product_id"] == .string("com.example.app.coins"))
            #expect(consumable["transaction_id"] == .string("1000000001"))
            #expect(consumable["purchase_date"] == .string("2023-05-09 21:20:55 Etc/GMT"))
            #expect(consumable["expires_date"] == nil)
            #expect(consumable["web_order_line_item_id"] == nil)
            #expect(consumable["is_trial_period"] == .string("false"))
        }

        let payload = try ReceiptPayload(der: receipt.payload)
        #expect(payload.environment == .sandbox)
        #expect(payload.creationDate == 1_683_674_455_000)
        #expect(JSONValue.object(payload.json) == JSONValue.object(json))
    }

    // MARK: StoreKit 2 JWS

    /// One P-256 chain for JWS.
    static let jwsPKI = GeneratedPKI.make(TestPKI.Options(keyType: .p256))

    @Test func aGeneratedJWSVerifies() throws {
        let jws = try JWSBuilder().build(signedBy: Self.jwsPKI)
        let verified = try ReceiptVerifier(anchors: Self.jwsPKI.trustAnchors()).verify(
            ReceiptInput.decode(jws), allowTestData: true)
        #expect(verified.kind == .signedTransaction)
        #expect(verified.isTestData)
        #expect(verified.environment == .xcode)
        #expect(verified.bundleID == "com.example.app")
        #expect(verified.signingDate == 1_683_674_455_000)
        #expect(verified.receipt["transactionId"] == .string("2000000123456789"))
    }

    @Test(arguments: [
        (JWSBuilder.Tampering.payload, "ES256", ReceiptError.Code.invalidSignature),
        (.signature, "ES256", .invalidSignature),
        (.none, "RS256", .unsupportedAlgorithm),
        (.none, "none", .unsupportedAlgorithm),
    ])
    func aDefectiveJWSIsRejected(tampering: JWSBuilder.Tampering, algorithm: String, expected: ReceiptError.Code)
        throws
    {
        var builder = JWSBuilder()
        builder.tampering = tampering
        builder.algorithm = algorithm
        let jws = try builder.build(signedBy: Self.jwsPKI)
        let verifier = ReceiptVerifier(anchors: try Self.jwsPKI.trustAnchors())
        #expect(throws: ReceiptError(expected)) { try verifier.verify(ReceiptInput.decode(jws), allowTestData: true) }
    }

    @Test func aJWSNeedsItsRootAndPermission() throws {
        let jws = try JWSBuilder().build(signedBy: Self.jwsPKI)
        let own = ReceiptVerifier(anchors: try Self.jwsPKI.trustAnchors())
        #expect(throws: ReceiptError(.testDataNotAllowed)) { try own.verify(ReceiptInput.decode(jws)) }
        let other = ReceiptVerifier(anchors: try GeneratedPKI.make(TestPKI.Options(keyType: .p256)).trustAnchors())
        #expect(throws: ReceiptError(.untrustedRoot)) {
            try other.verify(ReceiptInput.decode(jws), allowTestData: true)
        }
    }

    // MARK: Agreement with OpenSSL

    /// A receipt that OpenSSL's CMS verifier judges too.
    enum OpenSSLCase: String, CaseIterable, Sendable {
        case validSHA256, validSHA1, validBERIndefinite, validWithoutSignedAttributes, validHighBitSerial
        case tamperedContent, tamperedSignature, wrongRoot, expiredAtCreation

        /// The receipt and the PKI whose root is given as the trust anchor.
        func make() throws -> (receipt: GeneratedReceipt, anchor: TestPKI) {
            var builder = ReceiptBuilder()
            var anchor = GeneratedReceiptTests.pki
            switch self {
            case .validSHA256: break
            case .validSHA1: builder.digest = .sha1
            case .validBERIndefinite: builder.encoding = .berIndefinite
            case .validWithoutSignedAttributes: builder.hasSignedAttributes = false
            case .validHighBitSerial:
                return (try builder.build(signedBy: GeneratedReceiptTests.highBitPKI), GeneratedReceiptTests.highBitPKI)
            case .tamperedContent: builder.tampering = .content
            case .tamperedSignature: builder.tampering = .signature
            case .wrongRoot: anchor = GeneratedReceiptTests.otherPKI
            case .expiredAtCreation: builder.creationDate = RFC3339.date("2036-01-01T00:00:00Z")  // leaf ends 2035
            }
            return (try builder.build(signedBy: GeneratedReceiptTests.pki), anchor)
        }
    }

    /// A second RSA chain with the same names as ``pki`` but other keys.
    static let otherPKI = GeneratedPKI.make(TestPKI.Options())

    @Test(.enabled(if: OpenSSL.path != nil, "openssl is not on PATH"), arguments: OpenSSLCase.allCases)
    func ourVerdictMatchesOpenSSL(testCase: OpenSSLCase) throws {
        let openssl = try #require(OpenSSL.path)
        let (receipt, anchor) = try testCase.make()
        let ours: Bool
        do {
            _ = try Self.verify(receipt, anchors: anchor)
            ours = true
        } catch is ReceiptError {
            ours = false
        }
        let theirs = try OpenSSL.cmsVerify(openssl, receipt: receipt, rootPEM: anchor.rootPEM)
        #expect(ours == (theirs.status == 0), "ours: \(ours), openssl: \(theirs.status) \(theirs.output)")
        #expect(ours == testCase.rawValue.hasPrefix("valid"))
    }

    /// A chain whose leaf serial has its high bit set, so its DER INTEGER needs a leading `00`.
    static let highBitPKI = GeneratedPKI.make(
        TestPKI.Options(leafSerialNumber: [0xBD] + Array(repeating: 0x5A, count: 19)))

    /// Known disagreement: a SignerInfo serial written without its sign octet is a *negative* INTEGER, which names
    /// no carried certificate; OpenSSL answers "signer certificate not found". The verifier compares serials with
    /// leading zeros stripped and ignores the sign, so it still picks the leaf (whose key then verifies the
    /// signature). Harmless, since the key and the chain are still checked, but lenient.
    @Test func aSignerSerialWithoutItsSignOctetNamesNoCertificate() throws {
        // A serial whose high bit is set needs a leading 00 to stay positive; without it the INTEGER is another
        // (negative) number, so it names no carried certificate: refused, as openssl refuses it.
        var builder = ReceiptBuilder()
        builder.omitsSerialSignOctet = true
        let receipt = try builder.build(signedBy: Self.highBitPKI)
        #expect(throws: ReceiptError(.invalidChain)) { try Self.verify(receipt, anchors: Self.highBitPKI) }
        if let openssl = OpenSSL.path {
            let theirs = try OpenSSL.cmsVerify(openssl, receipt: receipt, rootPEM: Self.highBitPKI.rootPEM)
            #expect(theirs.status != 0)
            #expect(theirs.output.contains("signer certificate not found"))
        }
    }

    @Test func testDataIsAcceptedOnlyUnderTheAnchorsBoundToIt() throws {
        // Two test roots configured; each item verifies only where its own root is among the accepted ones.
        let anchors = try Self.pki.trustAnchors().adding(try Self.jwsPKI.trustAnchors())
        let verifier = ReceiptVerifier(anchors: anchors)
        let receiptRoot = try #require(try Self.pki.trustAnchors().anchors.first?.fingerprint)
        let jwsRoot = try #require(try Self.jwsPKI.trustAnchors().anchors.first?.fingerprint)
        let receipt = try ReceiptInput.decode(try ReceiptBuilder().build(signedBy: Self.pki).base64)
        let jws = try ReceiptInput.decode(try JWSBuilder().build(signedBy: Self.jwsPKI))
        for (input, own, other) in [(receipt, receiptRoot, jwsRoot), (jws, jwsRoot, receiptRoot)] {
            #expect(try verifier.verify(input, testData: .anchors([own])).isTestData)
            #expect(try verifier.verify(input, testData: .anchors([other, own.lowercased()])).isTestData)
            #expect(try verifier.verify(input, testData: .anyAnchor).isTestData)
            for refused in [TestDataTrust.anchors([other]), .anchors([]), .refused] {
                let error = try #require(throws: ReceiptError.self) { try verifier.verify(input, testData: refused) }
                #expect(error.code == .testDataNotAllowed)
            }
        }
    }

    @Test func buildersRefuseTheWrongKeyType() throws {
        #expect(throws: TestKitError.self) { try ReceiptBuilder().build(signedBy: Self.jwsPKI) }
        #expect(throws: TestKitError.self) { try JWSBuilder().build(signedBy: Self.pki) }
    }
}

/// Test PKIs generated once per process where a test needs its own.
enum GeneratedPKI {
    /// A PKI with `options`; traps when generation fails, which only a broken test kit can cause.
    static func make(_ options: TestPKI.Options) -> TestPKI {
        do {
            return try TestPKI(options)
        } catch {
            preconditionFailure("test PKI generation failed: \(error)")
        }
    }
}

/// The `openssl` command line tool, when installed: an independent CMS verifier to compare verdicts with.
enum OpenSSL {
    /// Where `openssl` is, found with `which`; nil when it is not on PATH.
    static let path: String? = {
        guard let result = try? run("/usr/bin/env", ["which", "openssl"]), result.status == 0 else { return nil }
        let path = result.output.trimmingCharacters(in: .whitespacesAndNewlines)
        return path.isEmpty ? nil : path
    }()

    /// `openssl cms -verify` of the receipt's DER against `rootPEM`, at the receipt's creation date.
    static func cmsVerify(_ openssl: String, receipt: GeneratedReceipt, rootPEM: String) throws -> (
        status: Int32, output: String
    ) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "receipt-openssl-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let receiptFile = directory.appendingPathComponent("receipt.der")
        let rootFile = directory.appendingPathComponent("root.pem")
        try Data(receipt.bytes).write(to: receiptFile)
        try Data(rootPEM.utf8).write(to: rootFile)
        return try run(
            openssl,
            [
                "cms", "-verify", "-inform", "DER", "-in", receiptFile.path, "-CAfile", rootFile.path, "-purpose",
                "any", "-attime", String(receipt.creationUnixSeconds), "-binary", "-out", "/dev/null",
            ])
    }

    /// Runs a command to completion; its standard output and error, joined.
    private static func run(_ executable: String, _ arguments: [String]) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try launch(process)
        let output = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: output, as: UTF8.self))
    }
}
