import Foundation

/// A server's claim on an account's month: how many more calls it may answer before it must ask the store again.
///
/// The store grants calls so that the month's stored calls plus every live grant (each server's calls counted but not
/// yet stored, and those it may still answer) never exceed the quota, whatever the number of servers. Grants shrink
/// as the quota runs out: a quarter of what is left, so the last calls of a month are granted a few at a time.
public struct QuotaClaim: Sendable {
    /// The account's month.
    public let accountMonth: UsageMeter.AccountMonth
    /// The claiming server (random per process).
    public let server: UUID
    /// The plan's monthly quota.
    public let quota: Int
    /// Calls this server counted but has not stored yet, and calls it is answering now: its grant must keep
    /// covering them.
    public let holding: Int
    /// The calls of the month this server knew its flushes had stored when it counted ``holding``: a flush that
    /// stored more since (its count in the store says how many) is taken off the holding, so that no call is counted
    /// twice.
    public let flushed: Int
    /// The most calls one claim may grant.
    public let maximumGrant: Int
    /// When the grant lapses unless a flush or another claim renews it (a server that died frees it then).
    public let expiresAt: Date

    /// Creates a claim.
    public init(
        accountMonth: UsageMeter.AccountMonth, server: UUID, quota: Int, holding: Int, flushed: Int = 0,
        maximumGrant: Int, expiresAt: Date
    ) {
        self.accountMonth = accountMonth
        self.server = server
        self.quota = quota
        self.holding = holding
        self.flushed = flushed
        self.maximumGrant = maximumGrant
        self.expiresAt = expiresAt
    }

    /// The holding without the calls stored since it was counted, given what the store says this server's flushes
    /// stored (`storedByServer`, nil when it keeps no count).
    public func holding(storedByServer: Int?) -> Int {
        max(0, holding - max(0, (storedByServer ?? flushed) - flushed))
    }

    /// The calls to grant when `available` calls of the month are neither stored nor held by a live grant of another
    /// server (this server's holding already taken off): a quarter of them, at least one, at most ``maximumGrant``.
    public func grant(available: Int) -> Int {
        guard available > 0 else { return 0 }
        return min(available, max(1, min(maximumGrant, available / 4)))
    }
}

/// The grants a flush moves its calls out of (the stored calls take their place) and renews.
public struct GrantRenewal: Sendable {
    /// The flushing server.
    public let server: UUID
    /// The new expiry of its grants for the months the flush wrote.
    public let expiresAt: Date

    /// Creates a renewal.
    public init(server: UUID, expiresAt: Date) {
        self.server = server
        self.expiresAt = expiresAt
    }
}

/// How this server holds quota grants: its identity in the store, how long a grant lives there, and how much sooner
/// the server stops using it (so it never uses a grant the store may already have let go).
public struct QuotaGrantPolicy: Sendable {
    /// This server, in the store's grants (random per process).
    public let server: UUID
    /// How long a grant lives in the store unless renewed by a flush or a claim.
    public let lifetime: Duration
    /// How long before the store's expiry this server stops using a grant.
    public let margin: Duration

    /// Creates a policy for a new server identity.
    public init(server: UUID = UUID(), lifetime: Duration = .seconds(30), margin: Duration = .seconds(5)) {
        self.server = server
        self.lifetime = lifetime
        self.margin = margin
    }

    /// The expiry in the store of a grant made or renewed at `now`.
    public func expiry(from now: Date) -> Date {
        let components = lifetime.components
        return now.addingTimeInterval(Double(components.seconds) + Double(components.attoseconds) * 1e-18)
    }

    /// Until when a grant made or renewed at `instant` may be used here.
    public func validity(from instant: ContinuousClock.Instant) -> ContinuousClock.Instant {
        instant + lifetime - margin
    }
}
