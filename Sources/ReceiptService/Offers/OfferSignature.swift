import Crypto
import Foundation
import ReceiptCore

/// Signatures that let an app present an offer (docs/app-store-server-api.md, "Offers"), made with the app's
/// In-App Purchase key, as Apple's App Store Server Library makes them:
/// - a promotional offer of the original StoreKit API: an ECDSA P-256 SHA-256 signature (DER, base64) over the
///   bundle ID, key id, product, offer, lower-cased application username, lower-cased nonce and timestamp (ms),
///   joined by U+2063 ([Apple](https://developer.apple.com/documentation/storekit/generating-a-signature-for-promotional-offers));
/// - a StoreKit 2 promotional offer or introductory-offer eligibility: an ES256 JWS whose header is `alg`, `kid`,
///   `typ` and whose claims are the feature's with `bid`, `iss`, `aud`, `iat` (seconds) and a `nonce` (a UUID)
///   ([Apple](https://developer.apple.com/documentation/storekit/generating-jws-to-sign-app-store-requests)).
public enum OfferSignature {
    /// What is signed: the request's `kind`.
    public enum Kind: String, Sendable, CaseIterable {
        /// A promotional offer of the original StoreKit API.
        case promotionalOffer = "promotional_offer"
        /// A StoreKit 2 promotional offer (JWS, audience `promotional-offer`).
        case promotionalOfferV2 = "promotional_offer_v2"
        /// Whether the customer may have an introductory offer (JWS, audience `introductory-offer-eligibility`).
        case introductoryOfferEligibility = "introductory_offer_eligibility"

        /// The JWS audience of the kind; nil for the original promotional offer's signature.
        public var audience: String? {
            switch self {
            case .promotionalOffer: nil
            case .promotionalOfferV2: "promotional-offer"
            case .introductoryOfferEligibility: "introductory-offer-eligibility"
            }
        }
    }

    /// The key that signs: the app's In-App Purchase key (its App Store Server API key), with its ids.
    public struct Key: Sendable {
        /// The issuer ID (a UUID), the JWS's `iss`.
        public var issuerID: String
        /// The key's id: the JWS's `kid`, and the second field of the original promotional offer's message.
        public var keyID: String
        /// The private key.
        public var privateKey: P256.Signing.PrivateKey

        /// The key of `pem` (PKCS#8, as App Store Connect issues it); throws ``ServiceError/Code/invalidArgument``
        /// when it is not a P-256 key.
        public init(issuerID: String, keyID: String, pem: String) throws {
            self.issuerID = issuerID
            self.keyID = keyID
            do {
                privateKey = try P256.Signing.PrivateKey(pemRepresentation: pem)
            } catch {
                throw ServiceError(.invalidArgument, "the app's In-App Purchase key is not a P-256 key in PEM")
            }
        }
    }

    /// The message the original StoreKit API's promotional offer signature is over.
    public static func promotionalOfferMessage(
        bundleID: String, keyID: String, productID: String, offerID: String, applicationUsername: String,
        nonce: String, timestamp: Int64
    ) -> String {
        [bundleID, keyID, productID, offerID, applicationUsername.lowercased(), nonce.lowercased(), String(timestamp)]
            .joined(separator: "\u{2063}")
    }

    /// The original StoreKit API's promotional offer signature: DER ECDSA over
    /// ``promotionalOfferMessage(bundleID:keyID:productID:offerID:applicationUsername:nonce:timestamp:)``, base64.
    public static func promotionalOffer(
        key: Key, bundleID: String, productID: String, offerID: String, applicationUsername: String, nonce: UUID,
        timestamp: Int64
    ) throws -> String {
        let message = promotionalOfferMessage(
            bundleID: bundleID, keyID: key.keyID, productID: productID, offerID: offerID,
            applicationUsername: applicationUsername, nonce: nonce.uuidString, timestamp: timestamp)
        return Data(try key.privateKey.signature(for: Data(message.utf8)).derRepresentation).base64EncodedString()
    }

    /// A StoreKit 2 signature: the JWS of `claims` (the feature's own) for `audience`, with `bid`, `iss`, `aud`,
    /// `iat` and `nonce` added, signed ES256 with `key`.
    public static func jws(
        key: Key, bundleID: String, audience: String, claims: JSONObject, issuedAt: Date, nonce: UUID
    ) throws -> String {
        var header = JSONObject(capacity: 3)
        header.append("alg", .string("ES256"))
        header.append("kid", .string(key.keyID))
        header.append("typ", .string("JWT"))
        var payload = claims
        payload.append("bid", .string(bundleID))
        payload.append("iss", .string(key.issuerID))
        payload.append("aud", .string(audience))
        payload.append("iat", .integer(Int64(issuedAt.timeIntervalSince1970.rounded(.down))))
        payload.append("nonce", .string(nonce.uuidString.lowercased()))
        let input =
            Base64URL.encode(JSONValue.object(header).encoded) + "."
            + Base64URL.encode(JSONValue.object(payload).encoded)
        let signature = try key.privateKey.signature(for: Data(input.utf8))
        return input + "." + Base64URL.encode(signature.rawRepresentation)
    }

    /// A StoreKit 2 promotional offer's claims: `productId`, `offerIdentifier`, and `transactionId` when given.
    public static func promotionalOfferV2Claims(productID: String, offerID: String, transactionID: String?)
        -> JSONObject
    {
        var claims = JSONObject(capacity: 8)
        claims.append("productId", .string(productID))
        claims.append("offerIdentifier", .string(offerID))
        if let transactionID { claims.append("transactionId", .string(transactionID)) }
        return claims
    }

    /// An introductory-offer eligibility's claims: `productId`, `allowIntroductoryOffer`, `transactionId`.
    public static func introductoryOfferEligibilityClaims(
        productID: String, allowIntroductoryOffer: Bool, transactionID: String
    ) -> JSONObject {
        var claims = JSONObject(capacity: 8)
        claims.append("productId", .string(productID))
        claims.append("allowIntroductoryOffer", .bool(allowIntroductoryOffer))
        claims.append("transactionId", .string(transactionID))
        return claims
    }
}
