import Foundation
import Logging
import ReceiptCore

/// Google Play purchases (`store=google_play`): the request names the package, product and purchase token (or gives
/// the client's `Purchase.getOriginalJson()`), the app's checks run before Google is asked, and the Google Play
/// Developer API's resource decides (docs/google-play.md, "Status codes").
extension VerificationService {
    /// The description of the 202 of a purchase awaiting payment.
    public static let pendingPurchase =
        "The purchase is pending: the customer has not paid yet; deliver nothing until an answer or webhook says it is purchased"
    /// The description of a 403 for a purchase Google says was cancelled before it was paid.
    static let cancelledPurchase = "Google Play says this purchase was cancelled before it was paid"
    /// The description of a 403 for a token Google does not know in the package.
    static let unknownPurchase = "Google Play does not know this purchase token in this package"
    /// The description of a 403 for a package that is not the app's.
    static let foreignPackage = "package_name is not one of the app's Android package names"

    func verifyGooglePlay(_ request: VerificationRequest, for caller: Caller, logger: Logger) async
        -> VerificationOutcome
    {
        let named: (package: String, product: String?, token: String)
        switch Self.googlePlayNames(request) {
        case .success(let names): named = names
        case .failure(let refusal): return refusal.outcome
        }
        let app = caller.app
        guard app.packageNames.contains(named.package) else {
            return .rejected(
                source: .none, reason: "package '\(named.package)' is not the app's", description: Self.foreignPackage)
        }
        // The client's purchase JSON, signed by the app's Play licensing key where one is set.
        if let key = app.googleLicenseKey, let purchase = request.purchase {
            guard let signature = request.purchaseSignature else {
                return Self.badRequest(
                    "signature (Purchase.getSignature()) is required with purchase: the app has a Play licensing key",
                    detail: "no signature")
            }
            guard GoogleLicenseKey.verifies(purchase: purchase, signature: signature, key: key) else {
                return .rejected(
                    source: .none, reason: "the purchase's signature does not verify",
                    description: "The purchase's signature does not verify with the app's Play licensing key")
            }
        }
        // A product outside the app's catalog is refused before anything else is asked of it.
        if let catalog = app.productCatalog, let product = named.product, !catalog.contains(product) {
            return .rejected(
                source: .none, reason: "product '\(product)' is not in the app's catalog",
                description: TenantChecks.productNotInCatalog)
        }
        // The kind: the catalog's, else the request's.
        let catalogKind = named.product.flatMap { id in app.catalog?.first { $0.id == id }?.kind }
        let kind: GooglePlayPurchase.Kind
        switch (catalogKind, request.purchaseType) {
        case (.autoRenewable?, _), (.nonRenewing?, "subscription"), (nil, "subscription"): kind = .subscription
        case (.consumable?, _), (.nonConsumable?, _), (.nonRenewing?, _), (nil, "product"): kind = .product
        case (nil, nil):
            return Self.badRequest(
                "purchase_type (product or subscription) is required: the app's catalog does not name product_id",
                detail: "no purchase type")
        case (nil, let other?):
            return Self.badRequest(
                "purchase_type must be product or subscription", detail: "purchase type '\(other.prefix(40))'")
        }
        guard kind == .subscription || named.product != nil else {
            return Self.badRequest("product_id is required for a one-time product", detail: "no product_id")
        }
        guard let account = caller.googleAccount else {
            return .rejected(
                source: .none, reason: "the app has no Google service account key",
                description:
                    "The app has no Google Play service account key: set one on the account screen or with app update --google-service-account-file"
            )
        }
        guard let googlePlay else {
            return .failure(
                ResponseStatus.internalError, detail: "the server runs without the Google Play Developer API")
        }
        let answer: GooglePlayAnswer
        do {
            answer =
                switch kind {
                case .product:
                    try await googlePlay.productPurchase(
                        packageName: named.package, productID: named.product ?? "", token: named.token,
                        account: account)
                case .subscription:
                    try await googlePlay.subscriptionPurchase(
                        packageName: named.package, token: named.token, account: account)
                }
        } catch let error as GooglePlayError {
            return Self.outcome(for: error)
        } catch {
            return .failure(ResponseStatus.internalError, retryable: true, detail: "Google Play: \(error)")
        }
        let resource = answer.resource
        let purchase: GooglePlayPurchase
        do {
            purchase =
                switch kind {
                case .product:
                    try GooglePlayPurchase.product(
                        resource, productID: named.product ?? "", token: named.token, packageName: named.package)
                case .subscription:
                    try GooglePlayPurchase.subscription(resource, token: named.token, packageName: named.package)
                }
        } catch let error as GooglePlayError {
            return Self.outcome(for: error)
        } catch {
            return .failure(ResponseStatus.internalError, detail: "Google Play: \(error)")
        }
        switch purchase.state {
        case .pending:
            var outcome = VerificationOutcome.failure(ResponseStatus.pending, source: .googlePlay, detail: "pending")
            outcome.body["description"] = .string(Self.pendingPurchase)
            outcome.body["store"] = .string(Store.googlePlay.rawValue)
            outcome.body["google_play"] = .object(resource)
            return outcome
        case .cancelled:
            return .rejected(
                source: .googlePlay, reason: "cancelled before payment", description: Self.cancelledPurchase)
        case .purchased:
            break
        }
        guard app.allowedEnvironments.contains(purchase.environment) else {
            var outcome = VerificationOutcome.rejected(
                source: .googlePlay,
                reason: "environment \(purchase.environment.rawValue) is not allowed for the app")
            outcome.disallowedEnvironment = purchase.environment
            return outcome
        }
        if let catalog = app.productCatalog,
            let outside = purchase.transactions.first(where: { !catalog.contains($0.productID) })
        {
            return .rejected(
                source: .googlePlay, reason: "product '\(outside.productID)' is not in the app's catalog",
                description: TenantChecks.productNotInCatalog)
        }
        if let product = named.product, !purchase.transactions.contains(where: { $0.productID == product }) {
            return .rejected(source: .googlePlay, reason: "the asserted product is not the purchase's")
        }
        let now = Date()
        var body = JSONObject(capacity: 5)
        body.append("status", .integer(0))
        body.append("description", .string("Google Play confirms the purchase"))
        body.append("environment", .string(purchase.environment.rawValue))
        body.append("store", .string(Store.googlePlay.rawValue))
        body.append("google_play", .object(resource))
        var outcome = VerificationOutcome(status: 0, body: body, source: .googlePlay)
        outcome.store = .googlePlay
        outcome.environment = purchase.environment
        outcome.purchases = purchase.transactions
        outcome.inputUser = purchase.user
        outcome.assurance = .playDeveloperAPI
        outcome.statedStatuses = [
            // As of Google's answer, which may be a kept one: never dated after a fresher answer read since.
            purchase.status(appID: app.id, asOf: answer.fetchedAt.millisecondsSince1970, now: now)
        ].compactMap { $0 }
        if kind == .subscription, purchase.transactions.contains(where: { $0.linkedPurchaseToken != nil }) {
            let package = named.package
            outcome.earlierLinkedPurchaseToken = { token in
                // Best effort: a link that cannot be read ends the chain where the ledger's knowledge ends.
                let earlier = try? await googlePlay.subscriptionPurchase(
                    packageName: package, token: token, account: account)
                return earlier?.resource["linkedPurchaseToken"]?.stringValue
            }
        }
        return outcome
    }

    /// A request refused before Google is asked.
    struct GooglePlayRefusal: Error {
        let outcome: VerificationOutcome
    }

    /// The package, product and token the request names, from its fields or the client's `purchase` JSON (whose
    /// values must agree with the fields given beside it).
    static func googlePlayNames(_ request: VerificationRequest)
        -> Result<(package: String, product: String?, token: String), GooglePlayRefusal>
    {
        var package = request.packageName
        var product = request.productID
        var token = request.purchaseToken
        if let text = request.purchase {
            guard case .object(let json)? = try? JSONParser.parse(Array(text.utf8), maximumDepth: 4) else {
                return .failure(
                    GooglePlayRefusal(
                        outcome: badRequest(
                            "purchase is not the JSON of a Google Play purchase", detail: "purchase not JSON")))
            }
            for (field, key) in [
                (\VerificationRequest.packageName, "packageName"), (\.productID, "productId"),
                (\.purchaseToken, "purchaseToken"),
            ] {
                guard let stated = json[key]?.stringValue else { continue }
                if let given = request[keyPath: field], given != stated {
                    return .failure(
                        GooglePlayRefusal(
                            outcome: badRequest(
                                "purchase names another \(key) than the request's field", detail: "purchase disagrees"))
                    )
                }
                switch key {
                case "packageName": package = stated
                case "productId": product = stated
                default: token = stated
                }
            }
        }
        guard let package, !package.isEmpty else {
            return .failure(
                GooglePlayRefusal(
                    outcome: badRequest(
                        "package_name is required for a Google Play purchase", detail: "no package_name")))
        }
        guard GoogleServiceAccountKey.isPackageName(package) else {
            return .failure(
                GooglePlayRefusal(
                    outcome: badRequest("package_name is not an Android package name", detail: "malformed package_name")
                ))
        }
        guard let token, !token.isEmpty else {
            return .failure(
                GooglePlayRefusal(
                    outcome: badRequest(
                        "purchase_token is required for a Google Play purchase", detail: "no purchase_token")))
        }
        guard GooglePlayPurchase.isPurchaseToken(token) else {
            return .failure(
                GooglePlayRefusal(
                    outcome: badRequest(
                        "purchase_token is not a Google Play purchase token", detail: "malformed purchase_token")))
        }
        if let product, !GooglePlayPurchase.isProductID(product) {
            return .failure(
                GooglePlayRefusal(
                    outcome: badRequest("product_id is not a Google Play product id", detail: "malformed product_id")))
        }
        return .success((package, product.flatMap { $0.isEmpty ? nil : $0 }, token))
    }

    /// A 400 whose description says what to fix.
    static func badRequest(_ description: String, detail: String) -> VerificationOutcome {
        var outcome = VerificationOutcome.failure(ResponseStatus.badRequest, detail: detail)
        outcome.body["description"] = .string(description)
        return outcome
    }

    /// The answer when Google gave none.
    static func outcome(for error: GooglePlayError) -> VerificationOutcome {
        var outcome: VerificationOutcome
        switch error.code {
        case .notFound:
            return .rejected(source: .googlePlay, reason: error.reason, description: unknownPurchase)
        case .credentials:
            outcome = .failure(ResponseStatus.internalError, source: .googlePlay, detail: error.reason)
            outcome.body["description"] = .string(
                "Google refused the app's service account key: replace it on the account screen")
        case .permission:
            outcome = .failure(ResponseStatus.internalError, source: .googlePlay, detail: error.reason)
            outcome.body["description"] = .string(
                "The app's service account may not read this package's purchases: grant it access in Play Console")
        case .rateLimited, .unavailable:
            outcome = .failure(ResponseStatus.internalError, source: .googlePlay, retryable: true, detail: error.reason)
            outcome.body["description"] = .string("Google Play could not be asked right now; try again")
        case .invalidResponse:
            outcome = .failure(ResponseStatus.internalError, source: .googlePlay, retryable: true, detail: error.reason)
        }
        return outcome
    }
}
