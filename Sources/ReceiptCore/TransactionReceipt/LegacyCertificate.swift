import Foundation
import SwiftASN1
import X509

/// The parts of an X.509 certificate an iOS 6 receipt leaf needs, read with swift-asn1 alone.
///
/// iOS 6 receipt leaves carry 1024-bit RSA keys, which swift-certificates refuses to parse; this reader keeps the
/// signed TBS bytes, names, validity and the SubjectPublicKeyInfo so the key can be loaded explicitly as legacy.
struct LegacyCertificate: Sendable {
    let tbsCertificate: [UInt8]
    let signatureAlgorithm: String
    let signature: [UInt8]
    let issuer: DistinguishedName
    let subject: DistinguishedName
    let notValidBefore: Date
    let notValidAfter: Date
    let subjectPublicKeyInfo: [UInt8]

    init(der bytes: [UInt8]) throws {
        let code = ReceiptError.Code.malformedTransactionReceipt
        let root: ASN1Node
        do {
            root = try DER.parse(bytes)
        } catch {
            throw ReceiptError(code, "the receipt certificate is not DER")
        }
        let parts = try root.children(code, "certificate")
        guard root.identifier == .sequence, parts.count == 3, parts[2].identifier == .bitString else {
            throw ReceiptError(code, "the receipt certificate is malformed")
        }
        tbsCertificate = Array(parts[0].encodedBytes)
        signatureAlgorithm =
            try parts[1].children(code, "signatureAlgorithm").first.map {
                try $0.objectIdentifier(code, "signatureAlgorithm")
            } ?? ""
        let bitString = try parts[2].octets(code, "signature")
        guard bitString.first == 0 else { throw ReceiptError(code, "the certificate signature has unused bits") }
        signature = Array(bitString.dropFirst())

        var fields = try parts[0].children(code, "tbsCertificate")[...]
        if let first = fields.first, first.isContextTag(0) { fields.removeFirst() }  // version
        guard fields.count >= 6 else { throw ReceiptError(code, "the certificate's TBS is too short") }
        fields.removeFirst()  // serialNumber
        fields.removeFirst()  // signature algorithm
        do {
            issuer = try DistinguishedName(derEncoded: Array(fields.removeFirst().encodedBytes))
            let validity = try fields.removeFirst().children(code, "validity")
            guard validity.count == 2 else { throw ReceiptError(code, "the certificate's validity is malformed") }
            notValidBefore = try Self.date(validity[0])
            notValidAfter = try Self.date(validity[1])
            subject = try DistinguishedName(derEncoded: Array(fields.removeFirst().encodedBytes))
        } catch let error as ReceiptError {
            throw error
        } catch {
            throw ReceiptError(code, "the certificate's names or validity are malformed")
        }
        subjectPublicKeyInfo = Array(fields.removeFirst().encodedBytes)
    }

    private static func date(_ node: ASN1Node) throws -> Date {
        let components: (Int, Int, Int, Int, Int, Int)
        if node.identifier == .utcTime {
            let time = try UTCTime(derEncoded: node)
            components = (time.year, time.month, time.day, time.hours, time.minutes, time.seconds)
        } else {
            let time = try GeneralizedTime(derEncoded: node)
            components = (time.year, time.month, time.day, time.hours, time.minutes, time.seconds)
        }
        let days = AppleDate.daysFromCivil(
            year: Int64(components.0), month: Int64(components.1), day: Int64(components.2))
        let seconds = days * 86_400 + Int64(components.3 * 3_600 + components.4 * 60 + components.5)
        return Date(timeIntervalSince1970: TimeInterval(seconds))
    }
}
