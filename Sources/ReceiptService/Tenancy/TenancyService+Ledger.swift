import Foundation
import ReceiptCore

/// The operator's view of an app's ledger (`receiptverify transactions …`).
extension TenancyService {
    /// The app's ledger rows, oldest first, optionally of one user or one original transaction and first seen at or
    /// after `since`; at most `limit`.
    public func ledgerEntries(
        token: String, user: String?, originalTransactionID: String?, since: Date?, limit: Int
    ) async throws -> [LedgerEntry] {
        let app = try await app(token: token)
        guard (1...100_000).contains(limit) else {
            throw ServiceError(.invalidArgument, "the limit must be from 1 to 100000")
        }
        // Pages of the store's size, so one command never holds a long transaction.
        return try await LedgerQuery(
            appID: app.id, user: user, originalTransactionID: originalTransactionID, since: since, limit: limit
        ).read(upTo: limit, page: store.ledgerEntries)
    }

    /// Gives an original transaction's claim to `user`, or releases it (`user` nil).
    public func setClaim(token: String, originalTransactionID: String, user: String?) async throws {
        let app = try await app(token: token)
        if let user {
            guard !user.isEmpty, user.utf8.count <= VerificationRequest.maximumFieldLength else {
                throw ServiceError(.invalidArgument, "a user id must be 1-256 bytes")
            }
        }
        // Who held it, in which environments: their entitlements move with the claim (``CustomerChanges``).
        let held = try await store.ledgerEntries(
            LedgerQuery(appID: app.id, originalTransactionID: originalTransactionID, limit: 1_000))
        guard
            try await store.setClaim(
                appID: app.id, originalTransactionID: originalTransactionID, user: user, at: now())
        else {
            throw ServiceError(
                .invalidArgument,
                "the app's ledger holds no original transaction '\(Validation.printable(originalTransactionID))'")
        }
        for environment in Set(held.map(\.environment)).sorted(by: { $0.rawValue < $1.rawValue }) {
            let users = Set(
                held.filter { $0.environment == environment }.compactMap(\.claimant) + [user].compactMap { $0 })
            _ = try await store.tellCustomers(
                appID: app.id, environment: environment, users: users.sorted(), catalog: app.catalog, at: now())
        }
        try await audit(
            app.accountID, user == nil ? "transaction.release" : "transaction.claim",
            "app \(app.id.uuidString.lowercased()), original transaction \(Validation.printable(originalTransactionID))"
        )
    }
}

/// The operator's view of an app's customers (`receiptverify customers show`).
extension TenancyService {
    /// What a user of the app (or, with no user, the holder of an original transaction) may use now, in
    /// `environment` (nil: their production facts, else sandbox), and the ledger rows it was computed from.
    public func customer(
        token: String, user: String?, originalTransactionID: String?, environment: StoreEnvironment?
    ) async throws -> (view: CustomerView, rows: [LedgerEntry]) {
        let app = try await app(token: token)
        let subject = try CustomerLookup.Subject(user: user, originalTransactionID: originalTransactionID, app: app)
        let lookup = CustomerLookup(ledger: Ledger(store: store), statuses: SubscriptionStatusView(store: store))
        return try await lookup.viewAndRows(of: subject, app: app, environment: environment, now: now())
    }
}

/// The operator's view of an app's refund requests (`receiptverify customers refunds`).
extension TenancyService {
    /// The app's latest refund requests and their answers, newest first.
    public func consumptionAnswers(token: String, limit: Int) async throws -> [ConsumptionAnswerStatus] {
        try await store.consumptionAnswers(appID: try await app(token: token).id, limit: limit)
    }
}
