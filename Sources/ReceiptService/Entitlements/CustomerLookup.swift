import Foundation
import Logging
import ReceiptCore
import Synchronization

/// Computes customer views from the store (docs/api.md, "Customers and entitlements"): the ledger's rows of a user
/// (or of original transactions) and their subscriptions' statuses, under the app's catalog, at the server's clock.
///
/// A known customer costs no round trip: the rows read are kept in memory while the store's
/// ``NotificationStore/customerChangeMarker()`` stays put (it moves with every new row, claim, revocation, delivery
/// and status write, on every server), and the statuses come from ``SubscriptionStatusView``; the view itself is
/// computed afresh for each call, as "now" moves. Bounded: past `capacity` rows held it starts again empty.
public struct CustomerLookup: Sendable {
    /// Whom a view is of.
    public enum Subject: Sendable, Hashable {
        /// The app's user: every original transaction they claimed.
        case user(String)
        /// Original transactions, when no user is given (or the app makes no claims).
        case originals([String])

        /// The subject a look-up names for `app`: its `user`, else its `originalTransactionID` (empty ones count as
        /// absent); throws ``ServiceError/Code/invalidArgument`` when it names neither, or a user of an app that
        /// makes no claims (whose purchases are no user's: ask by original transaction).
        public init(user: String?, originalTransactionID: String?, app: App) throws {
            if let user, !user.isEmpty {
                guard app.claimsPolicy != .off else {
                    throw ServiceError(
                        .invalidArgument,
                        "the app makes no claims (claims off), so no purchase is a user's: ask by "
                            + "original_transaction_id")
                }
                self = .user(user)
            } else if let originalTransactionID, !originalTransactionID.isEmpty {
                self = .originals([originalTransactionID])
            } else {
                throw ServiceError(
                    .invalidArgument, "a customer look-up needs app_user_id or original_transaction_id")
            }
        }
    }

    /// The most ledger rows one view reads; a customer with more is computed from the first ones.
    public static let maximumTransactions = 10_000
    /// The most original transactions a view of originals reads.
    public static let maximumOriginals = 100
    static let pageSize = 1_000

    let ledger: Ledger
    let statuses: SubscriptionStatusView
    let marker: @Sendable () -> Int?
    private let facts: CustomerFacts

    /// Creates a look-up over the ledger and the statuses' view; `marker` is the store's
    /// ``NotificationStore/customerChangeMarker()`` (nil: nothing is kept); at most `capacity` rows are kept.
    public init(
        ledger: Ledger, statuses: SubscriptionStatusView, marker: @escaping @Sendable () -> Int? = { nil },
        capacity: Int = 200_000
    ) {
        self.ledger = ledger
        self.statuses = statuses
        self.marker = marker
        self.facts = CustomerFacts(capacity: capacity)
    }

    /// The view of `subject` for `app` in `environment` (nil: Production where the customer has production facts,
    /// else Sandbox, else Xcode), as of `now`. A user of an app whose claims are off has no claimed rows: ask by
    /// original transaction then.
    public func view(
        of subject: Subject, app: App, environment: StoreEnvironment?, now: Date = Date(), fresh: Bool = false
    ) async throws -> CustomerView {
        try await viewAndRows(of: subject, app: app, environment: environment, now: now, fresh: fresh).view
    }

    /// ``view(of:app:environment:now:fresh:)`` and the ledger rows (of the view's environment) it was computed from.
    public func viewAndRows(
        of subject: Subject, app: App, environment: StoreEnvironment?, now: Date = Date(), fresh: Bool = false
    ) async throws -> (view: CustomerView, rows: [LedgerEntry]) {
        let marker = marker()
        let entries: [LedgerEntry]
        if !fresh, let known = facts.entries(of: subject, appID: app.id, marker: marker) {
            entries = known
        } else {
            entries = try await read(subject, appID: app.id)
            facts.remember(entries, of: subject, appID: app.id, marker: marker)
        }
        let chosen = environment ?? Self.environment(of: entries)
        let mine = entries.filter { $0.environment == chosen }
        var seen = Set<String>()
        let originals = mine.map(\.transaction.originalTransactionID).filter { seen.insert($0).inserted }
        let known = try await statuses.statuses(appID: app.id, originals: originals, environment: chosen)
        let user: String? = if case .user(let user) = subject { user } else { nil }
        let original: String? = if case .originals(let list) = subject, list.count == 1 { list[0] } else { nil }
        let view = EntitlementRules.view(
            appUserID: user, originalTransactionID: original, environment: chosen, entries: mine, statuses: known,
            catalog: app.catalog, now: now.millisecondsSince1970)
        return (view, mine)
    }

    /// The view's answer form (``CustomerView/json``), from memory while nothing it depends on changed: the store's
    /// marker, the app's catalog, and no expiry or grace period's end passed since it was computed (only
    /// `computed_at` is then new).
    public func json(
        of subject: Subject, app: App, environment: StoreEnvironment?, now: Date = Date(), fresh: Bool = false
    ) async throws -> JSONObject {
        let marker = marker()
        let milliseconds = now.millisecondsSince1970
        if !fresh,
            var known = facts.view(
                of: subject, appID: app.id, environment: environment, catalog: app.catalog, at: milliseconds,
                marker: marker)
        {
            known["computed_at"] = .string(AppleDate.rfc3339(milliseconds: milliseconds))
            return known
        }
        let view = try await self.view(of: subject, app: app, environment: environment, now: now, fresh: fresh)
        let json = view.json
        facts.remember(
            json, of: subject, appID: app.id, environment: environment, catalog: app.catalog,
            until: view.nextChangeAt ?? .max, marker: marker)
        return json
    }

    /// The ledger rows of `subject`, page by page, up to ``maximumTransactions``.
    private func read(_ subject: Subject, appID: UUID) async throws -> [LedgerEntry] {
        switch subject {
        case .user(let user):
            return try await LedgerQuery(appID: appID, user: user, limit: Self.pageSize).read(
                upTo: Self.maximumTransactions, pageSize: Self.pageSize, page: ledger.entries)
        case .originals(let originals):
            var entries: [LedgerEntry] = []
            var seen = Set<String>()
            for original in originals.prefix(Self.maximumOriginals) where seen.insert(original).inserted {
                entries += try await LedgerQuery(appID: appID, originalTransactionID: original, limit: Self.pageSize)
                    .read(upTo: Self.maximumTransactions - entries.count, pageSize: Self.pageSize, page: ledger.entries)
            }
            return entries
        }
    }

    /// The environment a view without one is of: Production where the customer has production facts, else Sandbox,
    /// else Xcode (Production when there are none).
    static func environment(of entries: [LedgerEntry]) -> StoreEnvironment {
        let held = Set(entries.map(\.environment))
        return [.production, .sandbox, .xcode].first(where: held.contains) ?? .production
    }

    /// Adds `customer` to a valid answer with a user (docs/api.md): the user's view in the answer's environment, or,
    /// when the app makes no claims, the view of the input's original transactions under the user's name. Best
    /// effort: the ledger has committed, so a view that cannot be read leaves `customer` out and is logged.
    ///
    /// After a recording that went to the store (`recorded`), the rows are read afresh: this server's own change may
    /// not have moved the marker yet (PostgreSQL announces it after the commit).
    public func attach(
        to outcome: inout VerificationOutcome, app: App, recorded: Bool, requestID: String, logger: Logger
    ) async {
        guard outcome.isValid, let user = outcome.user, let environment = outcome.environment else { return }
        do {
            var json: JSONObject
            if app.claimsPolicy == .off {
                var seen = Set<String>()
                let originals = outcome.purchases.map(\.originalTransactionID).filter { seen.insert($0).inserted }
                json = try await self.json(
                    of: .originals(originals), app: app, environment: environment, fresh: recorded)
                json["app_user_id"] = .string(user)
                json["original_transaction_id"] = nil
            } else {
                json = try await self.json(of: .user(user), app: app, environment: environment, fresh: recorded)
            }
            outcome.customer = json
        } catch {
            logger.warning(
                "the customer could not be read; answered without it",
                metadata: ["request_id": "\(requestID)", "error": "\(error)"])
        }
    }
}

/// The ledger rows of the customers a server answered lately, valid for one value of the store's customer change
/// marker.
final class CustomerFacts: Sendable {
    private struct Key: Hashable {
        let appID: UUID
        let subject: CustomerLookup.Subject
    }

    /// A computed view, valid for its catalog until its next change.
    private struct KnownView {
        let catalog: [CatalogProduct]?
        let until: Int64
        let json: JSONObject
    }

    /// A subject's rows and the views computed from them (by the environment asked): rows read again drop the views.
    private struct Known {
        var rows: [LedgerEntry]
        var views: [StoreEnvironment?: KnownView] = [:]
    }

    private struct State {
        var marker: Int?
        var known: [Key: Known] = [:]
        var rows = 0

        /// Starts again empty under `marker`, when it is another.
        mutating func follow(_ marker: Int) {
            guard self.marker != marker else { return }
            known.removeAll(keepingCapacity: true)
            rows = 0
            self.marker = marker
        }
    }

    private let capacity: Int
    private let state = Mutex(State())

    init(capacity: Int) {
        self.capacity = capacity
    }

    /// The rows kept for `subject`, while the marker is `marker`.
    func entries(of subject: CustomerLookup.Subject, appID: UUID, marker: Int?) -> [LedgerEntry]? {
        guard let marker else { return nil }
        return state.withLock { state in
            state.follow(marker)
            return state.known[Key(appID: appID, subject: subject)]?.rows
        }
    }

    /// Keeps `entries` of `subject`, read while the marker was `marker`; the views computed from earlier rows go.
    func remember(_ entries: [LedgerEntry], of subject: CustomerLookup.Subject, appID: UUID, marker: Int?) {
        guard let marker, entries.count <= capacity else { return }
        state.withLock { state in
            state.follow(marker)
            if state.rows + entries.count > capacity {
                state.known.removeAll()
                state.rows = 0
            }
            let key = Key(appID: appID, subject: subject)
            state.rows += entries.count - (state.known[key]?.rows.count ?? 0)
            state.known[key] = Known(rows: entries)
        }
    }

    /// The view of `subject` in `environment` computed under `catalog`, while the marker is `marker` and `now` is
    /// before its next change.
    func view(
        of subject: CustomerLookup.Subject, appID: UUID, environment: StoreEnvironment?,
        catalog: [CatalogProduct]?, at now: Int64, marker: Int?
    ) -> JSONObject? {
        guard let marker else { return nil }
        return state.withLock { state in
            guard state.marker == marker,
                let known = state.known[Key(appID: appID, subject: subject)]?.views[environment],
                now < known.until, known.catalog == catalog
            else { return nil }
            return known.json
        }
    }

    /// Keeps a view computed while the marker was `marker`, valid until `until`, beside the subject's rows it was
    /// computed from (a view whose rows were dropped is not kept).
    func remember(
        _ json: JSONObject, of subject: CustomerLookup.Subject, appID: UUID, environment: StoreEnvironment?,
        catalog: [CatalogProduct]?, until: Int64, marker: Int?
    ) {
        guard let marker else { return }
        state.withLock { state in
            let key = Key(appID: appID, subject: subject)
            guard state.marker == marker, state.known[key] != nil else { return }
            state.known[key]?.views[environment] = KnownView(catalog: catalog, until: until, json: json)
        }
    }
}
