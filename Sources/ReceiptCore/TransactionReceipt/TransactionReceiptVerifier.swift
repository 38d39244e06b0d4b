import Crypto
import _CryptoExtras
import Foundation
import SwiftASN1
import X509

/// Verifies iOS 6 transaction receipts: a text plist whose `signature` blob signs its `purchase-info`.
///
/// The blob is `version[1] ‖ RSA signature (128 bytes for version 2, 256 for version 3) ‖ certificate length
/// [4, big-endian] ‖ leaf certificate DER`; the signed bytes are `version ‖ purchase-info` (decoded), with RSA
/// PKCS#1 v1.5 over SHA-1. The leaf chains to the Apple iTunes Store CA, checked at the purchase date.
struct TransactionReceiptVerifier: Sendable {
    let chains: ChainVerifier

    func verify(_ bytes: [UInt8], testData: TestDataTrust) throws -> VerifiedReceipt {
        guard let outer = TextPlist.dictionary(bytes) else {
            throw ReceiptError(.malformedTransactionReceipt, "the transaction receipt is not a text plist")
        }
        func field(_ name: String) -> String? { outer.first(where: { $0.key == name })?.value }
        guard let signatureText = field("signature"), let purchaseText = field("purchase-info"),
            let blob = Base64.decode(Array(signatureText.utf8)),
            let purchaseInfo = Base64.decode(Array(purchaseText.utf8))
        else {
            throw ReceiptError(.malformedTransactionReceipt, "signature or purchase-info is missing or not base64")
        }

        let version = blob.first ?? 0
        let signatureLength: Int
        switch version {
        case 2: signatureLength = 128
        case 3: signatureLength = 256
        default:
            throw ReceiptError(.malformedTransactionReceipt, "unknown signature blob version \(version)")
        }
        guard blob.count > 1 + signatureLength + 4 else {
            throw ReceiptError(.malformedTransactionReceipt, "the signature blob is truncated")
        }
        let signature = Array(blob[1..<(1 + signatureLength)])
        let lengthBytes = blob[(1 + signatureLength)..<(1 + signatureLength + 4)]
        let certificateLength = lengthBytes.reduce(0) { $0 << 8 | Int($1) }
        let certificateStart = 1 + signatureLength + 4
        guard certificateLength > 0, certificateLength <= blob.count - certificateStart else {
            throw ReceiptError(.malformedTransactionReceipt, "the signature blob's certificate length is wrong")
        }
        let leafDER = Array(blob[certificateStart..<(certificateStart + certificateLength)])

        let leaf = try LegacyCertificate(der: leafDER)
        let leafKey: _RSA.Signing.PublicKey
        do {
            // iOS 6 leaves use 1024-bit RSA: loaded explicitly as legacy, for this format only.
            leafKey = try _RSA.Signing.PublicKey(unsafeDERRepresentation: leaf.subjectPublicKeyInfo)
        } catch {
            throw ReceiptError(.malformedTransactionReceipt, "the receipt certificate's key is not RSA")
        }
        let digest = Insecure.SHA1.hash(data: [version] + purchaseInfo)
        guard
            leafKey.isValidSignature(
                _RSA.Signing.RSASignature(rawRepresentation: signature), for: digest, padding: .insecurePKCS1v1_5)
        else {
            throw ReceiptError(
                .invalidSignature, "the transaction receipt signature does not verify with its certificate")
        }

        guard let members = TextPlist.dictionary(purchaseInfo) else {
            throw ReceiptError(.malformedTransactionReceipt, "purchase-info is not a text plist")
        }
        var receipt = JSONObject()
        for (key, value) in members { receipt.append(key.replacingOccurrences(of: "-", with: "_"), .string(value)) }
        guard let bundleID = receipt["bid"]?.stringValue,
            let purchaseMillis = receipt["purchase_date_ms"]?.stringValue.flatMap({ Int64($0) })
        else {
            throw ReceiptError(.malformedTransactionReceipt, "purchase-info lacks bid or purchase-date-ms")
        }

        let anchor = try chains.verifyLegacy(
            leaf, at: Date(timeIntervalSince1970: TimeInterval(purchaseMillis) / 1_000), testData: testData)
        let environment: StoreEnvironment =
            anchor.isApple ? (field("environment") == "Sandbox" ? .sandbox : .production) : .xcode
        return VerifiedReceipt(
            kind: .transactionReceipt, environment: environment, bundleID: bundleID, receipt: receipt,
            signingDate: purchaseMillis, isTestData: !anchor.isApple)
    }
}
