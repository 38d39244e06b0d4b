import Foundation
import ReceiptCore
import ReceiptService

/// `POST /api/offers/signature` (docs/app-store-server-api.md, "Offers"): an offer signed with the app's In-App
/// Purchase key (its App Store Server API key), for one of its bundle IDs. Authenticated and admitted as `/api` is,
/// metered as an endpoint of its own. The key is never in an answer or a log line.
extension VerificationEndpoint {
    /// The description of the answer.
    static let offerDescription = "Offer signed"

    /// Signs the request's offer; a 400 names what is missing or wrong.
    func signOffer(_ request: VerificationRequest, for caller: Caller, now: Date = Date()) throws
        -> VerificationOutcome
    {
        func refuse(_ reason: String) -> HTTPFailure { .badRequest(saying: reason) }
        let kinds = OfferSignature.Kind.allCases.map(\.rawValue).joined(separator: ", ")
        guard let name = request.offerKind, !name.isEmpty else { throw refuse("kind is required: one of \(kinds)") }
        guard let kind = OfferSignature.Kind(rawValue: name) else { throw refuse("kind must be one of \(kinds)") }
        guard request.nonce == nil else {
            throw refuse("nonce is not taken here: the server makes a new nonce for every signature")
        }
        let bundleID = try Self.offerBundleID(request.bundleID, of: caller.app).get()
        let productID = try Self.required(request.productID, "product_id")
        if let catalog = caller.app.productCatalog, !catalog.contains(productID) {
            throw refuse("product_id is not in the app's catalog")
        }
        guard let credentials = caller.serverAPICredentials(bundleID: bundleID) else {
            throw refuse(
                "the app has no In-App Purchase key: set its App Store Server API key (app update --apple-issuer-id "
                    + "--apple-key-id --apple-private-key-file)")
        }
        let key: OfferSignature.Key
        do {
            key = try OfferSignature.Key(
                issuerID: credentials.issuerID, keyID: credentials.keyID, pem: credentials.privateKeyPEM)
        } catch let error as ServiceError {
            throw refuse(error.reason)
        }
        let nonce = UUID()
        var body = JSONObject(capacity: 8)
        body.append("status", .integer(0))
        body.append("description", .string(Self.offerDescription))
        body.append("kind", .string(kind.rawValue))
        body.append("bundle_id", .string(bundleID))
        switch kind {
        case .promotionalOffer:
            let offerID = try Self.required(request.offerID, "offer_id")
            let timestamp = now.millisecondsSince1970
            let signature = try OfferSignature.promotionalOffer(
                key: key, bundleID: bundleID, productID: productID, offerID: offerID,
                applicationUsername: request.applicationUsername ?? "", nonce: nonce, timestamp: timestamp)
            body.append("key_id", .string(key.keyID))
            body.append("nonce", .string(nonce.uuidString.lowercased()))
            body.append("timestamp", .integer(timestamp))
            body.append("signature", .string(signature))
        case .promotionalOfferV2:
            let claims = OfferSignature.promotionalOfferV2Claims(
                productID: productID, offerID: try Self.required(request.offerID, "offer_id"),
                transactionID: request.transactionID.flatMap { $0.isEmpty ? nil : $0 })
            body.append(
                "signature",
                .string(
                    try OfferSignature.jws(
                        key: key, bundleID: bundleID, audience: kind.audience ?? "", claims: claims, issuedAt: now,
                        nonce: nonce)))
        case .introductoryOfferEligibility:
            guard let allow = request.allowIntroductoryOffer else {
                throw refuse("allow_introductory_offer is required: true or false")
            }
            let claims = OfferSignature.introductoryOfferEligibilityClaims(
                productID: productID, allowIntroductoryOffer: allow,
                transactionID: try Self.required(request.transactionID, "transaction_id"))
            body.append(
                "signature",
                .string(
                    try OfferSignature.jws(
                        key: key, bundleID: bundleID, audience: kind.audience ?? "", claims: claims, issuedAt: now,
                        nonce: nonce)))
        }
        return VerificationOutcome(status: 0, body: body, source: .local)
    }

    /// A field a route needs: its value, or a 400 saying `NAME is required`.
    static func required(_ value: String?, _ name: String) throws -> String {
        guard let value, !value.isEmpty else { throw HTTPFailure.badRequest(saying: "\(name) is required") }
        return value
    }

    /// The bundle ID an offer is signed for: the request's `bundle_id`, which must be the app's, or the app's only
    /// one.
    static func offerBundleID(_ asked: String?, of app: App) -> Result<String, HTTPFailure> {
        let owned = app.bundleIDs.map(\.value)
        if let asked, !asked.isEmpty {
            guard owned.contains(asked) else {
                return .failure(.badRequest(saying: "bundle_id is not one of the app's"))
            }
            return .success(asked)
        }
        guard owned.count == 1 else {
            return .failure(.badRequest(saying: "bundle_id is required: the app has \(owned.count) bundle IDs"))
        }
        return .success(owned[0])
    }
}
