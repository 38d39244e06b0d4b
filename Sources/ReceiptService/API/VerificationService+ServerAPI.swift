import Foundation
import Logging
import ReceiptCore

/// What the App Store Server API adds to `/api`: enriched answers (Apple's current transaction history and renewal
/// state beside what the input proves) and look-ups by id alone.
extension VerificationService {
    // MARK: Enrichment

    /// Fills a valid local answer's `latest_receipt_info` from the customer's transaction history and its
    /// `pending_renewal_info` from the subscription statuses, says `enrichment: "applied"`, and hands every
    /// transaction Apple returned to the ledger (revocations included). When Apple cannot be asked or does not
    /// answer in time, the answer from the input alone stays, with `enrichment: "unavailable"` and `retryable: true`;
    /// when Apple refuses the app's credentials, with `enrichment: "refused"` (a retry cannot help).
    func enrich(
        _ outcome: inout VerificationOutcome, verified: VerifiedReceipt, request: VerificationRequest, caller: Caller,
        logger: Logger
    ) async {
        // The customer's history is asked by any of their ids: a transaction's original, or the app transaction's.
        let id: String? =
            switch verified.kind {
            case .appTransaction: verified.receipt["appTransactionId"]?.stringValue
            default: outcome.purchases.first?.originalTransactionID
            }
        guard let id else { return }  // no purchase to ask about: nothing to add
        guard let storeKit, let credentials = caller.serverAPICredentials(bundleID: verified.bundleID) else {
            logger.debug("no App Store Server API client or credentials; answering from the input alone")
            outcome.body["enrichment"] = .string("unavailable")
            outcome.body["retryable"] = .bool(true)
            return
        }
        do {
            let facts = try await serverFacts(
                of: id, storeKit: storeKit, credentials: credentials, excludingOld: request.excludeOldTransactions,
                withRenewals: true, app: caller.app, environment: verified.environment)
            outcome.body["latest_receipt_info"] = .array(facts.latestReceiptInfo)
            if let renewals = facts.pendingRenewalInfo { outcome.body["pending_renewal_info"] = .array(renewals) }
            outcome.renewals = facts.renewals
            outcome.body["enrichment"] = .string("applied")
            // The input's own user stays the user of everything merged (its claims are made for it).
            outcome.inputUser = outcome.inputUser ?? Ledger.user(statedBy: outcome.purchases)
            let merged = Self.merging(facts.purchases, into: outcome.purchases)
            // Apple's history is the Apple ID's, which a device shared by two of the app's accounts holds both of
            // (money review M13): what names another account than the input (or, where the stores' ids are the
            // app's, than the request's user) is recorded, never claimed for the presenter.
            var own = Set(outcome.purchases.compactMap(\.appAccountToken))
            if caller.app.storeUserIDs, let user = request.appUserID, !user.isEmpty { own.insert(user) }
            let others = { (purchase: PurchaseTransaction) in
                !own.isEmpty && purchase.appAccountToken.map { !own.contains($0) } == true
            }
            outcome.purchases = merged.filter { !others($0) }
            outcome.otherAccounts = merged.filter(others)
        } catch let error as AppStoreServerAPIError where error.code == .credentials {
            // Not a moment's trouble: until the app's credentials are fixed, every answer is from the input alone.
            logger.warning(
                "Apple refused the app's App Store Server API credentials; answering from the input alone",
                metadata: ["app.token": "\(caller.app.token)"])
            outcome.body["enrichment"] = .string("refused")
        } catch {
            logger.debug("enrichment unavailable", metadata: ["error": "\(error)"])
            outcome.body["enrichment"] = .string("unavailable")
            outcome.body["retryable"] = .bool(true)
        }
    }

    /// What Apple's servers say of a customer, in verifyReceipt's shape.
    struct ServerFacts: Sendable {
        var latestReceiptInfo: [JSONValue]
        /// Nil when the customer has no auto-renewable subscription (statuses are then not asked).
        var pendingRenewalInfo: [JSONValue]?
        /// The verified renewal infos `pendingRenewalInfo` was made from.
        var renewals: [JSONObject] = []
        var purchases: [PurchaseTransaction]
        var environment: StoreEnvironment
    }

    /// What Apple says of the customer with `id`, kept a moment for the app (``AnswerCache``): the app's id and last
    /// change name its credentials and the settings that limit what is kept. Only the app's own is kept (its bundle
    /// IDs; with `environment`, an enriched input's, only that environment's and the app's catalog's), so nothing
    /// of another app, environment or product reaches the answer or the ledger.
    private func serverFacts(
        of id: String, storeKit: any AppStoreServerLooking, credentials: AppStoreServerAPICredentials,
        excludingOld: Bool, withRenewals: Bool, app: App, environment: StoreEnvironment? = nil
    ) async throws -> ServerFacts {
        let key =
            "\(app.id)/\(app.updatedAt.timeIntervalSince1970)/\(credentials.bundleID)/\(id)/\(excludingOld)/\(withRenewals)/\(environment?.rawValue ?? "")"
        return try await serverFactsMemo.value(key) {
            try await fetchServerFacts(
                of: id, storeKit: storeKit, credentials: credentials, excludingOld: excludingOld,
                withRenewals: withRenewals, app: app, environment: environment)
        }.value
    }

    private func fetchServerFacts(
        of id: String, storeKit: any AppStoreServerLooking, credentials: AppStoreServerAPICredentials,
        excludingOld: Bool, withRenewals: Bool, app: App, environment: StoreEnvironment?
    ) async throws -> ServerFacts {
        // An enriched input's environment is asked alone (Xcode's test data: Apple's servers never saw it, but a test
        // server stands in for both); a look-up by app transaction id, production then the sandbox.
        let asked = environment.flatMap { $0 == .xcode ? nil : $0 }
        var history = try await storeKit.history(of: id, in: asked, credentials: credentials, whole: false)
        let bundleIDs = Set(app.bundleIDs.map(\.value))
        history.transactions = history.transactions.filter { transaction in
            guard bundleIDs.contains(transaction.bundleID) else { return false }
            guard let environment else { return true }
            return transaction.environment == environment
                && (app.productCatalog.map { catalog in
                    PurchaseTransaction.all(in: transaction).allSatisfy { catalog.contains($0.productID) }
                } ?? true)
        }
        let payloads = history.transactions.map(\.receipt)
        var facts = ServerFacts(
            latestReceiptInfo: ServerAPIFields.latestReceiptInfo(payloads, excludingOld: excludingOld),
            purchases: history.transactions.flatMap(PurchaseTransaction.all(in:)), environment: history.environment)
        if withRenewals, payloads.contains(where: { $0["type"]?.stringValue == "Auto-Renewable Subscription" }) {
            let renewals = try await storeKit.renewals(of: id, credentials: credentials)
            facts.pendingRenewalInfo = ServerAPIFields.pendingRenewalInfo(renewals.map(\.receipt))
            // Only the environment asked about (the input's; a look-up's, Apple's) is written to the ledger.
            let wanted = environment ?? history.environment
            facts.renewals = renewals.filter { $0.environment == wanted }.map(\.receipt)
        }
        return facts
    }

    /// The input's transactions with Apple's in their place (Apple's carry revocations the input may predate), and
    /// Apple's others after them.
    static func merging(_ apple: [PurchaseTransaction], into input: [PurchaseTransaction]) -> [PurchaseTransaction] {
        var byID: [String: PurchaseTransaction] = [:]
        for transaction in apple { byID[transaction.transactionID] = transaction }
        var merged = input.map { byID.removeValue(forKey: $0.transactionID) ?? $0 }
        merged += apple.filter { byID[$0.transactionID] != nil }
        return merged
    }

    // MARK: Look-ups by id

    /// A `transaction_id` or `app_transaction_id` without a receipt, resolved through the App Store Server API with
    /// the app's credentials (as its first bundle ID). The answer says `assurance: "id-lookup"`: Apple vouches for
    /// the purchase, but an id alone does not prove the caller holds it, and an app can refuse such look-ups.
    func lookUp(_ request: VerificationRequest, for caller: Caller, logger: Logger) async -> VerificationOutcome {
        if request.transactionID != nil, request.appTransactionID != nil {
            var outcome = VerificationOutcome.failure(
                ResponseStatus.badRequest, detail: "both transaction_id and app_transaction_id; send one")
            outcome.body["description"] = .string("Send transaction_id or app_transaction_id, not both")
            return outcome
        }
        guard caller.app.idLookups == .allow else {
            return .rejected(
                source: .none, reason: "the app refuses look-ups by id alone",
                description: "This app does not accept a transaction id alone; send the receipt or signed transaction")
        }
        guard let storeKit, let bundleID = caller.app.bundleIDs.first?.value,
            let credentials = caller.serverAPICredentials(bundleID: bundleID)
        else {
            return .rejected(
                source: .none, reason: "a look-up by id needs App Store Server API credentials",
                description: "Look-ups by id need the app's App Store Server API credentials")
        }
        var outcome: VerificationOutcome
        do {
            if let transactionID = request.transactionID {
                outcome = try await lookUp(
                    transaction: transactionID, storeKit: storeKit, credentials: credentials, request: request,
                    caller: caller, logger: logger)
            } else {
                outcome = try await lookUp(
                    appTransaction: request.appTransactionID ?? "", storeKit: storeKit, credentials: credentials,
                    request: request, caller: caller)
            }
        } catch let error as AppStoreServerAPIError {
            return Self.outcome(for: error)
        } catch {
            return .failure(ResponseStatus.internalError, source: .apple, retryable: true, detail: "\(error)")
        }
        if outcome.isValid { outcome.assurance = .idLookup }
        return outcome
    }

    /// Get Transaction Info, answered as a signed transaction would be, enriched when the app asks for it.
    private func lookUp(
        transaction id: String, storeKit: any AppStoreServerLooking, credentials: AppStoreServerAPICredentials,
        request: VerificationRequest, caller: Caller, logger: Logger
    ) async throws -> VerificationOutcome {
        let verified = try await storeKit.transaction(id, credentials: credentials)
        let purchases = PurchaseTransaction.all(in: verified)
        if let rejection = TenantChecks.check(
            bundleID: verified.bundleID, environment: verified.environment, isTestData: verified.isTestData,
            transactions: purchases, request: request, app: caller.app)
        {
            return .rejected(rejection, source: .apple)
        }
        var outcome = VerificationOutcome(status: 0, body: verified.response, source: .apple)
        outcome.purchases = purchases
        outcome.environment = verified.environment
        if caller.app.enrichment == .on {
            await enrich(&outcome, verified: verified, request: request, caller: caller, logger: logger)
        }
        return outcome
    }

    /// Get Transaction History by an app transaction id: the customer's purchases in `latest_receipt_info` (and
    /// `pending_renewal_info` when the app enriches its answers).
    private func lookUp(
        appTransaction id: String, storeKit: any AppStoreServerLooking, credentials: AppStoreServerAPICredentials,
        request: VerificationRequest, caller: Caller
    ) async throws -> VerificationOutcome {
        let facts = try await serverFacts(
            of: id, storeKit: storeKit, credentials: credentials, excludingOld: request.excludeOldTransactions,
            withRenewals: caller.app.enrichment == .on, app: caller.app)
        if let rejection = TenantChecks.check(
            bundleID: credentials.bundleID, environment: facts.environment, isTestData: false,
            transactions: facts.purchases, request: request, app: caller.app)
        {
            return .rejected(rejection, source: .apple)
        }
        var receipt = JSONObject()
        receipt.append("bundle_id", .string(credentials.bundleID))
        receipt.append("app_transaction_id", .string(id))
        var body = JSONObject()
        body.append("status", .integer(0))
        body.append("description", .string(VerificationStatus.valid.description))
        body.append("environment", .string(facts.environment.rawValue))
        body.append("kind", .string("transaction_history"))
        body.append("receipt", .object(receipt))
        body.append("latest_receipt_info", .array(facts.latestReceiptInfo))
        if let renewals = facts.pendingRenewalInfo { body.append("pending_renewal_info", .array(renewals)) }
        var outcome = VerificationOutcome(status: 0, body: body, source: .apple)
        outcome.purchases = facts.purchases
        outcome.renewals = facts.renewals
        outcome.environment = facts.environment
        return outcome
    }

    /// The answer when the App Store Server API gave none: Apple does not know the id (21010, as verifyReceipt
    /// answered for a purchase it could not authorize), a malformed id (21002), the app's credentials refused
    /// (500, said plainly), or Apple out of reach (500, retryable).
    static func outcome(for error: AppStoreServerAPIError) -> VerificationOutcome {
        switch error.code {
        case .notFound:
            return .failure(21_010, source: .apple, detail: error.reason)
        case .refused:
            return .failure(VerificationStatus.malformed.rawValue, source: .apple, detail: error.reason)
        case .credentials:
            var outcome = VerificationOutcome.failure(
                ResponseStatus.internalError, source: .apple, detail: error.reason)
            outcome.body["description"] = .string(
                "Apple refused the app's App Store Server API credentials; check its issuer ID, key ID and key")
            return outcome
        case .unavailable, .rateLimited, .invalidResponse:
            return .failure(ResponseStatus.internalError, source: .apple, retryable: true, detail: error.reason)
        }
    }
}
