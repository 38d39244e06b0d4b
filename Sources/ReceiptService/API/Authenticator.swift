import Crypto
import Foundation
import Logging
import Synchronization

/// Checks `apikey` and `token` and yields a ``Caller``; every failure is the same ``ServiceError/Code/unauthorized``,
/// so an answer never tells which part was wrong.
///
/// Successful lookups are remembered for ``cacheTTL`` (keyed by the SHA-256 of the presented key, never its clear
/// text), so a busy app costs no database round trip here. Changes made with the CLI to keys and apps (a revoked
/// key, a disabled app) therefore take effect within that time on every server instance; the account's enabled
/// flag and plan are checked on every call by ``UsageGate``, which sees a CLI change from the next call.
public final class Authenticator: Sendable {
    /// How long a successful lookup is reused; zero turns the cache off.
    public let cacheTTL: Duration
    /// Entries kept at most; the cache is emptied when it would grow beyond this.
    public let cacheCapacity: Int

    private let tenancy: TenancyService
    private let keys = Mutex<[[UInt8]: KeyEntry]>([:])
    private let apps = Mutex<[String: AppEntry]>([:])

    private struct KeyEntry: Sendable {
        let keyID: UUID
        let account: Account
        let expires: ContinuousClock.Instant
    }

    private struct AppEntry: Sendable {
        let app: App
        let resultKey: [UInt8]
        let sharedSecret: String?
        let expires: ContinuousClock.Instant
    }

    /// Creates an authenticator over the tenancy store.
    public init(tenancy: TenancyService, cacheTTL: Duration = .seconds(5), cacheCapacity: Int = 10_000) {
        self.tenancy = tenancy
        self.cacheTTL = cacheTTL
        self.cacheCapacity = cacheCapacity
    }

    /// The caller that `apiKey` and `token` identify; throws ``ServiceError/Code/unauthorized`` when either is
    /// missing, unknown or revoked, the app is another account's, or the account or app is disabled.
    public func authenticate(apiKey: String?, token: String?, logger: Logger) async throws -> Caller {
        guard let apiKey, let token, !apiKey.isEmpty, !token.isEmpty,
            apiKey.utf8.count <= VerificationRequest.maximumFieldLength,
            token.utf8.count <= VerificationRequest.maximumFieldLength
        else { throw Self.refusal("apikey or token missing") }
        let key = try await keyEntry(for: apiKey, logger: logger)
        let app = try await appEntry(for: token)
        guard app.app.accountID == key.account.id else { throw Self.refusal("the app belongs to another account") }
        guard app.app.isEnabled else { throw Self.refusal("the app is disabled") }
        return Caller(
            account: key.account, apiKeyID: key.keyID, app: app.app, resultKey: app.resultKey,
            sharedSecret: app.sharedSecret)
    }

    private static func refusal(_ reason: String) -> ServiceError { ServiceError(.unauthorized, reason) }

    private func keyEntry(for presented: String, logger: Logger) async throws -> KeyEntry {
        let digest = Array(SHA256.hash(data: Array(presented.utf8)))
        let now = ContinuousClock.now
        if let cached = keys.withLock({ $0[digest] }), cached.expires > now { return cached }

        guard let prefix = APIKey.lookupPrefix(of: presented) else { throw Self.refusal("malformed API key") }
        guard let key = try await tenancy.store.apiKey(prefix: prefix), key.matches(presented) else {
            throw Self.refusal("unknown API key")
        }
        guard !key.isRevoked else { throw Self.refusal("revoked API key") }
        guard let account = try await tenancy.store.account(id: key.accountID), account.isEnabled else {
            throw Self.refusal("the account is disabled")
        }
        // Last use is recorded once per cache period: a write per request would cost more than the verification.
        do {
            try await tenancy.store.recordAPIKeyUse(id: key.id, at: tenancy.now())
        } catch {
            logger.warning("could not record API key use", metadata: ["key.id": "\(key.id)", "error": "\(error)"])
        }
        let entry = KeyEntry(keyID: key.id, account: account, expires: now.advanced(by: cacheTTL))
        if cacheTTL > .zero { store(entry, at: digest, in: keys) }
        return entry
    }

    private func appEntry(for token: String) async throws -> AppEntry {
        let now = ContinuousClock.now
        if let cached = apps.withLock({ $0[token] }), cached.expires > now { return cached }
        guard let app = try await tenancy.store.app(token: token) else { throw Self.refusal("unknown app token") }
        let entry = AppEntry(
            app: app, resultKey: try tenancy.resultKey(of: app), sharedSecret: try tenancy.sharedSecret(of: app),
            expires: now.advanced(by: cacheTTL))
        if cacheTTL > .zero { store(entry, at: token, in: apps) }
        return entry
    }

    private func store<Key: Hashable & Sendable, Entry: Sendable>(_ entry: Entry, at key: Key, in cache: borrowing Mutex<[Key: Entry]>) {
        cache.withLock { entries in
            if entries.count >= cacheCapacity { entries.removeAll(keepingCapacity: true) }
            entries[key] = entry
        }
    }
}
