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

        init(name: String, verifier: ReceiptVerifier, input: ReceiptInput, allowTestData: Bool) {
            self.name = name
            run = { _ = try verifier.verify(input, allowTestData: allowTestData) }
        }

        init(name: String, run: @escaping () throws -> Void) {
            self.name = name
            self.run = run
        }
    }

    static func main() throws {
        let arguments = CommandLine.arguments.dropFirst()
        if arguments.first == "write-load-fixture", let directory = arguments.dropFirst().first {
            try writeLoadFixture(to: directory)
            return
        }
        let seconds = Double(arguments.first ?? "") ?? 2
        let filter = arguments.dropFirst().first
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
                        input: try ReceiptInput.decode(receipt.base64), allowTestData: true))
            }
        }
        let p256 = try TestPKI(TestPKI.Options(keyType: .p256))
        cases.append(
            Case(
                name: "JWS ES256", verifier: ReceiptVerifier(anchors: try TrustAnchors(encoded: [p256.rootDER])),
                input: try ReceiptInput.decode(try JWSBuilder().build(signedBy: p256)), allowTestData: true))

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
                        name: name, verifier: apple, input: try ReceiptInput.decode(try read(path)),
                        allowTestData: false))
            }
        }

        print("case | median verifications/s (one core) | best | µs each (median)")
        print("---|---|---|---")
        let clock = ContinuousClock()
        for benchmark in cases where filter.map({ benchmark.name.contains($0) }) ?? true {
            // Warm up: fills the chain cache, as a steady-state server would have it.
            for _ in 0..<200 { try benchmark.run() }
            // Five rounds; the median resists a noisy neighbour on a shared machine.
            var rates: [Double] = []
            for _ in 0..<5 {
                let start = clock.now
                let deadline = start.advanced(by: .milliseconds(Int(seconds * 200)))
                var count = 0
                while clock.now < deadline {
                    for _ in 0..<20 { try benchmark.run() }
                    count += 20
                }
                let elapsed = start.duration(to: clock.now)
                rates.append(
                    Double(count)
                        / (Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18))
            }
            rates.sort()
            let median = rates[2]
            print(
                "\(benchmark.name) | \(Int(median.rounded())) | \(Int(rates[4].rounded())) | "
                    + String(format: "%.1f", 1e6 / median))
        }
    }

    /// Writes what `scripts/loadtest.sh` needs: a test root (`anchors/test-root.cer`) and a receipt it signed with
    /// 10 in-app purchases, SHA-1 and no signed attributes as Apple's (`receipt.b64`).
    static func writeLoadFixture(to directory: String) throws {
        let pki = try TestPKI(TestPKI.Options(keyType: .rsa2048))
        var builder = ReceiptBuilder(inAppPurchaseCount: 10)
        builder.digest = .sha1
        builder.hasSignedAttributes = false
        let receipt = try builder.build(signedBy: pki)
        let anchors = URL(fileURLWithPath: directory).appendingPathComponent("anchors")
        try FileManager.default.createDirectory(at: anchors, withIntermediateDirectories: true)
        try Data(pki.rootDER).write(to: anchors.appendingPathComponent("test-root.cer"))
        try Data(receipt.base64.utf8).write(to: URL(fileURLWithPath: directory).appendingPathComponent("receipt.b64"))
    }
}

/// A reference signature did not verify: the benchmark itself is broken.
struct BenchError: Error {}
