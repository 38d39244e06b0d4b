import Foundation
import ReceiptCore
import Synchronization

/// The subscription statuses `/api` answers and ledger look-ups show (`subscriptions`), read from the store once and
/// then from memory while the store's ``NotificationStore/statusChangeMarker()`` stays put: every status a
/// notification or the expiry scheduler writes moves it, on every server. What the store does not hold is remembered
/// too, so an app that receives no notifications costs `/api` no round trip. Bounded: past `capacity` entries it
/// starts again empty.
public final class SubscriptionStatusView: Sendable {
    private struct Key: Hashable {
        let appID: UUID
        let originalTransactionID: String
    }

    private struct State {
        var marker: Int?
        var statuses: [Key: [SubscriptionStatus]] = [:]
    }

    private let store: any LedgerStore & NotificationStore
    private let deadline: StoreDeadline
    private let capacity: Int
    private let state = Mutex(State())

    /// Creates a view over `store`, whose reads wait at most `deadline`.
    public init(
        store: any LedgerStore & NotificationStore, deadline: StoreDeadline = StoreDeadline(nil),
        capacity: Int = 100_000
    ) {
        self.store = store
        self.deadline = deadline
        self.capacity = capacity
    }

    /// The statuses of these original transactions of the app, in the order of `originals` (each in every
    /// environment it has one, or only in `environment`). `fresh` reads them from the store whatever is remembered:
    /// for an answer whose own recording wrote statuses, which the marker of another database (PostgreSQL's
    /// notifications arrive a moment after the commit) may not have announced yet.
    public func statuses(
        appID: UUID, originals: [String], environment: StoreEnvironment? = nil, fresh: Bool = false
    ) async throws -> [SubscriptionStatus] {
        guard !originals.isEmpty else { return [] }
        let marker = store.statusChangeMarker()
        var known: [String: [SubscriptionStatus]] = [:]
        var missing: [String] = []
        state.withLock { state in
            if state.marker != marker {
                state.statuses.removeAll(keepingCapacity: true)
                state.marker = marker
            }
            for original in originals {
                if marker != nil, !fresh,
                    let cached = state.statuses[Key(appID: appID, originalTransactionID: original)]
                {
                    known[original] = cached
                } else {
                    missing.append(original)
                }
            }
        }
        if !missing.isEmpty {
            let read = try await deadline.run("subscription statuses") { [store, missing] in
                try await store.subscriptionStatuses(appID: appID, originalTransactionIDs: missing)
            }
            var found: [String: [SubscriptionStatus]] = Dictionary(uniqueKeysWithValues: missing.map { ($0, []) })
            for status in read { found[status.originalTransactionID, default: []].append(status) }
            known.merge(found) { _, new in new }
            if let marker {
                state.withLock { state in
                    guard state.marker == marker else { return }
                    if state.statuses.count + found.count > capacity { state.statuses.removeAll() }
                    for (original, statuses) in found {
                        state.statuses[Key(appID: appID, originalTransactionID: original)] = statuses
                    }
                }
            }
        }
        var seen = Set<String>()
        return originals.filter { seen.insert($0).inserted }.flatMap { original in
            (known[original] ?? []).filter { environment == nil || $0.environment == environment }
        }
    }
}
