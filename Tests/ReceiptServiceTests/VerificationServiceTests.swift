import Foundation
import Logging
import ReceiptCore
import Synchronization
import Testing

@testable import ReceiptService

/// The decision from request to answer, with Apple replaced by a recording double (the HTTP client itself is tested
/// end to end against a fake Apple in APITests).
@Suite struct VerificationServiceTests {
    final class RecordingApple: AppleReceiptVerifying {
        let answer: Result<AppleReceiptAnswer, ServiceError>
        let calls = Mutex<[String]>([])

        init(_ answer: Result<AppleReceiptAnswer, ServiceError>) { self.answer = answer }

        func verifyReceipt(_ receiptData: String, password: String?, excludeOldTransactions: Bool, logger: Logger)
            async throws -> AppleReceiptAnswer
        {
            calls.withLock { $0.append(receiptData) }
            return try answer.get()
        }
    }

    static let logger = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })

    static func caller(mode: VerificationMode, bundleIDs: [String] = ["com.example.app"]) throws -> Caller {
        let key = MasterKey.generate()
        let now = Date()
        let app = App(
            id: UUID(), accountID: UUID(), token: "app_x", name: "x", bundleIDs: bundleIDs.compactMap(BundleID.init),
            allowedEnvironments: [.sandbox], verificationMode: mode, sharedSecret: nil, appStoreServerCredentials: nil,
            resultCipher: .aes256CBC, resultKey: try SealedSecret.seal([1], context: "c", with: key),
            allowsTestData: false, isEnabled: true, createdAt: now, updatedAt: now)
        let account = Account(
            id: app.accountID, name: "a", email: "a@example.com", planName: "pro", isEnabled: true, createdAt: now,
            updatedAt: now)
        return Caller(
            account: account, apiKeyID: UUID(), app: app,
            resultKey: Array(repeating: 7, count: 32), sharedSecret: "secret", appleKey: nil)
    }

    static func appleAnswer(bundleID: String, status: Int = 0) -> AppleReceiptAnswer {
        var receipt = JSONObject()
        receipt["bundle_id"] = .string(bundleID)
        var body = JSONObject()
        body["status"] = .integer(Int64(status))
        body["environment"] = .string("Sandbox")
        body["receipt"] = .object(receipt)
        body["unknown_apple_field"] = .array([.integer(1)])
        return AppleReceiptAnswer(body: body, status: status, answeredBy: .production, isRetryable: false)
    }

    // Any base64 that decodes to something starting like PKCS#7 is a "unified receipt" to the input detector.
    static let receiptText = Data([0x30, 0x80, 0x06, 0x09] + Array(repeating: 0x41, count: 60)).base64EncodedString()

    @Test func localThenAppleAsksAppleWhenNoAnchorsAreConfigured() async throws {
        let apple = RecordingApple(.success(Self.appleAnswer(bundleID: "com.example.app")))
        let service = VerificationService(verifier: nil, apple: apple)
        let outcome = await service.verify(
            VerificationRequest(receipt: Self.receiptText, nonce: "n"), for: try Self.caller(mode: .localThenApple),
            logger: Self.logger)
        #expect(outcome.status == 0)
        #expect(outcome.source == .apple)
        #expect(outcome.body["unknown_apple_field"] == .array([.integer(1)]))
        #expect(outcome.answer["nonce"] == .string("n"))
        #expect(apple.calls.withLock { $0 } == [Self.receiptText])
    }

    @Test func localModeWithoutAnchorsIsAServerFailureNotAVerdict() async throws {
        let apple = RecordingApple(.success(Self.appleAnswer(bundleID: "com.example.app")))
        let service = VerificationService(verifier: nil, apple: apple)
        let outcome = await service.verify(
            VerificationRequest(receipt: Self.receiptText), for: try Self.caller(mode: .local), logger: Self.logger)
        #expect(outcome.status == 500)
        #expect(apple.calls.withLock { $0 }.isEmpty)
    }

    @Test func appleModeChecksTheBundleIDAndMapsUnreachableAppleTo500() async throws {
        let wrongApp = VerificationService(
            verifier: nil, apple: RecordingApple(.success(Self.appleAnswer(bundleID: "com.other.app"))))
        let rejected = await wrongApp.verify(
            VerificationRequest(receipt: Self.receiptText), for: try Self.caller(mode: .apple), logger: Self.logger)
        #expect(rejected.status == 403)
        #expect(rejected.body["receipt"] == nil)

        let down = VerificationService(
            verifier: nil, apple: RecordingApple(.failure(ServiceError(.appleUnavailable, "timeout"))))
        let failed = await down.verify(
            VerificationRequest(receipt: Self.receiptText), for: try Self.caller(mode: .apple), logger: Self.logger)
        #expect(failed.status == 500)
        #expect(failed.body["retryable"] == .bool(true))
        #expect(failed.body.keys == ["status", "description", "retryable"])
    }

    @Test func malformedReceiptsNeverReachApple() async throws {
        let apple = RecordingApple(.success(Self.appleAnswer(bundleID: "com.example.app")))
        let service = VerificationService(verifier: nil, apple: apple)
        for text in ["", "%%%", "bm90IGEgcmVjZWlwdA=="] {
            let outcome = await service.verify(
                VerificationRequest(receipt: text), for: try Self.caller(mode: .apple), logger: Self.logger)
            #expect(outcome.status == 21002, "\(text)")
        }
        #expect(apple.calls.withLock { $0 }.isEmpty)
    }

    @Test func latestReceiptInfoKeepsSubscriptionsOldestFirstAndTheNewestPerOriginalWhenAsked() {
        func item(_ id: String, original: String, purchased: Int64, expires: Bool) -> JSONValue {
            var object = JSONObject()
            object["transaction_id"] = .string(id)
            object["original_transaction_id"] = .string(original)
            object["product_id"] = .string("p")
            object["purchase_date_ms"] = .string(String(purchased))
            if expires { object["expires_date_ms"] = .string(String(purchased + 1000)) }
            return .object(object)
        }
        var receipt = JSONObject()
        receipt["in_app"] = .array([
            item("3", original: "1", purchased: 300, expires: true),
            item("c", original: "c", purchased: 50, expires: false),
            item("1", original: "1", purchased: 100, expires: true),
            item("9", original: "9", purchased: 200, expires: true),
        ])
        let all = LatestReceiptInfo.subscriptions(in: receipt, excludingOld: false)
        #expect(all.compactMap { $0["transaction_id"]?.stringValue } == ["1", "9", "3"])
        let newest = LatestReceiptInfo.subscriptions(in: receipt, excludingOld: true)
        #expect(newest.compactMap { $0["transaction_id"]?.stringValue } == ["9", "3"])
    }

    @Test func sealedResultsHaveTheDocumentedLayoutAndFreshIVs() throws {
        let key = Array(repeating: UInt8(3), count: 32)
        let plaintext = Array("{\"status\":0}".utf8)
        let cbc = try #require(Data(base64Encoded: try ResultSealing.seal(plaintext, key: key, cipher: .aes256CBC)))
        #expect(cbc.count == 16 + 16)  // IV, then one padded block
        let gcm = try #require(Data(base64Encoded: try ResultSealing.seal(plaintext, key: key, cipher: .aes256GCM)))
        #expect(gcm.count == 16 + plaintext.count + 16)  // nonce, ciphertext, tag
        let again = try #require(Data(base64Encoded: try ResultSealing.seal(plaintext, key: key, cipher: .aes256GCM)))
        #expect(gcm.prefix(16) != again.prefix(16))
    }
}

extension VerificationServiceTests {
    @Test func aJWSIsNeverSentToAppleEvenWithoutAnchors() async throws {
        let apple = RecordingApple(.success(Self.appleAnswer(bundleID: "com.example.app")))
        let service = VerificationService(verifier: nil, apple: apple)
        let jws = "eyJhbGciOiJFUzI1NiJ9.eyJidW5kbGVJZCI6ImNvbS5leGFtcGxlLmFwcCJ9.c2ln"
        for mode in VerificationMode.allCases {
            let outcome = await service.verify(
                VerificationRequest(receipt: jws), for: try Self.caller(mode: mode), logger: Self.logger)
            #expect(outcome.status == 500, "\(mode)")
        }
        #expect(apple.calls.withLock { $0 }.isEmpty)
    }
}
