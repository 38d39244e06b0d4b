import Crypto
import _CryptoExtras
import Foundation
import ReceiptCore
import ReceiptTestKit

/// Single-core throughput of the local verifier: generated receipts (1, 10, 100 in-app purchases; SHA-1 and
/// SHA-256), generated StoreKit 2 JWS, and the real Apple fixtures when they are present.
///
/// Run with `swift run -c release ReceiptBench [seconds-per-case]` (release only: debug builds are 20-30x slower).
@main
struct ReceiptBench {
    struct Case {
        let name: String
        let run: () throws -> Void

        /// A verification as the server makes it: from the base64 (or compact JWS) text a client sent.
        init(name: String, verifier: ReceiptVerifier, text: String, allowTestData: Bool) {
            self.name = name
            run = { _ = try verifier.verify(try ReceiptInput.decode(text), allowTestData: allowTestData) }
        }

        init(name: String, run: @escaping () throws -> Void) {
            self.name = name
            self.run = run
        }
    }

    static func main() throws {
        let arguments = CommandLine.arguments.dropFirst()
        if arguments.first == "write-load-fixture", let directory = arguments.dropFirst().first {
            try writeLoadFixture(to: directory, count: Int(arguments.dropFirst(2).first ?? "") ?? 8)
            return
        }
        if arguments.first == "write-notification-fixture", let directory = arguments.dropFirst().first {
            try writeNotificationFixture(to: directory, count: Int(arguments.dropFirst(2).first ?? "") ?? 1_000)
            return
        }
        if arguments.first == "write-import-fixture", let directory = arguments.dropFirst().first {
            try writeImportFixture(to: directory, count: Int(arguments.dropFirst(2).first ?? "") ?? 1_000)
            return
        }
        if arguments.first == "write-storekit-fixture", let directory = arguments.dropFirst().first {
            try writeStoreKitFixture(to: directory)
            return
        }
        let seconds = Double(arguments.first ?? "") ?? 2
        // Cases whose name contains any of the `|`-separated words; all without one.
        let filter = arguments.dropFirst().first.map { $0.split(separator: "|").map(String.init) }
        var cases: [Case] = []

        let rsa = try TestPKI(TestPKI.Options(keyType: .rsa2048))
        let rsaVerifier = ReceiptVerifier(anchors: try TrustAnchors(encoded: [rsa.rootDER]))
        for digest in [ReceiptBuilder.Digest.sha1, .sha256] {
            for count in [1, 10, 100] {
                var builder = ReceiptBuilder(inAppPurchaseCount: count)
                builder.digest = digest
                builder.hasSignedAttributes = false  // as Apple's receipts
                let receipt = try builder.build(signedBy: rsa)
                cases.append(
                    Case(
                        name: "unified \(digest.rawValue) \(count) IAP", verifier: rsaVerifier,
                        text: receipt.base64, allowTestData: true))
                if digest == .sha1, count == 10 {
                    // What decoding the text alone costs of that verification.
                    let text = receipt.base64
                    cases.append(
                        Case(name: "base64 decoding alone (\(text.utf8.count / 1024) KiB text)") {
                            _ = try ReceiptInput.decode(text)
                        })
                }
            }
        }
        let p256 = try TestPKI(TestPKI.Options(keyType: .p256))
        cases.append(
            Case(
                name: "JWS ES256", verifier: ReceiptVerifier(anchors: try TrustAnchors(encoded: [p256.rootDER])),
                text: try JWSBuilder().build(signedBy: p256), allowTestData: true))

        // Reference rows: one bare signature check each, the floor under every receipt and JWS.
        let ecdsaKey = P256.Signing.PrivateKey()
        let message = Array(repeating: UInt8(7), count: 1_024)
        let ecdsaSignature = try ecdsaKey.signature(for: message)
        cases.append(
            Case(name: "reference: one P-256 ECDSA verification") {
                guard ecdsaKey.publicKey.isValidSignature(ecdsaSignature, for: message) else { throw BenchError() }
            })

        let rsaKey = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        let rsaSignature = try rsaKey.signature(for: SHA256.hash(data: message), padding: .insecurePKCS1v1_5)
        cases.append(
            Case(name: "reference: one RSA-2048 PKCS#1 v1.5 verification") {
                guard
                    rsaKey.publicKey.isValidSignature(
                        rsaSignature, for: SHA256.hash(data: message), padding: .insecurePKCS1v1_5)
                else { throw BenchError() }
            })

        let fixtures = URL(
            fileURLWithPath: ProcessInfo.processInfo.environment["RECEIPTVERIFY_FIXTURES"] ?? "../shared/fixtures")
        if FileManager.default.fileExists(atPath: fixtures.path) {
            func read(_ path: String) throws -> String {
                try String(contentsOf: fixtures.appendingPathComponent(path), encoding: .utf8)
            }
            let certificates = try ["AppleIncRootCertificate.cer", "AppleRootCA-G3.cer"].map {
                Array(try Data(contentsOf: fixtures.appendingPathComponent("certs/\($0)")))
            }
            let apple = ReceiptVerifier(anchors: try TrustAnchors(encoded: certificates))
            for (name, path) in [
                ("Apple receipt sha1 9 IAP (revenuecat)", "receipts/revenuecat_sandbox_ios_2020.b64"),
                ("Apple receipt sha256 4 IAP (tp_production)", "receipts/tp_production_ios_g5_2024.b64"),
                ("Apple JWS transaction (voicerec)", "jws/apple_transaction_voicerec_sub_2022.jws"),
            ] {
                cases.append(
                    Case(
                        name: name, verifier: apple, text: try read(path), allowTestData: false))
            }
        }

        let selected = cases.filter { benchmark in filter.map { $0.contains { benchmark.name.contains($0) } } ?? true }
        let clock = ContinuousClock()
        // Warm up: fills the chain cache, as a steady-state server would have it.
        for benchmark in selected {
            for _ in 0..<200 { try benchmark.run() }
        }
        // Five rounds, every case once per round, so that a noisy neighbour slows all cases alike and the ratios
        // between cases hold; the median of the rounds resists the noise left.
        var rates = Array(repeating: [Double](), count: selected.count)
        for _ in 0..<5 {
            for (index, benchmark) in selected.enumerated() {
                let start = clock.now
                let deadline = start.advanced(by: .milliseconds(Int(seconds * 200)))
                var count = 0
                while clock.now < deadline {
                    for _ in 0..<20 { try benchmark.run() }
                    count += 20
                }
                let elapsed = start.duration(to: clock.now)
                rates[index].append(
                    Double(count)
                        / (Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18))
            }
        }
        let medians = rates.map { $0.sorted()[2] }
        let p256Rate = zip(selected, medians).first { $0.0.name.contains("P-256") }?.1
        print("case | median verifications/s (one core) | best | µs each (median) | rate ÷ one P-256 verification's")
        print("---|---|---|---|---")
        for (index, benchmark) in selected.enumerated() {
            let median = medians[index]
            print(
                "\(benchmark.name) | \(Int(median.rounded())) | \(Int(rates[index].max()!.rounded())) | "
                    + String(format: "%.1f", 1e6 / median) + " | "
                    + (p256Rate.map { String(format: "%.2f", median / $0) } ?? "-"))
        }
    }

    /// Writes what `scripts/loadtest.sh` needs: a test root (`anchors/test-root.cer`) and `count` distinct receipts
    /// it signed, each with 10 in-app purchases, SHA-1 and no signed attributes as Apple's (`receipt-0.b64` …).
    static func writeLoadFixture(to directory: String, count: Int) throws {
        let pki = try TestPKI(TestPKI.Options(keyType: .rsa2048))
        let anchors = URL(fileURLWithPath: directory).appendingPathComponent("anchors")
        try FileManager.default.createDirectory(at: anchors, withIntermediateDirectories: true)
        try Data(pki.rootDER).write(to: anchors.appendingPathComponent("test-root.cer"))
        for index in 0..<count {
            var builder = ReceiptBuilder(inAppPurchaseCount: 10)
            builder.digest = .sha1
            builder.hasSignedAttributes = false
            // Distinct bytes and signatures: each receipt made a minute after the previous one, its purchases too.
            builder.creationDate = builder.creationDate.addingTimeInterval(Double(index) * 60)
            builder.inAppPurchases = (0..<10).map {
                ReceiptBuilder.InAppPurchase.sample($0 + index * 10, before: builder.creationDate)
            }
            let receipt = try builder.build(signedBy: pki)
            try Data(receipt.base64.utf8).write(
                to: URL(fileURLWithPath: directory).appendingPathComponent("receipt-\(index).b64"))
        }
    }
}

extension ReceiptBench {
    /// What a stand-in for the App Store Server API answers for the load fixture's customer (original transaction
    /// 1000000000, the first purchase of every load receipt), for scripts/storekit-bench.sh: the P-256 test root
    /// (`anchors/test-root-p256.cer`, beside the load fixture's), an app's App Store Server API key
    /// (`apple-key.p8`), and Apple's JSON answers to Get Transaction History (`storekit-history.json`, 10 monthly
    /// renewals) and Get All Subscription Statuses (`storekit-statuses.json`), every value signed by the test root.
    static func writeStoreKitFixture(to directory: String) throws {
        let folder = URL(fileURLWithPath: directory)
        let pki = try TestPKI(TestPKI.Options(keyType: .p256, name: "ReceiptBench P-256"))
        let anchors = folder.appendingPathComponent("anchors")
        try FileManager.default.createDirectory(at: anchors, withIntermediateDirectories: true)
        try Data(pki.rootDER).write(to: anchors.appendingPathComponent("test-root-p256.cer"))
        try Data(P256.Signing.PrivateKey().pemRepresentation.utf8).write(
            to: folder.appendingPathComponent("apple-key.p8"))
        let start = Date(timeIntervalSince1970: 1_683_000_000)
        var transactions: [JSONValue] = []
        var last = ""
        for month in 0..<10 {
            var builder = JWSBuilder()
            builder.transactionID = String(1_000_000_000 + month * 2)
            builder.originalTransactionID = "1000000000"
            builder.purchaseDate = start.addingTimeInterval(Double(month) * 30 * 86_400)
            builder.expiresDate = builder.purchaseDate?.addingTimeInterval(30 * 86_400)
            last = try builder.build(signedBy: pki)
            transactions.append(.string(last))
        }
        let history: JSONObject = [
            "revision": .string("r1"), "hasMore": .bool(false), "bundleId": .string("com.example.app"),
            "environment": .string("Sandbox"), "signedTransactions": .array(transactions),
        ]
        var renewal = JWSBuilder()
        renewal.payload = .renewalInfo
        renewal.originalTransactionID = "1000000000"
        let item: JSONObject = [
            "originalTransactionId": .string("1000000000"), "status": .integer(1),
            "signedTransactionInfo": .string(last), "signedRenewalInfo": .string(try renewal.build(signedBy: pki)),
        ]
        let statuses: JSONObject = [
            "environment": .string("Sandbox"), "bundleId": .string("com.example.app"),
            "data": .array([
                .object([
                    "subscriptionGroupIdentifier": .string("21000000"), "lastTransactions": .array([.object(item)]),
                ])
            ]),
        ]
        try Data(JSONValue.object(history).encoded).write(to: folder.appendingPathComponent("storekit-history.json"))
        try Data(JSONValue.object(statuses).encoded).write(to: folder.appendingPathComponent("storekit-statuses.json"))
    }
}

extension ReceiptBench {
    /// What scripts/notifications-bench.sh posts to `/notifications/{token}`: a P-256 test root
    /// (`anchors/test-root-notifications.cer`) and `count` distinct notifications it signed
    /// (`notifications.jsonl`, one `{"signedPayload": …}` body per line), each a `DID_RENEW` of its own UUID and
    /// transaction (a renewal of one of `count / 12` subscriptions) carrying a signed transaction and renewal info:
    /// three signatures, as Apple's.
    static func writeNotificationFixture(to directory: String, count: Int) throws {
        let folder = URL(fileURLWithPath: directory)
        let pki = try TestPKI(TestPKI.Options(keyType: .p256, name: "ReceiptBench notifications"))
        let anchors = folder.appendingPathComponent("anchors")
        try FileManager.default.createDirectory(at: anchors, withIntermediateDirectories: true)
        try Data(pki.rootDER).write(to: anchors.appendingPathComponent("test-root-notifications.cer"))
        let start = Date()
        var lines: [UInt8] = []
        for index in 0..<count {
            var transaction = JWSBuilder()
            transaction.transactionID = String(3_000_000_000 + index)
            transaction.originalTransactionID = String(3_000_000_000 + index % max(1, count / 12))
            transaction.signedDate = start.addingTimeInterval(Double(index) / 1_000)
            transaction.purchaseDate = transaction.signedDate
            transaction.expiresDate = start.addingTimeInterval(30 * 86_400)
            var renewal = transaction
            renewal.payload = .renewalInfo
            renewal.expiresDate = nil
            var notification = JWSBuilder()
            notification.payload = .notification
            notification.notificationType = "DID_RENEW"
            notification.notificationUUID = UUID().uuidString.lowercased()
            notification.signedDate = transaction.signedDate
            notification.signedTransactionInfo = try transaction.build(signedBy: pki)
            notification.signedRenewalInfo = try renewal.build(signedBy: pki)
            let body: JSONObject = ["signedPayload": .string(try notification.build(signedBy: pki))]
            lines += JSONValue.object(body).encoded
            lines.append(0x0A)
        }
        try Data(lines).write(to: folder.appendingPathComponent("notifications.jsonl"))
    }
}

/// A reference signature did not verify: the benchmark itself is broken.
struct BenchError: Error {}

extension ReceiptBench {
    /// What scripts/export-bench.sh imports with `receiptverify customers import`: a P-256 test root
    /// (`anchors/test-root-import.cer`), an App Store Server API key (`apple-key.p8`), `count` original
    /// transactions' Transaction History (`import-histories.jsonl`, one `{"id": …, "history": …}` per line: three
    /// monthly periods of `com.example.bench.monthly`, production, bundle `com.example.bench`, each signed), and the
    /// app's file of them (`import.csv`, `ORIGINAL_TRANSACTION_ID,APP_USER_ID`, one user per original).
    static func writeImportFixture(to directory: String, count: Int) throws {
        let folder = URL(fileURLWithPath: directory)
        let pki = try TestPKI(TestPKI.Options(keyType: .p256, name: "ReceiptBench import"))
        let anchors = folder.appendingPathComponent("anchors")
        try FileManager.default.createDirectory(at: anchors, withIntermediateDirectories: true)
        try Data(pki.rootDER).write(to: anchors.appendingPathComponent("test-root-import.cer"))
        try Data(P256.Signing.PrivateKey().pemRepresentation.utf8).write(
            to: folder.appendingPathComponent("apple-key.p8"))
        let start = Date().addingTimeInterval(-75 * 86_400)
        var histories: [UInt8] = []
        var mapping = "# ReceiptBench: the app's own users of each original transaction\n"
        for index in 0..<count {
            let original = String(5_000_000_000 + index * 3)
            var transactions: [JSONValue] = []
            for period in 0..<3 {
                var builder = JWSBuilder()
                builder.transactionID = String(5_000_000_000 + index * 3 + period)
                builder.originalTransactionID = original
                builder.bundleID = "com.example.bench"
                builder.productID = "com.example.bench.monthly"
                builder.environment = "Production"
                builder.purchaseDate = start.addingTimeInterval(Double(period) * 30 * 86_400)
                builder.expiresDate = builder.purchaseDate?.addingTimeInterval(30 * 86_400)
                builder.signedDate = Date()
                transactions.append(.string(try builder.build(signedBy: pki)))
            }
            let history: JSONObject = [
                "revision": .string("r1"), "hasMore": .bool(false), "bundleId": .string("com.example.bench"),
                "environment": .string("Production"), "signedTransactions": .array(transactions),
            ]
            histories += JSONValue.object(["id": .string(original), "history": .object(history)]).encoded
            histories.append(UInt8(ascii: "\n"))
            mapping += "\(original),user-\(index)\n"
        }
        try Data(histories).write(to: folder.appendingPathComponent("import-histories.jsonl"))
        try Data(mapping.utf8).write(to: folder.appendingPathComponent("import.csv"))
    }
}
