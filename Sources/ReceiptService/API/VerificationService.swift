import Foundation
import Logging
import ReceiptCore

/// The decision from "a request of an authenticated caller" to an answer: decode the receipt, verify it locally or
/// with Apple as the app's mode says, apply the app's checks, and shape the answer as Apple's `verifyReceipt` would.
public struct VerificationService: Sendable {
    /// The local verifier (the server always has one: Apple's roots are built in); nil only where local
    /// verification is not wanted, as in tests of the Apple path.
    public let verifier: ReceiptVerifier?
    /// Apple's `verifyReceipt`; nil when the server runs without it.
    public let apple: (any AppleReceiptVerifying)?
    /// Apple's App Store Server API, for enriched answers and look-ups by id; nil when the server runs without it.
    public let storeKit: (any AppStoreServerLooking)?
    /// The Google Play Developer API, for Google Play purchases; nil when the server runs without it.
    public let googlePlay: (any GooglePlayLooking)?
    /// Enriched fields of the last moments, per app and customer.
    let serverFactsMemo: AnswerCache<ServerFacts>

    /// Creates the service.
    ///
    /// - Parameter factsLifetime: how long enriched fields made from Apple's answers are reused for the same app and
    ///   customer (at most as long as the client reuses Apple's answers; zero: never).
    public init(
        verifier: ReceiptVerifier?, apple: (any AppleReceiptVerifying)?, storeKit: (any AppStoreServerLooking)? = nil,
        googlePlay: (any GooglePlayLooking)? = nil, factsLifetime: Duration = .seconds(1)
    ) {
        self.googlePlay = googlePlay
        serverFactsMemo = AnswerCache(lifetime: factsLifetime)
        self.verifier = verifier
        self.apple = apple
        self.storeKit = storeKit
    }

    /// Verifies the request's receipt for `caller`; every outcome, failures included, is an answer.
    public func verify(_ request: VerificationRequest, for caller: Caller, logger: Logger) async -> VerificationOutcome
    {
        var outcome = await decide(request, for: caller, logger: logger)
        outcome.nonce = request.nonce
        return outcome
    }

    private func decide(_ request: VerificationRequest, for caller: Caller, logger: Logger) async
        -> VerificationOutcome
    {
        if let store = request.store {
            switch Store(name: store) {
            case .googlePlay?: return await verifyGooglePlay(request, for: caller, logger: logger)
            case .appStore?: break
            case nil:
                return Self.badRequest(
                    "store must be app_store or google_play", detail: "unknown store '\(store.prefix(40))'")
            }
        }
        guard let text = request.receipt, !text.isEmpty else {
            // An id without a receipt is an assertion about a receipt that is missing, unless a look-up is asked for.
            if request.lookup, request.transactionID != nil || request.appTransactionID != nil {
                return await lookUp(request, for: caller, logger: logger)
            }
            return .failure(VerificationStatus.malformed.rawValue, detail: "no receipt")
        }
        if request.lookup {
            var outcome = VerificationOutcome.failure(
                ResponseStatus.badRequest, detail: "lookup with a receipt")
            outcome.body["description"] = .string(
                "lookup=true asks for a look-up by transaction_id or app_transaction_id alone; send no receipt with it")
            return outcome
        }
        let input: ReceiptInput
        do {
            input = try ReceiptInput.decode(text)
        } catch let error as ReceiptError {
            return .failure(VerificationStatus(error).rawValue, detail: error.description)
        } catch {
            return .failure(ResponseStatus.internalError, detail: "receipt decoding: \(error)")
        }

        // Apple's verifyReceipt takes no StoreKit 2 JWS; `local-then-apple` starts locally and falls back below.
        var outcome: VerificationOutcome
        if caller.app.verificationMode == .apple, input.kind != .jws {
            outcome = await verifyWithApple(input, request: request, caller: caller, logger: logger)
        } else {
            switch verifyLocally(input, request: request, caller: caller) {
            case .verdict(var verdict, let verified?) where verdict.isValid && caller.app.enrichment == .on:
                await enrich(&verdict, verified: verified, request: request, caller: caller, logger: logger)
                outcome = verdict
            case .verdict(let verdict, _):
                outcome = verdict
            case .noVerdict(let reason) where caller.app.verificationMode == .localThenApple && input.kind != .jws:
                logger.debug("no local verdict; asking Apple", metadata: ["reason": "\(reason)"])
                outcome = await verifyWithApple(input, request: request, caller: caller, logger: logger)
            case .noVerdict(let reason):
                // Without anchors the server cannot judge: that is our failure, not the receipt's. A receipt whose
                // chain ends at no configured root is, for an app that trusts only local verification, not authentic.
                // (Apple's verifyReceipt takes no StoreKit 2 JWS, so those stay here in every mode.)
                outcome =
                    verifier == nil
                    ? .failure(ResponseStatus.internalError, source: .local, detail: reason)
                    : .failure(VerificationStatus.notAuthentic.rawValue, source: .local, detail: reason)
            }
        }
        if outcome.isValid {
            outcome.repairs = input.repairsValue
            outcome.assurance = input.kind == .jws ? .signedJWS : .signedReceipt
        }
        outcome.input = input.kind
        return outcome
    }

    /// What local verification concluded.
    private enum LocalResult {
        /// An answer: valid, malformed, not authentic, or failing the app's checks; with what was verified, if it was.
        case verdict(VerificationOutcome, VerifiedReceipt? = nil)
        /// No anchors, or the chain ends at no configured root (an iOS 6 receipt without its intermediate): the
        /// receipt could not be judged here, which `local-then-apple` hands to Apple.
        case noVerdict(String)
    }

    // MARK: Local

    private func verifyLocally(_ input: ReceiptInput, request: VerificationRequest, caller: Caller) -> LocalResult {
        guard let verifier else { return .noVerdict("no trust anchors are configured") }
        let verified: VerifiedReceipt
        do {
            verified = try verifier.verify(input, testData: caller.app.testDataTrust)
        } catch let error as ReceiptError where error.code == .untrustedRoot {
            return .noVerdict(error.description)
        } catch let error as ReceiptError {
            return .verdict(.failure(VerificationStatus(error).rawValue, source: .local, detail: error.description))
        } catch {
            return .verdict(
                .failure(ResponseStatus.internalError, source: .local, detail: "local verification: \(error)"))
        }
        let purchases = PurchaseTransaction.all(in: verified)
        if let rejection = TenantChecks.check(
            bundleID: verified.bundleID, environment: verified.environment, isTestData: verified.isTestData,
            transactions: purchases, request: request, app: caller.app)
        {
            return .verdict(
                .rejected(rejection, source: .local))
        }
        var body = verified.response
        if verified.kind == .unifiedReceipt {
            let latest = LatestReceiptInfo.subscriptions(
                in: verified.receipt, excludingOld: request.excludeOldTransactions)
            // `latest_receipt` is not echoed: Apple's is a newer receipt from its servers; ours would be the
            // client's own text back, 30 % of the answer for nothing.
            if !latest.isEmpty { body.append("latest_receipt_info", .array(latest)) }
        }
        var outcome = VerificationOutcome(status: 0, body: body, source: .local)
        outcome.purchases = purchases
        outcome.environment = verified.environment
        return .verdict(outcome, verified)
    }

    // MARK: Apple

    private func verifyWithApple(
        _ input: ReceiptInput, request: VerificationRequest, caller: Caller, logger: Logger
    ) async -> VerificationOutcome {
        guard let apple else {
            return .failure(ResponseStatus.internalError, source: .apple, detail: "no Apple client is configured")
        }
        let answer: AppleReceiptAnswer
        do {
            answer = try await apple.verifyReceipt(
                Data(input.bytes).base64EncodedString(), password: request.password ?? caller.sharedSecret,
                excludeOldTransactions: request.excludeOldTransactions, logger: logger)
        } catch let error as ServiceError {
            return .failure(ResponseStatus.internalError, source: .apple, retryable: true, detail: error.description)
        } catch {
            return .failure(ResponseStatus.internalError, source: .apple, retryable: true, detail: "Apple: \(error)")
        }
        var body = answer.body
        var purchases: [PurchaseTransaction] = []
        var environment: StoreEnvironment?
        if answer.status == 0 {
            let receipt = answer.body["receipt"]
            let bundleID = receipt?["bundle_id"]?.stringValue ?? receipt?["bid"]?.stringValue ?? ""
            let answered =
                answer.body["environment"]?.stringValue.flatMap(StoreEnvironment.init(rawValue:))
                ?? answer.answeredBy
            purchases = PurchaseTransaction.all(
                inAnswer: answer.body, answeredAt: Date().millisecondsSince1970)
            if let rejection = TenantChecks.check(
                bundleID: bundleID, environment: answered, isTestData: false, transactions: purchases,
                request: request, app: caller.app)
            {
                return .rejected(rejection, source: .apple)
            }
            environment = answered
        }
        // Apple's answer passes through unchanged; we add our fields after Apple's.
        body["description"] = .string(ResponseStatus.description(of: answer.status))
        if answer.isRetryable { body["retryable"] = .bool(true) }
        var outcome = VerificationOutcome(
            status: answer.status, body: body, source: .apple,
            detail: answer.status == 0 ? nil : "Apple answered \(answer.status)")
        outcome.purchases = purchases
        outcome.environment = environment
        return outcome
    }
}
