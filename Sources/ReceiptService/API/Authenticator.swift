import Crypto
import Foundation
import Logging
import Synchronization

/// Checks `apikey` and `token` and yields a ``Caller``; every failure is the same ``ServiceError/Code/unauthorized``,
/// so an answer never tells which part was wrong.
///
/// Lookups are remembered for ``cacheTTL``, the found and the not found alike (keys by the SHA-256 of the presented
/// text, never the text): a busy app costs no database round trip, a stranger repeating an unknown key or token
/// costs none either, and a known token of another account takes the same path as an unknown one (an app's secrets
/// are opened only for its own account), so the time of a 401 does not tell whether a token exists. Changes made
/// with the CLI to keys and apps (a new or revoked key, a disabled app) therefore take effect within that time on
/// every server; the account's enabled flag and plan are checked on every call by ``UsageGate``.
public final class Authenticator: Sendable {
    /// How long a lookup is reused; zero turns the caches off.
    public let cacheTTL: Duration
    /// Entries kept at most in each cache (found keys, unknown keys, apps, unknown tokens); a cache is emptied when
    /// it would grow beyond this.
    public let cacheCapacity: Int

    /// The time limit on each database lookup (an outage answers ``ServiceError/Code/unavailable``).
    public let deadline: StoreDeadline

    private let tenancy: TenancyService
    private let keys = Mutex<[[UInt8]: Remembered<KeyEntry>]>([:])
    private let unknownKeys = Mutex<[[UInt8]: ContinuousClock.Instant]>([:])
    private let apps = Mutex<[String: Remembered<App>]>([:])
    private let unknownTokens = Mutex<[UnknownToken: ContinuousClock.Instant]>([:])
    private let secrets = Mutex<[UUID: Remembered<AppSecrets>]>([:])
    private let accounts = Mutex<[UUID: Remembered<Bool>]>([:])
    /// Lookups under way, by key digest and by token.
    private let keyLookups = SingleFlight<[UInt8], KeyEntry>()
    private let appLookups = SingleFlight<String, App?>()

    private struct Remembered<Value: Sendable>: Sendable {
        let value: Value
        let expires: ContinuousClock.Instant
    }

    /// A token not found for an account (nil: for a route that names its app by token alone).
    private struct UnknownToken: Hashable, Sendable {
        let owner: UUID?
        let token: String
    }

    private struct KeyEntry: Sendable {
        let keyID: UUID
        let account: Account
    }

    private struct AppSecrets: Sendable {
        /// The app row the secrets were opened from: a changed app (rotated key) opens them again.
        let updatedAt: Date
        let resultKey: [UInt8]
        let sharedSecret: String?
        let appleKey: (issuerID: String, keyID: String, privateKeyPEM: String)?
        let googleAccount: GoogleServiceAccount?
    }

    /// Creates an authenticator over the tenancy store.
    public init(
        tenancy: TenancyService, cacheTTL: Duration = .seconds(5), cacheCapacity: Int = 10_000,
        deadline: StoreDeadline = StoreDeadline(nil)
    ) {
        self.tenancy = tenancy
        self.deadline = deadline
        self.cacheTTL = cacheTTL
        self.cacheCapacity = cacheCapacity
    }

    /// The caller that `apiKey` and `token` identify; throws ``ServiceError/Code/unauthorized`` when either is
    /// missing, unknown or revoked, the app is another account's, or the account or app is disabled.
    ///
    /// - Parameter mayQueryStore: asked before a lookup the caches cannot answer (only then, so the cached path costs
    ///   nothing more); false when the client has failed too often, and the lookup then throws
    ///   ``ServiceError/Code/throttled`` instead of reaching the database.
    public func authenticate(
        apiKey: String?, token: String?, mayQueryStore: @Sendable () -> Bool = { true }, logger: Logger
    ) async throws -> Caller {
        guard let apiKey, let token, !apiKey.isEmpty, !token.isEmpty,
            apiKey.utf8.count <= VerificationRequest.maximumFieldLength,
            token.utf8.count <= VerificationRequest.maximumFieldLength
        else { throw Self.refusal("apikey or token missing") }
        let key = try await keyEntry(for: apiKey, mayQueryStore: mayQueryStore, logger: logger)
        // An unknown token and another account's token fail here alike, after the same work.
        guard let app = try await app(for: token, of: key.account.id, mayQueryStore: mayQueryStore) else {
            throw Self.refusal("unknown token or another account's")
        }
        guard app.isEnabled else { throw Self.refusal("the app is disabled") }
        let opened = try secrets(of: app)
        return Caller(
            account: key.account, apiKeyID: key.keyID, app: app, resultKey: opened.resultKey,
            sharedSecret: opened.sharedSecret, appleKey: opened.appleKey, googleAccount: opened.googleAccount)
    }

    /// Checks the API key alone, before a request's body is read; throws as
    /// ``authenticate(apiKey:token:mayQueryStore:logger:)`` does. A key that passes is remembered, so the full check
    /// that follows costs no second lookup.
    public func checkKey(_ apiKey: String?, mayQueryStore: @Sendable () -> Bool = { true }, logger: Logger)
        async throws
    {
        guard let apiKey, !apiKey.isEmpty, apiKey.utf8.count <= VerificationRequest.maximumFieldLength else {
            throw Self.refusal("apikey missing")
        }
        _ = try await keyEntry(for: apiKey, mayQueryStore: mayQueryStore, logger: logger)
    }

    private static func refusal(_ reason: String) -> ServiceError { ServiceError(.unauthorized, reason) }

    private func keyEntry(for presented: String, mayQueryStore: () -> Bool, logger: Logger) async throws -> KeyEntry {
        guard let prefix = APIKey.lookupPrefix(of: presented) else { throw Self.refusal("malformed API key") }
        let digest = Array(SHA256.hash(data: Array(presented.utf8)))
        let now = ContinuousClock.now
        if let cached = keys.withLock({ $0[digest] }), cached.expires > now { return cached.value }
        if let until = unknownKeys.withLock({ $0[digest] }), until > now { throw Self.refusal("unknown API key") }
        // Concurrent requests with one key share one lookup (and its one unit of the failure budget): a busy app's
        // first requests after a restart all wait for it instead of spending the address's budget.
        let lookup = keyLookups.task(for: digest, mayStart: mayQueryStore) { [self] in
            try await lookUpKey(prefix: prefix, presented: presented, digest: digest, now: now, logger: logger)
        }
        guard let lookup else { throw ServiceError(.throttled, "too many failed authentications") }
        return try await lookup.value
    }

    /// The key's entry from the store, remembered found or not.
    private func lookUpKey(
        prefix: String, presented: String, digest: [UInt8], now: ContinuousClock.Instant,
        logger: Logger
    ) async throws -> KeyEntry {
        let store = tenancy.store
        let found = try await deadline.run("the API key lookup") { try await store.apiKey(prefix: prefix) }
        guard let key = found, key.matches(presented), !key.isRevoked else {
            remember(unknown: digest, in: unknownKeys, now: now)
            throw Self.refusal("unknown or revoked API key")
        }
        let accountID = key.accountID
        let account = try await deadline.run("the account lookup") { try await store.account(id: accountID) }
        guard let account, account.isEnabled else {
            throw Self.refusal("the account is disabled")
        }
        // Last use is recorded once per cache period: a write per request would cost more than the verification.
        do {
            let usedAt = tenancy.now()
            try await deadline.run("recording the key's use") {
                try await store.recordAPIKeyUse(id: key.id, at: usedAt)
            }
        } catch {
            logger.warning("could not record API key use", metadata: ["key.id": "\(key.id)", "error": "\(error)"])
        }
        let entry = KeyEntry(keyID: key.id, account: account)
        remember(entry, at: digest, in: keys, now: now)
        return entry
    }

    /// The enabled app of an enabled account with `token`, for a route that names its app by token alone (Apple's
    /// notifications); every failure is the same ``ServiceError/Code/unauthorized``, and an unknown token is
    /// remembered, as in ``authenticate(apiKey:token:mayQueryStore:logger:)``. The account's flag is remembered for
    /// ``cacheTTL`` like the app.
    public func app(token: String?, mayQueryStore: @Sendable () -> Bool = { true }) async throws -> App {
        guard let token, !token.isEmpty, token.utf8.count <= VerificationRequest.maximumFieldLength else {
            throw Self.refusal("token missing")
        }
        guard let app = try await app(for: token, of: nil, mayQueryStore: mayQueryStore), app.isEnabled else {
            throw Self.refusal("unknown or disabled token")
        }
        guard try await accountIsEnabled(app.accountID) else { throw Self.refusal("the account is disabled") }
        return app
    }

    /// Whether the account exists and is enabled; remembered for ``cacheTTL``.
    private func accountIsEnabled(_ id: UUID) async throws -> Bool {
        let now = ContinuousClock.now
        if let cached = accounts.withLock({ $0[id] }), cached.expires > now { return cached.value }
        let store = tenancy.store
        let account = try await deadline.run("the account lookup") { try await store.account(id: id) }
        let enabled = account?.isEnabled ?? false
        remember(enabled, at: id, in: accounts, now: now)
        return enabled
    }

    /// The app with `token` (of the account `owner`, when one is given), or nil when there is none; the answer is
    /// remembered either way.
    ///
    /// A token not found is remembered for the owner that asked: another account's token, even one busy in the cache,
    /// is looked up in the store, refused and remembered exactly as a token that does not exist, so neither the time
    /// of the refusal nor the budget of failed look-ups tells a stranger which tokens are in use.
    private func app(for token: String, of owner: UUID?, mayQueryStore: () -> Bool) async throws -> App? {
        let now = ContinuousClock.now
        if let cached = apps.withLock({ $0[token] }), cached.expires > now,
            owner == nil || cached.value.accountID == owner
        {
            return cached.value
        }
        let unknown = UnknownToken(owner: owner, token: token)
        if let until = unknownTokens.withLock({ $0[unknown] }), until > now { return nil }
        // Concurrent requests for one token share one lookup, as keys do.
        let lookup = appLookups.task(for: token, mayStart: mayQueryStore) { [self] in
            let store = tenancy.store
            let found = try await deadline.run("the app lookup", { try await store.app(token: token) })
            if let found { remember(found, at: token, in: apps, now: now) }
            return found
        }
        guard let lookup else { throw ServiceError(.throttled, "too many failed authentications") }
        let found = try await lookup.value
        guard let found, owner == nil || found.accountID == owner else {
            remember(unknown: unknown, in: unknownTokens, now: now)
            return nil
        }
        return found
    }

    /// The app's secrets in clear, opened for its own account only, and remembered while the app is unchanged.
    private func secrets(of app: App) throws -> AppSecrets {
        let now = ContinuousClock.now
        if let cached = secrets.withLock({ $0[app.id] }), cached.expires > now, cached.value.updatedAt == app.updatedAt
        {
            return cached.value
        }
        let opened = AppSecrets(
            updatedAt: app.updatedAt, resultKey: try tenancy.resultKey(of: app),
            sharedSecret: try tenancy.sharedSecret(of: app), appleKey: try tenancy.appleCredentials(of: app),
            googleAccount: try tenancy.googleCredentials(of: app))
        remember(opened, at: app.id, in: secrets, now: now)
        return opened
    }

    private func remember<Key: Hashable & Sendable, Value: Sendable>(
        _ value: Value, at key: Key, in cache: borrowing Mutex<[Key: Remembered<Value>]>, now: ContinuousClock.Instant
    ) {
        guard cacheTTL > .zero else { return }
        cache.withLock { entries in
            if entries.count >= cacheCapacity { entries.removeAll(keepingCapacity: true) }
            entries[key] = Remembered(value: value, expires: now.advanced(by: cacheTTL))
        }
    }

    private func remember<Key: Hashable & Sendable>(
        unknown key: Key, in cache: borrowing Mutex<[Key: ContinuousClock.Instant]>, now: ContinuousClock.Instant
    ) {
        guard cacheTTL > .zero else { return }
        cache.withLock { entries in
            if entries.count >= cacheCapacity { entries.removeAll(keepingCapacity: true) }
            entries[key] = now.advanced(by: cacheTTL)
        }
    }
}
