import Foundation
import Logging
import ReceiptCore

extension Ledger {
    /// The description of the 400 for a request without a user, to an app that requires one.
    public static let userRequired =
        "This app requires app_user_id, the app's own id of the user presenting the purchase"

    /// The user an input's purchases name themselves: the `appAccountToken` of a lone StoreKit 2 transaction.
    public static func user(statedBy purchases: [PurchaseTransaction]) -> String? {
        purchases.count == 1 ? purchases[0].appAccountToken : nil
    }

    /// How many purchases back a chain of Google Play replacements is followed through purchases the ledger never
    /// recorded: each is one read of Google's, at most this many per answer.
    static let linkedHops = 4

    /// `purchases` with the earlier tokens of each linked chain the ledger does not hold (money review M16): A→B→C
    /// presented as C, with B never recorded, ends A as B would have. The chain is read back from Google (`read`)
    /// until a token the ledger holds (whose recording ended the ones before it), the chain's start, or
    /// ``linkedHops``.
    func followingLinks(
        _ purchases: [PurchaseTransaction], app: App, read: @Sendable (String) async -> String?
    ) async throws -> [PurchaseTransaction] {
        var chains: [String: [String]] = [:]
        var purchases = purchases
        for index in purchases.indices {
            guard let linked = purchases[index].linkedPurchaseToken else { continue }
            if let chain = chains[linked] {
                purchases[index].earlierLinkedPurchaseTokens = chain
                continue
            }
            var seen = Set([linked] + [purchases[index].purchaseToken].compactMap { $0 })
            var token = linked
            var chain: [String] = []
            while chain.count < Self.linkedHops,
                try await entries(LedgerQuery(appID: app.id, purchaseToken: token, limit: 1)).isEmpty,
                let earlier = await read(token), seen.insert(earlier).inserted
            {
                chain.append(earlier)
                token = earlier
            }
            chains[linked] = chain
            purchases[index].earlierLinkedPurchaseTokens = chain
        }
        return purchases
    }

    /// Completes a verified answer with what to deliver (docs/api.md, "Transactions: what to deliver"): records its
    /// purchases in the app's ledger and adds the `transactions` array and the subscriptions' statuses, or turns the
    /// answer into a 403 when a purchase belongs to another user and the app refuses such requests. An answer that is
    /// not valid is left as it is.
    public func answer(
        _ outcome: inout VerificationOutcome, request: VerificationRequest, caller: Caller, requestID: String,
        logger: Logger
    ) async throws {
        guard outcome.isValid, let environment = outcome.environment else { return }
        // The user: the request's `app_user_id`; else, only where the app says the stores' user ids are its own
        // (money review M1), the id the input states (a StoreKit 2 transaction's `appAccountToken` as the input stated
        // it, before any enrichment merged Apple's history; Google's `obfuscatedExternalAccountId`). A store-side id is
        // a UUID or a hash by the stores' advice: taken for the user, it would claim the purchase away from the
        // backend's own user, who would then never get it.
        let storeUser = caller.app.storeUserIDs ? outcome.inputUser ?? Self.user(statedBy: outcome.purchases) : nil
        let user = request.appUserID.flatMap { $0.isEmpty ? nil : $0 } ?? storeUser
        // Without a user no claim is made or checked: an app that always knows its user says so, and a request
        // without one (a code path that forgot it, a client-controlled field left out) is refused before anything is
        // recorded.
        if user == nil, caller.app.requiresUser, caller.app.claimsPolicy != .off, !outcome.purchases.isEmpty {
            var refused = VerificationOutcome.failure(
                ResponseStatus.badRequest, source: outcome.source, detail: "no app_user_id, which the app requires")
            refused.body["description"] = .string(Self.userRequired)
            refused.input = outcome.input
            refused.nonce = outcome.nonce
            outcome = refused
            return
        }
        outcome.user = user
        if let read = outcome.earlierLinkedPurchaseToken {
            outcome.purchases = try await followingLinks(outcome.purchases, app: caller.app, read: read)
        }
        let now = Date()
        let stated =
            outcome.statedStatuses
            + outcome.renewals.compactMap { renewal in
                SubscriptionStatus(
                    renewal: renewal, purchases: outcome.purchases, appID: caller.app.id, environment: environment,
                    now: now)
            }
        switch try await decide(
            outcome.purchases, store: outcome.store, environment: environment, user: user, app: caller.app,
            requestID: requestID, statuses: stated, now: now)
        {
        case .deliver(let entries, let recorded):
            outcome.transactions = entries
            outcome.ledgerRecorded = recorded
            if !outcome.otherAccounts.isEmpty {
                try await record(
                    outcome.otherAccounts, store: outcome.store, environment: environment, app: caller.app,
                    requestID: requestID, now: now)
            }
            guard let statuses else { return }
            // Best effort: the ledger has committed (and may have marked a delivery made by this answer), so a
            // status that cannot be read leaves `subscriptions` out rather than turn the answer into a 503.
            var seen = Set<String>()
            let originals = outcome.purchases.map(\.originalTransactionID).filter { seen.insert($0).inserted }
            do {
                // A status this answer's recording wrote is read back from the store, not from a view that may not
                // have heard of the write yet.
                let known = try await statuses.statuses(
                    appID: caller.app.id, originals: originals, environment: environment,
                    fresh: recorded && !stated.isEmpty)
                if !known.isEmpty { outcome.subscriptions = known.map { .object($0.json) } }
            } catch {
                logger.warning(
                    "subscription statuses could not be read; answered without them",
                    metadata: ["request_id": "\(requestID)", "error": "\(error)"])
            }
        case .refused:
            var refused = VerificationOutcome.rejected(
                source: outcome.source, reason: "a purchase is claimed by another user of the app",
                description: Ledger.claimedByOtherUser)
            refused.input = outcome.input
            refused.nonce = outcome.nonce
            outcome = refused
        }
    }
}
