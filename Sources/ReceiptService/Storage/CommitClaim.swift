import Synchronization

/// Who decides a write's fate: the caller that may give up on it (its deadline passed), or the store that began to
/// commit it. Whichever comes first wins, once.
///
/// A recording that marks a delivery (``DeliveryMode/once``) carries one: a caller whose deadline passes before the
/// store takes the recording into a transaction abandons it, and the store then never writes it (not in a group, not
/// alone after a group failed); once the store began, the caller waits for the outcome whatever its deadline, so the
/// answer that says `deliver: true` is the one that marked the delivery (docs/api.md, "Transactions: what to deliver").
public final class CommitClaim: Sendable {
    private enum State {
        case waiting, committing, abandoned
    }

    private let state = Mutex(State.waiting)

    /// A claim that neither side has taken yet.
    public init() {}

    /// The store takes the write into a transaction; false when the caller abandoned it first (it must not be
    /// written).
    public func begin() -> Bool {
        state.withLock { state in
            guard state != .abandoned else { return false }
            state = .committing
            return true
        }
    }

    /// Whether the caller gave the write up (``abandon()``): the store then left it out, whatever it answered.
    public var isAbandoned: Bool { state.withLock { $0 == .abandoned } }

    /// The caller gives the write up; false when the store already began to commit it (the caller must wait for
    /// the outcome).
    public func abandon() -> Bool {
        state.withLock { state in
            guard state != .committing else { return false }
            state = .abandoned
            return true
        }
    }
}
