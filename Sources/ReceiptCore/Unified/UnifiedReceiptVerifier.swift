import Crypto
import Foundation
import X509

/// Verifies unified app receipts: the signer's RSA signature over the payload, then the chain to a configured
/// anchor at the receipt's creation date, then decodes the payload.
struct UnifiedReceiptVerifier: Sendable {
    let chains: ChainVerifier

    static let sha1 = "1.3.14.3.2.26"
    static let sha256 = "2.16.840.1.101.3.4.2.1"
    static let rsaEncryption = "1.2.840.113549.1.1.1"
    static let sha1WithRSA = "1.2.840.113549.1.1.5"
    static let sha256WithRSA = "1.2.840.113549.1.1.11"

    func verify(_ bytes: [UInt8], testData: TestDataTrust) throws -> (payload: ReceiptPayload, chain: ValidatedChain) {
        let container = try SignedData(ber: bytes)
        let signer = container.signer
        let algorithm = try Self.signatureAlgorithm(
            digest: signer.digestAlgorithm, signature: signer.signatureAlgorithm)

        // What the signature covers: the content itself, or the signed attributes that carry its digest.
        let signedBytes: [UInt8]
        if let attributes = signer.signedAttributes {
            let digest: [UInt8] =
                signer.digestAlgorithm == Self.sha1
                ? Array(Insecure.SHA1.hash(data: container.content)) : Array(SHA256.hash(data: container.content))
            guard digest == attributes.messageDigest else {
                throw ReceiptError(.digestMismatch, "the signed message digest does not match the receipt payload")
            }
            signedBytes = attributes.der
        } else {
            signedBytes = container.content
        }

        let carried = try chains.certificates(container.certificates)
        let signerIndex = try Self.signerIndex(
            signer.identifier, carried: container.certificates, parsed: carried.certificates)
        guard
            carried.certificates[signerIndex].publicKey.isValidSignature(
                signer.signature, for: signedBytes, signatureAlgorithm: algorithm)
        else {
            throw ReceiptError(.invalidSignature, "the receipt signature does not verify with its signer's key")
        }

        let payload = try ReceiptPayload(der: container.content)
        let creationDate = Date(timeIntervalSince1970: TimeInterval(payload.creationDate) / 1_000)
        let chain = try chains.verify(
            leaf: signerIndex, of: carried, policy: .unifiedReceipt, at: creationDate, testData: testData)
        return (payload, chain)
    }

    static func signatureAlgorithm(digest: String, signature: String) throws -> Certificate.SignatureAlgorithm {
        switch (digest, signature) {
        case (sha1, rsaEncryption), (sha1, sha1WithRSA): return .sha1WithRSAEncryption
        case (sha256, rsaEncryption), (sha256, sha256WithRSA): return .sha256WithRSAEncryption
        default:
            throw ReceiptError(.unsupportedAlgorithm, "digest \(digest) with signature \(signature) is not accepted")
        }
    }

    /// Which carried certificate the signer names: by issuer Name (byte for byte) and serial number, or by subject
    /// key identifier.
    static func signerIndex(_ identifier: SignerInfo.Identifier, carried: [[UInt8]], parsed: [Certificate]) throws
        -> Int
    {
        let index: Int?
        switch identifier {
        case .issuerAndSerialNumber(let issuer, let serial):
            index = try carried.firstIndex { der in
                let identity = try CertificateIdentity(der: der)
                // DER INTEGERs are minimal, so equal serial numbers have equal content octets (as openssl compares).
                return identity.serial.elementsEqual(serial) && identity.issuer.elementsEqual(issuer)
            }
        case .subjectKeyIdentifier(let keyIdentifier):
            index = parsed.firstIndex { certificate in
                do {
                    return try certificate.extensions.subjectKeyIdentifier.map {
                        $0.keyIdentifier.elementsEqual(keyIdentifier)
                    } ?? false
                } catch {
                    return false  // a malformed extension names nothing
                }
            }
        }
        guard let index else {
            throw ReceiptError(.invalidChain, "the receipt does not carry its signer's certificate")
        }
        return index
    }

}
