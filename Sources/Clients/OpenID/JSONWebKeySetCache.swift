import Foundation
import ReceiptService
import Synchronization

/// An issuer's signing keys (its JWKS), kept as OpenID Connect relying parties keep them: fetched on first use, again
/// when a token names a key not among them (the issuer rotated; at most once a minute), and at least daily. Concurrent
/// callers share one fetch. A failed fetch may be remembered for ``failureMemory``: while it is, callers get the keys
/// kept (or the remembered failure, when none are) without asking again. The OpenID sign-in (``OpenIDClient``) and
/// Pub/Sub's push tokens (``GooglePushKeys``) keep theirs here.
final class JSONWebKeySetCache: Sendable {
    private struct State {
        var keys: JSONWebKeySet?
        var fetchedAt: Date?
        var failedAt: Date?
        var fetching: Task<JSONWebKeySet, any Error>?
    }

    /// How long a failed fetch is remembered (0: not at all).
    let failureMemory: TimeInterval
    private let rememberedFailure: @Sendable () -> any Error
    private let state = Mutex(State())

    /// Creates an empty cache; `rememberedFailure` is what callers get while a failure is remembered and no keys are
    /// kept.
    init(
        failureMemory: TimeInterval = 0,
        rememberedFailure: @escaping @Sendable () -> any Error = { CancellationError() }
    ) {
        self.failureMemory = failureMemory
        self.rememberedFailure = rememberedFailure
    }

    /// The keys to check a token whose header names `keyID`, from `fetch` when the kept ones will not do.
    func keys(
        forKeyID keyID: String?, now: Date = Date(), fetch: @escaping @Sendable () async throws -> JSONWebKeySet
    ) async throws -> JSONWebKeySet {
        let task: Task<JSONWebKeySet, any Error> = try state.withLock { state in
            if let keys = state.keys, let fetchedAt = state.fetchedAt, now.timeIntervalSince(fetchedAt) < 86_400,
                keys.contains(keyID: keyID) || now.timeIntervalSince(fetchedAt) < 60
            {
                return Task { keys }
            }
            if let fetching = state.fetching { return fetching }
            if let failedAt = state.failedAt, now.timeIntervalSince(failedAt) < failureMemory {
                if let keys = state.keys { return Task { keys } }
                throw rememberedFailure()
            }
            let fetching = Task { try await fetch() }
            state.fetching = fetching
            return fetching
        }
        do {
            let keys = try await task.value
            state.withLock { state in
                if state.fetching != nil {
                    state.keys = keys
                    state.fetchedAt = now
                    state.fetching = nil
                }
            }
            return keys
        } catch {
            state.withLock { state in
                if state.fetching != nil {
                    state.failedAt = now
                    state.fetching = nil
                }
            }
            throw error
        }
    }
}
