import Crypto
import Foundation

/// Builds compact ES256 JWS shaped like StoreKit 2 signed transactions or app transactions, signed by a P-256
/// ``TestPKI``.
///
/// The header is `{"alg":…,"x5c":[leaf, intermediate, root]}` (or Xcode's single self-signed certificate); the payload
/// a `JWSTransaction` or `AppTransaction` subset.
/// [JWSTransaction](https://developer.apple.com/documentation/appstoreserverapi/jwstransaction),
/// [AppTransaction](https://developer.apple.com/documentation/storekit/apptransaction)
public struct JWSBuilder: Sendable {
    /// A deliberate defect applied after signing.
    public enum Tampering: String, Sendable, CaseIterable {
        /// None: an authentic JWS.
        case none
        /// The payload is replaced after signing (its `bundleId` changed), the signature kept.
        case payload
        /// The last signature byte is flipped.
        case signature
        /// The signature part is left empty, as an unsecured JWS (`"alg":"none"`) has it.
        case unsigned
    }

    /// What the payload is.
    public enum Payload: String, Sendable, CaseIterable {
        /// A `JWSTransaction`, dated by `signedDate`.
        case transaction
        /// An `AppTransaction`: no `signedDate`; Apple signs it at its `receiptCreationDate`.
        case appTransaction
        /// A `JWSRenewalInfo` of `originalTransactionID`'s subscription to `productID`, dated by `signedDate`.
        case renewalInfo
        /// A Server Notifications V2 `responseBodyV2DecodedPayload` of `notificationType`, without nested signed
        /// data (its `data` names the bundle and environment).
        case notification
    }

    /// Which certificates sign and travel in `x5c`.
    public enum Chain: String, Sendable, CaseIterable {
        /// The leaf signs; `x5c` is leaf, intermediate, root.
        case full
        /// The leaf signs; `x5c` is leaf and intermediate only.
        case withoutRoot
        /// The self-signed root signs and is the only `x5c` entry, as Xcode's StoreKit testing does.
        case selfSigned
    }

    /// The header's `alg`; anything but `ES256` is a test of rejection (the signature is ES256 regardless).
    public var algorithm: String = "ES256"
    /// What the payload is.
    public var payload: Payload = .transaction
    /// Which certificates sign and travel in `x5c`.
    public var chain: Chain = .full
    /// `transactionId`.
    public var transactionID: String = "2000000123456789"
    /// `originalTransactionId`.
    public var originalTransactionID: String = "2000000123456789"
    /// `bundleId`.
    public var bundleID: String = "com.example.app"
    /// `productId`.
    public var productID: String = "com.example.app.monthly"
    /// `environment` (`receiptType` of an app transaction): `Sandbox`, `Production` or `Xcode`.
    public var environment: String = "Sandbox"
    /// `signedDate` (`receiptCreationDate` of an app transaction), in milliseconds since 1970: the date the verifier
    /// checks the chain at.
    public var signedDate: Date = RFC3339.date("2023-05-09T23:20:55Z")
    /// A defect applied after signing.
    public var tampering: Tampering = .none
    /// `inAppOwnershipType`: `PURCHASED` or `FAMILY_SHARED`.
    public var ownershipType: String = "PURCHASED"
    /// `appAccountToken`, when the app set one.
    public var appAccountToken: String?
    /// `revocationDate`, `revocationReason`, `revocationType` and `revocationPercentage` (thousandths of a percent),
    /// when Apple revoked the transaction.
    public var revocation: (date: Date, reason: Int, type: String, percentage: Int?)?
    /// A transaction's `type`.
    public var type: String = "Auto-Renewable Subscription"
    /// A transaction's `purchaseDate`; nil: a minute before `signedDate`.
    public var purchaseDate: Date?
    /// The transaction's `offerType` and `offerDiscountType`, when it was bought with an offer.
    public var offer: (type: Int, discount: String?)?
    /// A transaction's `expiresDate`, when it has one; a renewal info's `gracePeriodExpiresDate`.
    public var expiresDate: Date?
    /// A renewal info's `autoRenewStatus`, `isInBillingRetryPeriod`, `expirationIntent` and
    /// `eligibleWinBackOfferIds`.
    public var autoRenewStatus = 1
    public var isInBillingRetryPeriod = false
    public var expirationIntent: Int?
    public var eligibleWinBackOfferIDs: [String]?
    /// A notification's `notificationType` and `notificationUUID`.
    public var notificationType = "TEST"
    public var notificationUUID = "9d5f7c1e-0000-4000-8000-000000000001"
    /// A notification's `subtype`.
    public var notificationSubtype: String?
    /// A notification's `data.signedTransactionInfo` and `data.signedRenewalInfo` (built JWS).
    public var signedTransactionInfo: String?
    public var signedRenewalInfo: String?
    /// A `RESCIND_CONSENT` notification's `appData.signedAppTransactionInfo`: when set, the notification has
    /// `appData` and no `data`.
    public var signedAppTransactionInfo: String?
    /// Where a notification without signed items states its app, instead of `data`: `summary` (RENEWAL_EXTENSION's
    /// SUMMARY) or `externalPurchaseToken` (EXTERNAL_PURCHASE_TOKEN).
    public var notificationContainer: String?
    /// Whether a notification leaves out `signedDate` (as early notifications did).
    public var omitsSignedDate = false
    /// More members of the payload (a transaction's or renewal info's), merged over the built ones.
    public var extraPayload: [String: any Sendable] = [:]

    /// Creates a builder with the defaults above.
    public init() {}

    /// `signedDate` in milliseconds since 1970, as the payload carries it.
    public var signedDateMilliseconds: Int64 { Int64((signedDate.timeIntervalSince1970 * 1_000).rounded(.down)) }

    /// The payload as JSON text (keys sorted, so the output is reproducible).
    public func payloadJSON(bundleID: String? = nil) throws -> [UInt8] {
        var object: [String: Any]
        switch payload {
        case .transaction:
            object = [
                "transactionId": transactionID, "originalTransactionId": originalTransactionID,
                "bundleId": bundleID ?? self.bundleID, "productId": productID, "environment": environment,
                "signedDate": signedDateMilliseconds,
                "purchaseDate": purchaseDate.map(Self.milliseconds) ?? signedDateMilliseconds - 60_000, "quantity": 1,
                "type": type, "inAppOwnershipType": ownershipType,
            ]
            if let expiresDate { object["expiresDate"] = Self.milliseconds(expiresDate) }
            if let appAccountToken { object["appAccountToken"] = appAccountToken }
            if let offer {
                object["offerType"] = offer.type
                if let discount = offer.discount { object["offerDiscountType"] = discount }
            }
            if let revocation {
                object["revocationDate"] = Int64((revocation.date.timeIntervalSince1970 * 1_000).rounded(.down))
                object["revocationReason"] = revocation.reason
                object["revocationType"] = revocation.type
                if let percentage = revocation.percentage { object["revocationPercentage"] = percentage }
            }
        case .appTransaction:
            object = [
                "receiptType": environment, "appAppleId": 1_234_567_890, "bundleId": bundleID ?? self.bundleID,
                "applicationVersion": "42", "versionExternalIdentifier": 0,
                "receiptCreationDate": signedDateMilliseconds, "requestDate": signedDateMilliseconds + 5_000,
                "originalPurchaseDate": signedDateMilliseconds - 86_400_000, "originalApplicationVersion": "1.0",
                "deviceVerification": "dGVzdA==", "deviceVerificationNonce": "b6a9c5f0-2f1d-4c53-9a4e-7d1f00000001",
                "appTransactionId": "704528340000000001", "originalPlatform": "iOS",
            ]
        case .renewalInfo:
            object = [
                "originalTransactionId": originalTransactionID, "autoRenewProductId": productID,
                "productId": productID, "autoRenewStatus": autoRenewStatus,
                "isInBillingRetryPeriod": isInBillingRetryPeriod, "environment": environment,
                "signedDate": signedDateMilliseconds,
                "recentSubscriptionStartDate": signedDateMilliseconds - 86_400_000,
            ]
            if let expiresDate { object["gracePeriodExpiresDate"] = Self.milliseconds(expiresDate) }
            if let expirationIntent { object["expirationIntent"] = expirationIntent }
            if let eligibleWinBackOfferIDs { object["eligibleWinBackOfferIds"] = eligibleWinBackOfferIDs }
        case .notification:
            object = [
                "notificationType": notificationType, "notificationUUID": notificationUUID, "version": "2.0",
                "signedDate": signedDateMilliseconds,
            ]
            if omitsSignedDate { object["signedDate"] = nil }
            if let notificationSubtype { object["subtype"] = notificationSubtype }
            var data: [String: Any] = [
                "bundleId": bundleID ?? self.bundleID, "environment": environment, "appAppleId": 1_234_567_890,
            ]
            if let signedAppTransactionInfo {
                data["signedAppTransactionInfo"] = signedAppTransactionInfo
                object["appData"] = data
            } else if let notificationContainer {
                data["requestIdentifier"] = "e5a6b0c2-0000-4000-8000-000000000001"
                object[notificationContainer] = data
            } else {
                data["bundleVersion"] = "42"
                if let signedTransactionInfo { data["signedTransactionInfo"] = signedTransactionInfo }
                if let signedRenewalInfo { data["signedRenewalInfo"] = signedRenewalInfo }
                object["data"] = data
            }
        }
        for (key, value) in extraPayload { object[key] = value }
        return Array(
            try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes]))
    }

    /// A date in milliseconds since 1970, as Apple's payloads carry dates.
    static func milliseconds(_ date: Date) -> Int64 { Int64((date.timeIntervalSince1970 * 1_000).rounded(.down)) }

    /// Signs with `pki` (which must be P-256) and returns the compact JWS `header.payload.signature`.
    public func build(signedBy pki: TestPKI) throws -> String {
        let signingKey: TestPKI.PrivateKey
        let carried: [[UInt8]]
        switch chain {
        case .full: (signingKey, carried) = (pki.leafKey, pki.chainDER)
        case .withoutRoot: (signingKey, carried) = (pki.leafKey, [pki.leafDER, pki.intermediateDER])
        case .selfSigned: (signingKey, carried) = (pki.rootKey, [pki.rootDER])
        }
        guard case .p256(let key) = signingKey else {
            throw TestKitError("StoreKit 2 JWS are ES256-signed: use a TestPKI with keyType .p256")
        }
        let header: [String: Any] = ["alg": algorithm, "x5c": carried.map { Data($0).base64EncodedString() }]
        let headerPart = Self.base64URL(
            Array(try JSONSerialization.data(withJSONObject: header, options: [.sortedKeys, .withoutEscapingSlashes])))
        let payloadPart = Self.base64URL(try payloadJSON())
        let signingInput = Array("\(headerPart).\(payloadPart)".utf8)
        var signature = Array(try key.signature(for: SHA256.hash(data: signingInput)).rawRepresentation)

        var sentPayload = payloadPart
        switch tampering {
        case .none: break
        case .payload: sentPayload = Self.base64URL(try payloadJSON(bundleID: bundleID + ".evil"))
        case .signature: signature[signature.count - 1] ^= 0x01
        case .unsigned: signature = []
        }
        return "\(headerPart).\(sentPayload).\(Self.base64URL(signature))"
    }

    /// Base64url without padding (RFC 7515 §2).
    public static func base64URL(_ bytes: [UInt8]) -> String {
        // Byte by byte: the simulator signs thousands of items a history, and Foundation's string replacing was a
        // twentieth of its time.
        var text = Array(Data(bytes).base64EncodedData())
        while text.last == UInt8(ascii: "=") { text.removeLast() }
        for index in text.indices {
            switch text[index] {
            case UInt8(ascii: "+"): text[index] = UInt8(ascii: "-")
            case UInt8(ascii: "/"): text[index] = UInt8(ascii: "_")
            default: break
            }
        }
        return String(decoding: text, as: UTF8.self)
    }
}
