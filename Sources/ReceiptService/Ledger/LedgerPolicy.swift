/// What happens when a purchase already claimed by one user of the app is presented by another
/// (`app add|update --claims`, docs/api.md "Transactions").
public enum ClaimsPolicy: String, Sendable, CaseIterable {
    /// No claims are made or checked.
    case off
    /// The first user's claim stands; the other user's answer says `claimed_by_other_user` and delivers nothing.
    case flag
    /// The other user's request is refused with 403.
    case refuse
    /// The claim moves to the user presenting it (restore purchases); the answer says `transferred_from`.
    case transfer
}

/// When a transaction stops being delivered (`app add|update --delivery`).
public enum DeliveryMode: String, Sendable, CaseIterable {
    /// Only in the answer that first records it.
    case once
    /// Until the backend confirms it with `POST /api/transactions/delivered`.
    case confirm
}
