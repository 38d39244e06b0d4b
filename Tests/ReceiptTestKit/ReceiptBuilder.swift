import Crypto
import Foundation
import SwiftASN1
import X509
import _CryptoExtras

/// Builds unified app receipts: the ASN.1 attribute payload, signed into PKCS#7 SignedData by a ``TestPKI`` leaf.
///
/// A value type with defaults for everything: set the properties a test cares about, then call ``build(signedBy:)``.
/// The defaults make a DER receipt, SHA-256 with signed attributes, one in-app purchase, created
/// 2023-05-09T23:20:55Z.
/// [Apple's documentation](https://developer.apple.com/documentation/appstorereceipts/validating_receipts_on_the_device)
public struct ReceiptBuilder: Sendable {
    /// One in-app purchase receipt (field 17), rendered as the attributes 1701…1719.
    public struct InAppPurchase: Sendable, Equatable {
        /// 1701 quantity.
        public var quantity: Int64
        /// 1702 product_id.
        public var productID: String
        /// 1703 transaction_id.
        public var transactionID: String
        /// 1705 original_transaction_id.
        public var originalTransactionID: String
        /// 1704 purchase_date.
        public var purchaseDate: Date
        /// 1706 original_purchase_date.
        public var originalPurchaseDate: Date
        /// 1708 expires_date; nil for non-subscriptions (the attribute is then written empty, as Apple does).
        public var expiresDate: Date?
        /// 1711 web_order_line_item_id.
        public var webOrderLineItemID: Int64
        /// 1713 is_trial_period.
        public var isTrialPeriod: Bool
        /// 1719 is_in_intro_offer_period.
        public var isInIntroOfferPeriod: Bool
        /// 1712 cancellation_date: when Apple refunded it; nil (the attribute left out) when it was not.
        public var cancellationDate: Date?

        /// Creates a purchase; see each property for its attribute.
        public init(
            quantity: Int64 = 1, productID: String, transactionID: String, originalTransactionID: String,
            purchaseDate: Date, originalPurchaseDate: Date, expiresDate: Date? = nil, webOrderLineItemID: Int64 = 0,
            isTrialPeriod: Bool = false, isInIntroOfferPeriod: Bool = false
        ) {
            self.quantity = quantity
            self.productID = productID
            self.transactionID = transactionID
            self.originalTransactionID = originalTransactionID
            self.purchaseDate = purchaseDate
            self.originalPurchaseDate = originalPurchaseDate
            self.expiresDate = expiresDate
            self.webOrderLineItemID = webOrderLineItemID
            self.isTrialPeriod = isTrialPeriod
            self.isInIntroOfferPeriod = isInIntroOfferPeriod
        }

        /// The `index`-th of a deterministic series bought before `date`: even indexes are monthly subscription
        /// renewals, odd ones consumables.
        public static func sample(_ index: Int, before date: Date) -> InAppPurchase {
            let purchased = date.addingTimeInterval(-Double(index + 1) * 3_600)
            let isSubscription = index % 2 == 0
            return InAppPurchase(
                productID: isSubscription ? "com.example.app.monthly" : "com.example.app.coins",
                transactionID: String(1_000_000_000 + index),
                originalTransactionID: String(isSubscription ? 1_000_000_000 : 1_000_000_000 + index),
                purchaseDate: purchased, originalPurchaseDate: purchased,
                expiresDate: isSubscription ? purchased.addingTimeInterval(30 * 86_400) : nil,
                webOrderLineItemID: isSubscription ? Int64(2_000_000_000 + index) : 0,
                isTrialPeriod: index == 0, isInIntroOfferPeriod: false)
        }
    }

    /// One raw receipt attribute, for payloads the typed properties cannot express (malformed values, duplicates).
    public struct Attribute: Sendable, Equatable {
        /// The attribute type.
        public var type: Int64
        /// The attribute version.
        public var version: Int64
        /// The OCTET STRING's content, written as given.
        public var value: [UInt8]

        /// Creates a raw attribute.
        public init(type: Int64, version: Int64 = 1, value: [UInt8]) {
            self.type = type
            self.version = version
            self.value = value
        }
    }

    /// The digest algorithm named in SignerInfo (the signature is always bare `rsaEncryption`, PKCS#1 v1.5).
    public enum Digest: String, Sendable, CaseIterable {
        /// SHA-1, 1.3.14.3.2.26, as older Apple receipts use.
        case sha1
        /// SHA-256, 2.16.840.1.101.3.4.2.1.
        case sha256
    }

    /// How the container is encoded.
    public enum Encoding: String, Sendable, CaseIterable {
        /// DER: definite lengths throughout.
        case der
        /// BER as Apple writes it: indefinite lengths on the outer constructed nodes and a chunked content OCTET
        /// STRING.
        case berIndefinite
    }

    /// Which certificate the SignerInfo names (the signature is always made with the leaf's key).
    public enum Signer: String, Sendable, CaseIterable {
        /// The leaf: a correct receipt.
        case leaf
        /// The intermediate: a swapped signer.
        case intermediate
        /// The root: a swapped signer.
        case root
    }

    /// A deliberate defect applied after signing.
    public enum Tampering: String, Sendable, CaseIterable {
        /// None: an authentic receipt.
        case none
        /// The last byte of the content is changed after signing.
        case content
        /// The last byte of the signature is flipped.
        case signature
        /// The signed `messageDigest` attribute does not match the content (the signature over the attributes is
        /// valid). Requires ``ReceiptBuilder/hasSignedAttributes``.
        case messageDigest
    }

    /// How the payload writes its dates (fields 12, 1704, 1706, 1708).
    public enum DateStyle: Sendable, Equatable {
        /// `2023-05-09T23:20:55Z`, as Apple writes them.
        case utc
        /// With this many digits of fractional seconds (1 to 9), taken from the date: `2023-05-09T23:20:55.123Z`.
        case fractionalSeconds(digits: Int)
        /// The wall time `minutes` east of UTC with its offset, `2023-05-10T02:20:55+03:00` (or `+0300` without the
        /// colon), as Xcode's StoreKit testing writes dates in a non-UTC time zone.
        case offset(minutes: Int, colon: Bool)

        /// `date` in this style.
        public func text(_ date: Date) -> String {
            let seconds = date.timeIntervalSince1970.rounded(.down)
            switch self {
            case .utc:
                return RFC3339.string(Date(timeIntervalSince1970: seconds))
            case .fractionalSeconds(let digits):
                let nanoseconds = Int(((date.timeIntervalSince1970 - seconds) * 1e9).rounded())
                let fraction = String(String(format: "%09d", min(nanoseconds, 999_999_999)).prefix(digits))
                return String(RFC3339.string(Date(timeIntervalSince1970: seconds)).dropLast()) + "." + fraction + "Z"
            case .offset(let minutes, let colon):
                let wall = String(
                    RFC3339.string(Date(timeIntervalSince1970: seconds + Double(minutes * 60))).dropLast())
                let hours = String(format: "%02d", abs(minutes) / 60)
                let rest = String(format: "%02d", abs(minutes) % 60)
                return wall + (minutes < 0 ? "-" : "+") + hours + (colon ? ":" : "") + rest
            }
        }
    }

    /// Field 0 `receipt_type`.
    public var receiptType: String = "ProductionSandbox"
    /// Field 1 `app_item_id`.
    public var appItemID: Int64 = 1_234_567_890
    /// Field 2 `bundle_id`.
    public var bundleID: String = "com.example.app"
    /// Field 3 `application_version`.
    public var applicationVersion: String = "42"
    /// Field 19 `original_application_version`.
    public var originalApplicationVersion: String = "1.0"
    /// Field 12 `receipt_creation_date`: the date the verifier checks the chain at.
    public var creationDate: Date = RFC3339.date("2023-05-09T23:20:55Z")
    /// How dates are written.
    public var dateStyle: DateStyle = .utc
    /// Bytes appended after the container, outside what is signed.
    public var trailingBytes: [UInt8] = []
    /// Field 17, one attribute per purchase, in order.
    public var inAppPurchases: [InAppPurchase]
    /// Attributes written first, before the typed fields (the payload reader keeps the first of duplicates).
    public var leadingAttributes: [Attribute] = []
    /// The digest algorithm.
    public var digest: Digest = .sha256
    /// Whether SignerInfo carries signed attributes (contentType and messageDigest); the signature then covers
    /// their DER SET rather than the content.
    public var hasSignedAttributes: Bool = true
    /// The container encoding.
    public var encoding: Encoding = .der
    /// The size of each chunk of the content OCTET STRING under ``Encoding/berIndefinite``.
    public var chunkSize: Int = 1_000
    /// The certificate the SignerInfo names.
    public var signer: Signer = .leaf
    /// A defect applied after signing.
    public var tampering: Tampering = .none
    /// Writes the signer's serial number as its bare magnitude, without the `00` sign octet a serial with the high
    /// bit set needs: the INTEGER then reads as negative, a mistake of naive encoders that strict readers reject.
    public var omitsSerialSignOctet: Bool = false

    /// Creates a builder with `inAppPurchaseCount` sample purchases (see ``InAppPurchase/sample(_:before:)``).
    public init(inAppPurchaseCount: Int = 1) {
        let created = RFC3339.date("2023-05-09T23:20:55Z")
        inAppPurchases = (0..<inAppPurchaseCount).map { InAppPurchase.sample($0, before: created) }
    }

    /// The receipt payload: the DER `SET OF ReceiptAttribute` that the container signs.
    public func payload() -> [UInt8] {
        var attributes = leadingAttributes.map(Self.attribute)
        attributes += [
            Self.attribute(0, .utf8String(receiptType)),
            Self.attribute(1, .integer(appItemID)),
            Self.attribute(2, .utf8String(bundleID)),
            Self.attribute(3, .utf8String(applicationVersion)),
            // Opaque value and SHA-1 hash: present in real receipts, ignored by readers.
            Self.attribute(Attribute(type: 4, value: Array(0..<16))),
            Self.attribute(Attribute(type: 5, value: Array(repeating: 0xAB, count: 20))),
            Self.attribute(12, .ia5String(dateStyle.text(creationDate))),
            Self.attribute(19, .utf8String(originalApplicationVersion)),
        ]
        for purchase in inAppPurchases {
            attributes.append(Self.attribute(Attribute(type: 17, value: Self.inAppPayload(purchase, dateStyle))))
        }
        return ASN1Tree.set(attributes).bytes
    }

    /// Signs the payload with `pki`'s leaf (which must be RSA) and encodes the container.
    public func build(signedBy pki: TestPKI) throws -> GeneratedReceipt {
        guard case .rsa(let key) = pki.leafKey else {
            throw TestKitError("unified receipts are RSA-signed: use a TestPKI with keyType .rsa2048")
        }
        guard tampering != .messageDigest || hasSignedAttributes else {
            throw TestKitError("a messageDigest can only be tampered with when there are signed attributes")
        }
        let content = payload()
        let indefinite = encoding == .berIndefinite

        var signedAttributes: [ASN1Tree]?
        let signedBytes: [UInt8]
        if hasSignedAttributes {
            var messageDigest = hash(content)
            if tampering == .messageDigest { messageDigest[0] ^= 0xFF }
            let attributes: [ASN1Tree] = [
                .sequence([.objectIdentifier(OID.contentType), .set([.objectIdentifier(OID.data)])]),
                .sequence([.objectIdentifier(OID.messageDigest), .set([.octetString(messageDigest)])]),
            ]
            signedAttributes = attributes
            signedBytes = ASN1Tree.set(attributes).bytes  // RFC 5652 §5.4: the DER of the SET, tag 0x31
        } else {
            signedBytes = content
        }
        var signature = try sign(signedBytes, with: key)
        if tampering == .signature { signature[signature.count - 1] ^= 0x01 }

        let named: Certificate
        switch signer {
        case .leaf: named = pki.leaf
        case .intermediate: named = pki.intermediate
        case .root: named = pki.root
        }
        var issuer = DER.Serializer()
        try issuer.serialize(named.issuer)
        var signerInfo: [ASN1Tree] = [
            .integer(1),
            .sequence([.encoded(issuer.serializedBytes), serial(named.serialNumber)]),
            .algorithm(digest == .sha1 ? OID.sha1 : OID.sha256),
        ]
        if let signedAttributes { signerInfo.append(.context(0, signedAttributes)) }
        signerInfo += [.algorithm(OID.rsaEncryption), .octetString(signature)]

        var carriedContent = content
        if tampering == .content { carriedContent[carriedContent.count - 1] ^= 0x01 }
        let eContent: ASN1Tree =
            indefinite
            ? .chunkedOctetString(carriedContent, chunkSize: chunkSize, indefinite: true)
            : .octetString(carriedContent)

        let signedData = ASN1Tree.sequence(
            [
                .integer(1),
                .set([.algorithm(digest == .sha1 ? OID.sha1 : OID.sha256)]),
                .sequence(
                    [.objectIdentifier(OID.data), .context(0, [eContent], indefinite: indefinite)],
                    indefinite: indefinite),
                .context(0, pki.chainDER.map { .encoded($0) }, indefinite: indefinite),
                .set([.sequence(signerInfo)], indefinite: indefinite),
            ], indefinite: indefinite)
        let contentInfo = ASN1Tree.sequence(
            [.objectIdentifier(OID.signedData), .context(0, [signedData], indefinite: indefinite)],
            indefinite: indefinite)
        return GeneratedReceipt(bytes: contentInfo.bytes + trailingBytes, payload: content, creationDate: creationDate)
    }

    private func serial(_ number: Certificate.SerialNumber) -> ASN1Tree {
        omitsSerialSignOctet
            ? .integer(content: Array(number.bytes.drop(while: { $0 == 0 }))) : .integer(unsigned: number.bytes)
    }

    private func hash(_ bytes: [UInt8]) -> [UInt8] {
        switch digest {
        case .sha1: return Array(Insecure.SHA1.hash(data: bytes))
        case .sha256: return Array(SHA256.hash(data: bytes))
        }
    }

    /// RSA PKCS#1 v1.5 over the digest of `bytes`, the raw signature octets.
    private func sign(_ bytes: [UInt8], with key: _RSA.Signing.PrivateKey) throws -> [UInt8] {
        let signature: _RSA.Signing.RSASignature
        switch digest {
        case .sha1: signature = try key.signature(for: Insecure.SHA1.hash(data: bytes), padding: .insecurePKCS1v1_5)
        case .sha256: signature = try key.signature(for: SHA256.hash(data: bytes), padding: .insecurePKCS1v1_5)
        }
        return Array(signature.rawRepresentation)
    }

    private static func inAppPayload(_ purchase: InAppPurchase, _ style: DateStyle) -> [UInt8] {
        ASN1Tree.set(
            [
                attribute(1701, .integer(purchase.quantity)),
                attribute(1702, .utf8String(purchase.productID)),
                attribute(1703, .utf8String(purchase.transactionID)),
                attribute(1705, .utf8String(purchase.originalTransactionID)),
                attribute(1704, .ia5String(style.text(purchase.purchaseDate))),
                attribute(1706, .ia5String(style.text(purchase.originalPurchaseDate))),
                attribute(1708, .ia5String(purchase.expiresDate.map(style.text) ?? "")),
                attribute(1711, .integer(purchase.webOrderLineItemID)),
                attribute(1713, .integer(purchase.isTrialPeriod ? 1 : 0)),
                attribute(1719, .integer(purchase.isInIntroOfferPeriod ? 1 : 0)),
            ] + (purchase.cancellationDate.map { [attribute(1712, .ia5String(style.text($0)))] } ?? [])
        ).bytes
    }

    private static func attribute(_ type: Int64, _ value: ASN1Tree) -> ASN1Tree {
        attribute(Attribute(type: type, value: value.bytes))
    }

    private static func attribute(_ attribute: Attribute) -> ASN1Tree {
        .sequence([.integer(attribute.type), .integer(attribute.version), .octetString(attribute.value)])
    }

    /// The object identifiers a receipt container uses.
    enum OID {
        static let signedData = "1.2.840.113549.1.7.2"
        static let data = "1.2.840.113549.1.7.1"
        static let contentType = "1.2.840.113549.1.9.3"
        static let messageDigest = "1.2.840.113549.1.9.4"
        static let sha1 = "1.3.14.3.2.26"
        static let sha256 = "2.16.840.1.101.3.4.2.1"
        static let rsaEncryption = "1.2.840.113549.1.1.1"
    }
}
