import Foundation
import Logging
import ReceiptCore

/// Computes customer views from the store (docs/api.md, "Customers and entitlements"): the ledger's rows of a user
/// (or of original transactions) and their subscriptions' statuses, under the app's catalog, at the server's clock.
public struct CustomerLookup: Sendable {
    /// Whom a view is of.
    public enum Subject: Sendable, Equatable {
        /// The app's user: every original transaction they claimed.
        case user(String)
        /// Original transactions, when no user is given (or the app makes no claims).
        case originals([String])
    }

    /// The most ledger rows one view reads; a customer with more is computed from the first ones.
    public static let maximumTransactions = 10_000
    /// The most original transactions a view of originals reads.
    public static let maximumOriginals = 100
    static let pageSize = 1_000

    let ledger: Ledger
    let statuses: SubscriptionStatusView

    /// Creates a look-up over the ledger and the statuses' view.
    public init(ledger: Ledger, statuses: SubscriptionStatusView) {
        self.ledger = ledger
        self.statuses = statuses
    }

    /// The view of `subject` for `app` in `environment` (nil: Production where the customer has production facts,
    /// else Sandbox, else Xcode), as of `now`. A user of an app whose claims are off has no claimed rows: ask by
    /// original transaction then.
    public func view(
        of subject: Subject, app: App, environment: AppStoreEnvironment?, now: Date = Date()
    ) async throws -> CustomerView {
        var entries: [LedgerEntry] = []
        switch subject {
        case .user(let user):
            var after: LedgerPosition?
            while entries.count < Self.maximumTransactions {
                let page = try await ledger.entries(
                    LedgerQuery(appID: app.id, user: user, after: after, limit: Self.pageSize))
                entries += page
                guard page.count == Self.pageSize, let last = page.last else { break }
                after = LedgerPosition(of: last)
            }
        case .originals(let originals):
            var seen = Set<String>()
            for original in originals.prefix(Self.maximumOriginals) where seen.insert(original).inserted {
                var after: LedgerPosition?
                while entries.count < Self.maximumTransactions {
                    let page = try await ledger.entries(
                        LedgerQuery(
                            appID: app.id, originalTransactionID: original, after: after, limit: Self.pageSize))
                    entries += page
                    guard page.count == Self.pageSize, let last = page.last else { break }
                    after = LedgerPosition(of: last)
                }
            }
        }
        let chosen = environment ?? Self.environment(of: entries)
        let mine = entries.filter { $0.environment == chosen }
        var seen = Set<String>()
        let originals = mine.map(\.transaction.originalTransactionID).filter { seen.insert($0).inserted }
        let known = try await statuses.statuses(appID: app.id, originals: originals, environment: chosen)
        let user: String? = if case .user(let user) = subject { user } else { nil }
        let original: String? = if case .originals(let list) = subject, list.count == 1 { list[0] } else { nil }
        return EntitlementRules.view(
            appUserID: user, originalTransactionID: original, environment: chosen, entries: mine, statuses: known,
            catalog: app.catalog, now: now.millisecondsSince1970)
    }

    /// The environment a view without one is of: Production where the customer has production facts, else Sandbox,
    /// else Xcode (Production when there are none).
    static func environment(of entries: [LedgerEntry]) -> AppStoreEnvironment {
        let held = Set(entries.map(\.environment))
        return [.production, .sandbox, .xcode].first(where: held.contains) ?? .production
    }

    /// Adds `customer` to a valid answer with a user (docs/api.md): the user's view in the answer's environment, or,
    /// when the app makes no claims, the view of the input's original transactions under the user's name. Best
    /// effort: the ledger has committed, so a view that cannot be read leaves `customer` out and is logged.
    public func attach(to outcome: inout VerificationOutcome, app: App, requestID: String, logger: Logger) async {
        guard outcome.isValid, let user = outcome.user, let environment = outcome.environment else { return }
        do {
            var view: CustomerView
            if app.claimsPolicy == .off {
                var seen = Set<String>()
                let originals = outcome.purchases.map(\.originalTransactionID).filter { seen.insert($0).inserted }
                view = try await self.view(of: .originals(originals), app: app, environment: environment)
                view.appUserID = user
                view.originalTransactionID = nil
            } else {
                view = try await self.view(of: .user(user), app: app, environment: environment)
            }
            outcome.customer = view.json
        } catch {
            logger.warning(
                "the customer could not be read; answered without it",
                metadata: ["request_id": "\(requestID)", "error": "\(error)"])
        }
    }
}
