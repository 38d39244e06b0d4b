import Foundation
import ReceiptCore

/// Apple's actions on a customer (docs/app-store-server-api.md, "Actions on a customer"), for the API, the CLI and
/// the account screen alike: set the app account token of a purchase, extend one customer's renewal date or every
/// active subscriber's, look up the customer's app transaction. Each is asked with the app's App Store Server API
/// credentials, paced by the app's request budget (the client's), audited under the service's actor, and reflected in
/// the ledger and entitlements once Apple confirms it: by Apple's signed statements read anew after the action, never
/// by Apple's unsigned answer alone.
public struct AppleActions: Sendable {
    let storeKit: any AppStoreServerLooking
    let tenancy: TenancyService
    /// Who asks, as the extension records say it (`api`, `cli`, `account EMAIL`).
    let requester: String

    /// Actions through `storeKit`, recorded in `tenancy`'s store and audited as its actor; `requester` names the
    /// surface on the extension records.
    public init(storeKit: any AppStoreServerLooking, tenancy: TenancyService, requester: String) {
        self.storeKit = storeKit
        self.tenancy = tenancy
        self.requester = requester
    }

    var store: any DataStore { tenancy.store }

    // MARK: Set App Account Token

    /// What setting a token did.
    public struct TokenSet: Sendable {
        /// The environment Apple was asked in.
        public var environment: StoreEnvironment
        /// Whether the ledger's original transaction is now claimed by the token (the app's claims and store user ids
        /// on, and no other user held it).
        public var claimed: Bool
    }

    /// Has Apple put `token` on every transaction of `originalTransactionID` (a claim made after the purchase), then
    /// claims it in the ledger for the token where the app checks claims, takes the stores' user ids for its own
    /// (`store_user_ids`) and nobody holds it. Refused before Apple is asked for a family-shared purchase (Apple
    /// refuses them, 4000185) and for one another user holds.
    public func setAppAccountToken(
        app: App, originalTransactionID: String, token: UUID, environment asked: StoreEnvironment?
    ) async throws -> TokenSet {
        let (credentials, rows, environment, apple) = try await purchase(
            originalTransactionID, of: app, in: asked,
            familyShared: "the purchase is family-shared: Apple sets no app account token on it (4000185)")
        let user = token.uuidString.lowercased()
        if let holder = rows.compactMap(\.claimant).first, holder.lowercased() != user {
            throw ServiceError(
                .invalidArgument,
                "the purchase is claimed by another user of the app: move the claim first (docs/api.md, \"Claims\")")
        }
        try await ask {
            try await storeKit.setAppAccountToken(
                token, originalTransactionID: originalTransactionID, environment: apple, credentials: credentials)
        }
        try await tenancy.audit(
            app.accountID, "apple.set_app_account_token",
            "app \(app.id.uuidString.lowercased()), original transaction \(originalTransactionID), \(environment.rawValue)"
        )
        var claimed = false
        // The token claims only where the app says the stores' user ids are its own (money review M1).
        if app.claimsPolicy != .off, app.storeUserIDs, !rows.isEmpty {
            var recording = LedgerRecording(
                appID: app.id, environment: environment,
                transactions: rows.filter { $0.environment == environment }.map(\.transaction), user: user,
                movesClaims: false, deliversNew: false, requestID: "apple:app_account_token", now: tenancy.now())
            recording.catalog = app.catalog
            let results = try await store.record(recording)
            claimed = results.contains { $0.entry.claimant == user }
        }
        return TokenSet(environment: environment, claimed: claimed)
    }

    // MARK: Extend a Subscription Renewal Date

    /// Extends one customer's subscription, once per request identifier: a repeated identifier answers what the
    /// first request did (unless that one failed before Apple). One whose answer was lost is looked up before it is
    /// ever sent again (money review M6): Apple's renewal date, stated just before the first sending, moved by the
    /// extension's days means Apple applied it; otherwise it is sent again. Apple's confirmation is then reflected:
    /// the subscription's signed status is read anew and recorded, so the customer's expiry and entitlements move.
    public func extendRenewalDate(
        app: App, originalTransactionID: String, _ extension: RenewalExtension, environment asked: StoreEnvironment?
    ) async throws -> RenewalExtensionRecord {
        let (credentials, _, environment, apple) = try await purchase(
            originalTransactionID, of: app, in: asked,
            familyShared: "the subscription is family-shared: Apple extends it only through the purchaser's (4030007)")
        let now = tenancy.now()
        var record = RenewalExtensionRecord(
            appID: app.id, requestIdentifier: `extension`.requestIdentifier, environment: environment,
            originalTransactionID: originalTransactionID, productID: nil, days: `extension`.days,
            reason: `extension`.reason, state: .sending, actor: requester, createdAt: now, updatedAt: now)
        if let held = try await store.beginRenewalExtension(record) {
            guard held.originalTransactionID == originalTransactionID else {
                throw ServiceError(.invalidArgument, "request_identifier was used for another extension of the app")
            }
            guard held.isInDoubt(at: now) else { return held }
            let looked = await lookUp(held, apple: apple, credentials: credentials)
            if looked.state == .extended {
                try? await reflectStatuses(app: app, originalTransactionID: originalTransactionID, in: environment)
            }
            // Apple applied it (or cannot tell yet): that is the answer; Apple did not: it is sent again.
            guard looked.state == .failed, try await store.beginRenewalExtension(record) == nil else { return looked }
        }
        do {
            // The renewal date before sending, kept to judge a lost answer by; asking it failing, nothing is sent.
            record.expiresBefore = try await renewalDate(
                of: originalTransactionID, apple: apple, credentials: credentials)
        } catch let error as AppStoreServerAPIError {
            record.state = .failed
            record.error = Self.reason(error)
        }
        if record.state == .sending {
            try await store.saveRenewalExtension(record)
            do {
                let result = try await storeKit.extendRenewalDate(
                    originalTransactionID: originalTransactionID, `extension`, environment: apple,
                    credentials: credentials)
                record.state = result.success ? .extended : .refused
                record.effectiveDate = result.effectiveDate
                if !result.success { record.error = "Apple did not extend the subscription (success: false)" }
            } catch let error as AppStoreServerAPIError {
                record.state = Self.state(after: error)
                record.error = Self.reason(error)
            }
        }
        record.updatedAt = tenancy.now()
        try await store.saveRenewalExtension(record)
        try await tenancy.audit(
            app.accountID, "apple.extend_renewal_date",
            "app \(app.id.uuidString.lowercased()), original transaction \(originalTransactionID), "
                + "\(`extension`.days) days, reason \(`extension`.reason.rawValue), request \(`extension`.requestIdentifier): "
                + record.state.rawValue)
        if record.state == .extended {
            // Reflected as Apple signs it: a failure to read it back leaves the extension recorded, and Apple's
            // RENEWAL_EXTENDED notification brings the same statement.
            try? await reflectStatuses(app: app, originalTransactionID: originalTransactionID, in: environment)
        }
        return record
    }

    /// The renewal date (milliseconds since 1970) Apple's signed statuses state now for the subscription: its latest
    /// transaction's expiry.
    func renewalDate(
        of originalTransactionID: String, apple: StoreEnvironment, credentials: AppStoreServerAPICredentials
    ) async throws -> Int64? {
        try await storeKit.currentStatuses(of: originalTransactionID, environment: apple, credentials: credentials)
            .filter { $0.kind == .signedTransaction }.flatMap(PurchaseTransaction.all(in:))
            .filter { $0.originalTransactionID == originalTransactionID }.compactMap(\.expiresDate).max()
    }

    /// Where an extension whose answer was lost stands, looked up at Apple and recorded: `extended` when the
    /// subscription's renewal date moved by its days since the renewal date stated before it was sent (a mass
    /// extension: when Apple's status of its request identifier is found), `failed` when Apple did not take it (it may
    /// then be sent again), unchanged when Apple cannot tell now (or, recorded before the renewal date was kept, never
    /// can: the caller then decides, with a new identifier).
    func lookUp(
        _ held: RenewalExtensionRecord, apple: StoreEnvironment, credentials: AppStoreServerAPICredentials
    ) async -> RenewalExtensionRecord {
        var record = held
        do {
            if let original = held.originalTransactionID {
                guard let before = held.expiresBefore else {
                    // Its renewal date is kept before it is sent: a record without one was never sent, unless it
                    // was recorded before the date was kept (then only the caller can tell).
                    guard held.state == .sending else { return held }
                    record.state = .failed
                    record.error = "its server was lost before it was sent"
                    record.updatedAt = tenancy.now()
                    try? await store.saveRenewalExtension(record)
                    return record
                }
                let now = try await renewalDate(of: original, apple: apple, credentials: credentials)
                if let now, now >= before + Int64(held.days) * 86_400_000 {
                    record.state = .extended
                    record.effectiveDate = now
                    record.error = nil
                } else {
                    record.state = .failed
                    record.error = "Apple's renewal date had not moved: the lost request was not applied"
                }
            } else {
                let status = try await storeKit.massExtensionStatus(
                    productID: held.productID ?? "", requestIdentifier: held.requestIdentifier, environment: apple,
                    credentials: credentials)
                record.state = status.complete ? .complete : .requested
                record.succeeded = status.succeeded
                record.failed = status.failed
                record.completeDate = status.completeDate
                record.nextPollAt = status.complete ? nil : tenancy.now()
                record.error = nil
            }
        } catch let error as AppStoreServerAPIError where error.code == .notFound && held.originalTransactionID == nil {
            record.state = .failed
            record.error = "Apple does not know the request identifier: the lost request was not taken"
        } catch {
            return held
        }
        record.updatedAt = tenancy.now()
        do {
            try await store.saveRenewalExtension(record)
        } catch {
            return held
        }
        return record
    }

    /// Records the subscription's signed status as Apple states it now (Get All Subscription Statuses, asked
    /// anew): its latest transaction, recorded if new (never delivered by this), and its status from the renewal
    /// info, dated by Apple's `signedDate` so a stale one changes nothing.
    func reflectStatuses(app: App, originalTransactionID: String, in environment: StoreEnvironment) async throws {
        let credentials = try self.credentials(of: app)
        let signed = try await storeKit.currentStatuses(
            of: originalTransactionID, environment: try appleEnvironment(for: environment), credentials: credentials)
        let bundleIDs = Set(app.bundleIDs.map(\.value))
        let purchases = signed.filter { $0.kind == .signedTransaction && bundleIDs.contains($0.bundleID) }
            .flatMap(PurchaseTransaction.all(in:))
        let now = tenancy.now()
        let statuses = signed.filter { $0.kind == .signedRenewalInfo }.compactMap {
            SubscriptionStatus(
                renewal: $0.receipt, purchases: purchases, appID: app.id, environment: environment, now: now)
        }.filter { status in purchases.contains { $0.originalTransactionID == status.originalTransactionID } }
        guard !purchases.isEmpty || !statuses.isEmpty else { return }
        var recording = LedgerRecording(
            appID: app.id, environment: environment, transactions: purchases, user: nil, movesClaims: false,
            deliversNew: false, requestID: "apple:statuses:\(originalTransactionID)", now: now)
        recording.catalog = app.catalog
        recording.statuses = statuses
        _ = try await store.record(recording)
    }

    // MARK: Mass extension

    /// Asks Apple to extend every active subscriber of `productID` (in `storefronts`, or all), once per request
    /// identifier as ``extendRenewalDate(app:originalTransactionID:_:environment:)``; the record is then polled by
    /// ``pollMassExtension(_:app:)`` until Apple completes it.
    public func massExtendRenewalDate(
        app: App, productID: String, storefronts: [String], _ extension: RenewalExtension,
        environment: StoreEnvironment, pollAfter: TimeInterval
    ) async throws -> RenewalExtensionRecord {
        let credentials = try self.credentials(of: app)
        let apple = try appleEnvironment(for: environment)
        guard !productID.isEmpty, productID.utf8.count <= 255 else {
            throw ServiceError(.invalidArgument, "product_id is required")
        }
        if let catalog = app.productCatalog, !catalog.contains(productID) {
            throw ServiceError(.invalidArgument, "product_id is not in the app's catalog")
        }
        let now = tenancy.now()
        var record = RenewalExtensionRecord(
            appID: app.id, requestIdentifier: `extension`.requestIdentifier, environment: environment,
            originalTransactionID: nil, productID: productID, storefronts: storefronts, days: `extension`.days,
            reason: `extension`.reason, state: .sending, actor: requester, createdAt: now, updatedAt: now)
        if let held = try await store.beginRenewalExtension(record) {
            guard held.productID == productID else {
                throw ServiceError(.invalidArgument, "request_identifier was used for another extension of the app")
            }
            guard held.isInDoubt(at: now) else { return held }
            let looked = await lookUp(held, apple: apple, credentials: credentials)
            guard looked.state == .failed, try await store.beginRenewalExtension(record) == nil else { return looked }
        }
        do {
            try await storeKit.massExtendRenewalDate(
                productID: productID, storefronts: storefronts, `extension`, environment: apple,
                credentials: credentials)
            record.state = .requested
            record.nextPollAt = now.addingTimeInterval(pollAfter)
        } catch let error as AppStoreServerAPIError {
            record.state = Self.state(after: error)
            record.error = Self.reason(error)
        }
        record.updatedAt = tenancy.now()
        try await store.saveRenewalExtension(record)
        try await tenancy.audit(
            app.accountID, "apple.mass_extend_renewal_date",
            "app \(app.id.uuidString.lowercased()), product \(productID), \(`extension`.days) days, reason "
                + "\(`extension`.reason.rawValue), request \(`extension`.requestIdentifier): \(record.state.rawValue)")
        return record
    }

    /// Asks Apple where a mass extension is and records it: complete with its counts, or due again after
    /// `pollAfter`. A failure to ask is recorded as the record's error and polled again.
    public func pollMassExtension(_ record: RenewalExtensionRecord, app: App, pollAfter: TimeInterval) async
        -> RenewalExtensionRecord
    {
        var record = record
        do {
            let status = try await storeKit.massExtensionStatus(
                productID: record.productID ?? "", requestIdentifier: record.requestIdentifier,
                environment: try appleEnvironment(for: record.environment), credentials: try credentials(of: app))
            record.succeeded = status.succeeded
            record.failed = status.failed
            record.error = nil
            if status.complete {
                record.state = .complete
                record.completeDate = status.completeDate
                record.nextPollAt = nil
            } else {
                record.nextPollAt = tenancy.now().addingTimeInterval(pollAfter)
            }
        } catch {
            record.error = (error as? AppStoreServerAPIError).map(Self.reason) ?? "\(error)"
            record.nextPollAt = tenancy.now().addingTimeInterval(pollAfter)
        }
        record.updatedAt = tenancy.now()
        do {
            try await store.saveRenewalExtension(record)
        } catch {
            // The lease runs out and another poll records it.
        }
        return record
    }

    /// The app's extensions, newest first.
    public func extensions(app: App, limit: Int) async throws -> [RenewalExtensionRecord] {
        try await store.renewalExtensions(appID: app.id, limit: limit)
    }

    // MARK: Get App Transaction Info

    /// The customer's app transaction as Apple signs it, verified, from any of their transaction ids; its decoded
    /// payload.
    public func appTransaction(app: App, transactionID: String, environment: StoreEnvironment?) async throws
        -> VerifiedReceipt
    {
        try Self.check(transactionID, "transaction_id")
        let credentials = try self.credentials(of: app)
        let apple = try environment.map(appleEnvironment(for:))
        let signed = try await ask {
            try await storeKit.appTransactionInfo(of: transactionID, environment: apple, credentials: credentials)
        }
        guard app.bundleIDs.contains(where: { $0.value == signed.bundleID }) else {
            throw ServiceError(.invalidArgument, "Apple's app transaction is of another bundle ID")
        }
        return signed
    }

    // MARK: Support

    /// What an action on one purchase starts from: the app's credentials, the ledger's rows of the original
    /// transaction (of `asked`'s environment, when one is asked), the environment they are in (`asked`, else the
    /// ledger's, else production) and the one Apple is asked in. Refused, saying `familyShared`, for a family-shared
    /// purchase, which Apple takes no action on.
    func purchase(
        _ originalTransactionID: String, of app: App, in asked: StoreEnvironment?, familyShared: String
    ) async throws -> (
        credentials: AppStoreServerAPICredentials, rows: [LedgerEntry], environment: StoreEnvironment,
        apple: StoreEnvironment
    ) {
        try Self.check(originalTransactionID, "original_transaction_id")
        let credentials = try self.credentials(of: app)
        let rows = try await store.ledgerEntries(
            LedgerQuery(appID: app.id, originalTransactionID: originalTransactionID, limit: 100)
        ).filter { asked == nil || $0.environment == asked }
        if rows.contains(where: { $0.transaction.inAppOwnershipType == "FAMILY_SHARED" }) {
            throw ServiceError(.invalidArgument, familyShared)
        }
        let environment = asked ?? rows.first?.environment ?? .production
        return (credentials, rows, environment, try appleEnvironment(for: environment))
    }

    /// Apple's transaction ids are digits: anything else is refused before a record or a request is spent on it.
    static func check(_ id: String, _ field: String) throws {
        guard (1...64).contains(id.utf8.count), id.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else {
            throw ServiceError(.invalidArgument, "\(field) must be Apple's id: 1 to 64 digits")
        }
    }

    /// The environment Apple is asked in for purchases of `environment`. Xcode's test purchases exist on no Apple
    /// server and are refused, but for a stand-in of Apple that takes test data (a fake on loopback), whose sandbox
    /// plays them.
    func appleEnvironment(for environment: StoreEnvironment) throws -> StoreEnvironment {
        guard environment == .xcode else { return environment }
        guard storeKit.acceptsTestData else {
            throw ServiceError(.invalidArgument, "Xcode test purchases are not known to Apple's servers")
        }
        return .sandbox
    }

    func credentials(of app: App) throws -> AppStoreServerAPICredentials {
        guard let credentials = try tenancy.serverAPICredentials(of: app) else {
            throw ServiceError(
                .invalidArgument,
                "the app has no App Store Server API credentials (app update --apple-issuer-id --apple-key-id "
                    + "--apple-private-key-file)")
        }
        return credentials
    }

    /// Runs one request to Apple; Apple's refusals become ``AppleActionError``.
    func ask<T>(_ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let error as AppStoreServerAPIError {
            throw AppleActionError(error)
        }
    }

    /// Where an extension stands after Apple's error: refused by Apple (a 4xx), lost after it was sent (5xx,
    /// network), or not sent.
    static func state(after error: AppStoreServerAPIError) -> RenewalExtensionRecord.State {
        switch error.code {
        case .refused, .notFound: .refused
        case .unavailable, .invalidResponse: .unknown
        case .credentials, .rateLimited: .failed
        }
    }

    static func reason(_ error: AppStoreServerAPIError) -> String { AppleActionError(error).reason }
}

/// Apple did not take an action: why, with Apple's `errorCode`.
public struct AppleActionError: Error, Sendable {
    /// Apple's error, as the client reported it.
    public let error: AppStoreServerAPIError

    init(_ error: AppStoreServerAPIError) { self.error = error }

    /// A sentence for the caller.
    public var reason: String {
        let known: [Int: String] = [
            4_000_033: "the app account token is not a UUID",
            4_000_185: "Apple sets no app account token on a family-shared purchase",
            4_000_187: "the id is not an original transaction id",
            4_030_004: "the subscription is not eligible for an extension",
            4_030_005: "the subscription has had the most extensions Apple allows (two in 365 days)",
            4_030_007: "a family-shared subscription is not eligible for an extension",
            4_040_005: "Apple does not know the original transaction",
            4_040_019: "Apple knows no app transaction for the id",
        ]
        let apple = error.appleErrorCode.map { " (Apple \($0))" } ?? ""
        if let code = error.appleErrorCode, let text = known[code] { return text + apple }
        return error.reason
    }
}
