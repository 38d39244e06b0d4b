import Foundation
import ReceiptCore

extension SubscriptionStatus {
    /// A change of a subscription's state that writing a statement made: the status written and the state it
    /// replaced (nil: none was stored).
    public struct Change: Sendable {
        /// The index of the statement in the list written.
        public var index: Int
        /// The status written.
        public var status: SubscriptionStatus
        /// The state it replaced.
        public var previous: State?
    }

    /// Writes statements of subscriptions' statuses (in their order) through `writer`, inside its transaction: each
    /// over the stored status of its subscription, unless that one was signed later (a late statement changes
    /// nothing) or the statement is about an older period than the stored one; a statement that leaves out the
    /// product, expiry or renewal fields keeps the stored ones. The statuses are read once and written once each, in
    /// key order. Returns the statements that changed a state, and whether any status was written.
    public static func merge(_ stated: [SubscriptionStatus], with writer: some LedgerWriting) async throws -> (
        changes: [Change], wrote: Bool
    ) {
        guard !stated.isEmpty else { return ([], false) }
        var originals: [String] = []
        var seen = Set<String>()
        for status in stated where seen.insert(status.originalTransactionID).inserted {
            originals.append(status.originalTransactionID)
        }
        var statuses = try await writer.subscriptionStatuses(of: originals)
        var saved = Set<String>()
        var changes: [Change] = []
        for (index, statement) in stated.enumerated() {
            var status = statement
            let old = statuses[status.originalTransactionID]
            guard old.map({ $0.asOf <= status.asOf }) ?? true else { continue }
            // A statement about a period older than the latest one the stored status knows (a refund of last month
            // while this month runs) says nothing of the subscription's state now: the row's own revocation is the
            // ledger's, the subscription goes on (money review M9).
            if let stated = status.expiresDate, let known = old?.expiresDate, stated < known { continue }
            if let old {
                if status.productID.isEmpty { status.productID = old.productID }
                status.expiresDate = status.expiresDate ?? old.expiresDate
                status.autoRenews = status.autoRenews ?? old.autoRenews
                status.autoRenewProductID = status.autoRenewProductID ?? old.autoRenewProductID
            }
            statuses[status.originalTransactionID] = status
            saved.insert(status.originalTransactionID)
            if old?.state != status.state { changes.append(Change(index: index, status: status, previous: old?.state)) }
        }
        // Statuses are read through an in-memory view (``SubscriptionStatusView``) that the store's announcement drops.
        try await writer.saveSubscriptionStatuses(saved.sorted().compactMap { statuses[$0] })
        return (changes, !saved.isEmpty)
    }
}
