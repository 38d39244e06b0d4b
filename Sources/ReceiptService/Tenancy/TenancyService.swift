import Foundation
import ReceiptCore

/// The operator's use cases over accounts, API keys, apps and plans: validation, secret generation and sealing,
/// and the store calls that make each change atomic. Every change to an account, its keys or its apps is recorded in
/// the audit log as made by ``actor`` (the operator, unless the account screen says who).
public struct TenancyService: Sendable {
    /// Where tenancy data lives.
    public let store: any DataStore
    /// The key that seals secrets at rest.
    public let masterKey: MasterKey
    /// The current time; a parameter so tests control it.
    public let now: @Sendable () -> Date
    /// Whether webhook URLs may be plain http and name private, loopback and other special addresses (the operator's
    /// `--webhook-private-urls on`, for a self-hosted server's own network).
    public var allowsPrivateWebhookURLs = false
    /// Who the changes are made by, for the audit log.
    public private(set) var actor = AuditActor.operator

    /// Creates the service over a migrated store.
    public init(store: any DataStore, masterKey: MasterKey, now: @escaping @Sendable () -> Date = { Date() }) {
        self.store = store
        self.masterKey = masterKey
        // Timestamps are kept to the millisecond, so what is stored reads back equal.
        self.now = { now().roundedToMilliseconds }
    }

    /// This service making its changes as `actor` (a signed-in customer, from an address).
    public func acting(as actor: AuditActor) -> TenancyService {
        var service = self
        service.actor = actor
        return service
    }

    /// Records a change to an account in the audit log, as made by ``actor``.
    func audit(_ accountID: UUID, _ action: String, _ detail: String) async throws {
        try await store.appendAudit(
            AuditEntry(
                id: UUID(), accountID: accountID, actor: actor.name, action: action, detail: detail,
                address: actor.address, at: now()))
    }

    /// Records the master key's check value on first use and refuses a key that is not the database's.
    public func checkMasterKey() async throws {
        let stored = try await store.claimMasterKeyCheck(masterKey.checkValue)
        guard ConstantTime.equals(Array(stored.utf8), Array(masterKey.checkValue.utf8)) else {
            throw ServiceError(
                .wrongMasterKey,
                "the master key does not match this database: its secrets were sealed with another key; "
                    + "start with the key this database was created with")
        }
    }

    // MARK: Plans

    /// Every plan.
    public func plans() async throws -> [Plan] { try await store.plans() }

    /// The named plan; throws ``ServiceError/Code/unknownPlan``.
    public func plan(named name: String) async throws -> Plan {
        guard let plan = try await store.plan(named: name) else {
            throw ServiceError(.unknownPlan, "unknown plan '\(Validation.printable(name))'")
        }
        return plan
    }

    /// Changes an existing plan, or creates one when `name` is new (then quota and rate limit are required; limits
    /// not given are ``PlanLimits/standard``'s).
    public func setPlan(
        name: String, monthlyQuota: Int??, rateLimitPerSecond: Int?, includesEncryptedEndpoint: Bool?,
        monthlyPriceCents: Int?, overagePricePer1000Cents: Int?, limits: [PlanLimits.Field: Int] = [:]
    ) async throws -> Plan {
        var plan: Plan
        if let existing = try await store.plan(named: name) {
            plan = existing
        } else {
            guard let monthlyQuota, let rateLimitPerSecond else {
                throw ServiceError(
                    .invalidArgument, "new plan '\(Validation.printable(name))' needs --quota and --rate-limit")
            }
            plan = Plan(
                name: name, monthlyQuota: monthlyQuota, rateLimitPerSecond: rateLimitPerSecond,
                includesEncryptedEndpoint: false, monthlyPriceCents: 0, overagePricePer1000Cents: 0)
        }
        if let monthlyQuota { plan.monthlyQuota = monthlyQuota }
        if let rateLimitPerSecond { plan.rateLimitPerSecond = rateLimitPerSecond }
        if let includesEncryptedEndpoint { plan.includesEncryptedEndpoint = includesEncryptedEndpoint }
        if let monthlyPriceCents { plan.monthlyPriceCents = monthlyPriceCents }
        if let overagePricePer1000Cents { plan.overagePricePer1000Cents = overagePricePer1000Cents }
        for (field, value) in limits { plan.limits[field] = value }
        try plan.validate()
        try await store.savePlan(plan)
        return plan
    }

    // MARK: Accounts

    /// Creates an enabled account on an existing plan; the email must be new.
    public func createAccount(name: String, email: String, planName: String) async throws -> Account {
        let name = try Validation.displayName(name, what: "account name")
        let email = try Validation.email(email)
        _ = try await plan(named: planName)
        if try await store.account(email: email) != nil {
            throw ServiceError(.duplicateEmail, "an account with email \(email) already exists")
        }
        let date = now()
        let account = Account(
            id: UUID(), name: name, email: email, planName: planName, isEnabled: true, createdAt: date,
            updatedAt: date)
        try await store.insertAccount(account)
        try await audit(account.id, "account.create", "plan \(planName)")
        return account
    }

    /// Every account.
    public func accounts() async throws -> [Account] { try await store.accounts() }

    /// The account named by its id or its email; throws ``ServiceError/Code/unknownAccount``.
    public func account(_ reference: String) async throws -> Account {
        let found: Account?
        if let id = UUID(uuidString: reference) {
            found = try await store.account(id: id)
        } else {
            found = try await store.account(email: reference.trimmingCharacters(in: .whitespaces).lowercased())
        }
        guard let found else {
            throw ServiceError(.unknownAccount, "unknown account '\(Validation.printable(reference))'")
        }
        return found
    }

    /// Moves an account to another existing plan.
    public func setPlan(ofAccount reference: String, to planName: String) async throws -> Account {
        var account = try await account(reference)
        _ = try await plan(named: planName)
        account.planName = planName
        let saved = try await save(account)
        try await audit(account.id, "account.set_plan", "plan \(planName)")
        return saved
    }

    /// Enables or disables an account.
    public func setEnabled(account reference: String, _ isEnabled: Bool) async throws -> Account {
        var account = try await account(reference)
        account.isEnabled = isEnabled
        let saved = try await save(account)
        try await audit(account.id, isEnabled ? "account.enable" : "account.disable", account.email)
        return saved
    }

    private func save(_ account: Account) async throws -> Account {
        var account = account
        account.updatedAt = now()
        guard try await store.updateAccount(account) else {
            throw ServiceError(.unknownAccount, "unknown account '\(account.id.uuidString.lowercased())'")
        }
        return account
    }

    // MARK: API keys

    /// Creates a key for the account; the returned clear text is shown once and never stored.
    public func createAPIKey(account reference: String, label: String?) async throws -> (
        clearText: String, key: APIKey
    ) {
        let account = try await account(reference)
        let label = try label.map { try Validation.displayName($0, what: "key label") }
        let plan = try await plan(named: account.planName)
        for _ in 0..<3 {
            let generated = APIKey.generate(accountID: account.id, label: label, at: now())
            // A prefix collision (32 random bits) is astronomically rare; draw again rather than fail.
            if try await store.apiKey(prefix: generated.key.prefix) == nil {
                guard try await store.insertAPIKey(generated.key, limit: plan.limits.apiKeys) else {
                    throw Self.limitReached(.apiKeys, of: plan, per: "account", hint: "revoke one")
                }
                try await audit(account.id, "key.create", "key \(generated.key.prefix)…")
                return generated
            }
        }
        throw ServiceError(.storage, "could not draw an unused API key prefix")
    }

    /// The account's keys, revoked ones included.
    public func apiKeys(account reference: String) async throws -> [APIKey] {
        let account = try await account(reference)
        return try await store.apiKeys(accountID: account.id)
    }

    /// Revokes the account's key named by its id or its prefix.
    public func revokeAPIKey(account reference: String, key keyReference: String) async throws -> APIKey {
        let account = try await account(reference)
        let keys = try await store.apiKeys(accountID: account.id)
        let wanted = keyReference.lowercased()
        guard
            var key = keys.first(where: {
                $0.id.uuidString.lowercased() == wanted || $0.prefix == wanted
            })
        else {
            throw ServiceError(
                .unknownKey, "account \(account.email) has no API key '\(Validation.printable(keyReference))'")
        }
        guard key.revokedAt == nil else {
            throw ServiceError(.invalidArgument, "API key \(key.prefix)… is already revoked")
        }
        let date = now()
        guard try await store.revokeAPIKey(id: key.id, accountID: account.id, at: date) else {
            throw ServiceError(.unknownKey, "API key \(key.prefix)… is already revoked")
        }
        key.revokedAt = date
        try await audit(account.id, "key.revoke", "key \(key.prefix)…")
        return key
    }

    // MARK: Apps

    /// Adds an app to an account with a fresh token and result key; bundle IDs are required.
    public func addApp(account reference: String, settings: AppSettings) async throws -> App {
        let account = try await account(reference)
        guard settings.bundleIDs != nil else {
            throw ServiceError(.invalidArgument, "an app needs at least one bundle ID")
        }
        let parsed = try settings.parse()
        guard let bundleIDs = parsed.bundleIDs else {
            throw ServiceError(.invalidArgument, "an app needs at least one bundle ID")
        }
        let id = UUID()
        let date = now()
        var app = App(
            id: id, accountID: account.id, token: App.generateToken(),
            name: parsed.name ?? bundleIDs[0].value, bundleIDs: bundleIDs,
            allowedEnvironments: parsed.allowedEnvironments ?? AppDefaults.allowedEnvironments,
            verificationMode: parsed.verificationMode ?? AppDefaults.verificationMode, sharedSecret: nil,
            appStoreServerCredentials: nil, resultCipher: parsed.resultCipher ?? AppDefaults.resultCipher,
            resultKey: try SealedSecret.seal(
                SecureRandom.bytes(32), context: App.secretContext(appID: id, purpose: "result_key"), with: masterKey),
            allowsTestData: parsed.allowsTestData ?? AppDefaults.allowsTestData, isEnabled: parsed.isEnabled ?? true,
            createdAt: date, updatedAt: date)
        apply(answerSettingsOf: parsed, to: &app)
        try apply(secretsOf: parsed, to: &app)
        try checkConsistency(of: app)
        let plan = try await plan(named: account.planName)
        try Self.check(app, within: plan.limits, comparedWith: nil, plan: plan)
        if !settings.sharesBundleIDs { try await checkBundleIDsAreFree(app.bundleIDs, of: app) }
        try await checkPackageNamesAreFree(app.packageNames, of: app)
        guard try await store.insertApp(app, limit: plan.limits.apps) else {
            throw Self.limitReached(.apps, of: plan, per: "account", hint: "remove one")
        }
        try await audit(account.id, "app.create", "app \(app.id.uuidString.lowercased()) (\(app.name))")
        return app
    }

    /// Every app of one account (by id or email), or of all accounts.
    public func apps(account reference: String?) async throws -> [App] {
        guard let reference else { return try await store.apps(accountID: nil) }
        return try await store.apps(accountID: try await account(reference).id)
    }

    /// The app with this token; throws ``ServiceError/Code/unknownApp``.
    public func app(token: String) async throws -> App {
        guard let app = try await store.app(token: token) else {
            throw ServiceError(.unknownApp, "unknown app '\(Validation.printable(token))'")
        }
        return app
    }

    /// Changes the given settings of an app; the rest stay as they are.
    public func updateApp(token: String, settings: AppSettings) async throws -> App {
        var app = try await app(token: token)
        let before = app
        let parsed = try settings.parse()
        if let name = parsed.name { app.name = name }
        if let bundleIDs = parsed.bundleIDs { app.bundleIDs = bundleIDs }
        if let environments = parsed.allowedEnvironments { app.allowedEnvironments = environments }
        if let mode = parsed.verificationMode { app.verificationMode = mode }
        if let cipher = parsed.resultCipher { app.resultCipher = cipher }
        if let allowsTestData = parsed.allowsTestData { app.allowsTestData = allowsTestData }
        if let isEnabled = parsed.isEnabled {
            guard !(isEnabled && app.isLocked) else {
                throw ServiceError(.invalidArgument, "the operator locked this app; only the operator can unlock it")
            }
            app.isEnabled = isEnabled
        }
        apply(answerSettingsOf: parsed, to: &app)
        try apply(secretsOf: parsed, to: &app)
        try checkConsistency(of: app)
        if app.bundleIDs.count > before.bundleIDs.count
            || (app.productCatalog?.count ?? 0) > (before.productCatalog?.count ?? 0)
        {
            let plan = try await plan(named: try await account(app.accountID.uuidString).planName)
            try Self.check(app, within: plan.limits, comparedWith: before, plan: plan)
        }
        // Only a bundle ID the app gains is checked: apps that shared one before the rule stay editable.
        let gained = app.bundleIDs.filter { !before.bundleIDs.contains($0) }
        if !settings.sharesBundleIDs, !gained.isEmpty { try await checkBundleIDsAreFree(gained, of: app) }
        let gainedPackages = app.packageNames.filter { !before.packageNames.contains($0) }
        if !gainedPackages.isEmpty { try await checkPackageNamesAreFree(gainedPackages, of: app) }
        // `confirm` answered `deliver: true` until the backend confirmed; `once` would answer it once more. What confirm
        // mode offered is taken as delivered at the switch, in the switch's own transaction.
        let saved = try await save(app, settlingOffers: before.deliveryMode == .confirm && app.deliveryMode == .once)
        // The names of the settings given, never their values (a secret may be among them).
        try await audit(
            app.accountID, "app.update",
            "app \(app.id.uuidString.lowercased()): \(settings.givenFields.joined(separator: ", "))")
        return saved
    }

    /// The claims policy, delivery mode, product catalog, enrichment, id look-ups, required user, Apple app id and
    /// bound test anchors, where given.
    private func apply(answerSettingsOf parsed: AppSettings.Parsed, to app: inout App) {
        if let names = parsed.packageNames { app.packageNames = names }
        if let push = parsed.googlePubSub { app.googlePubSub = push }
        if let key = parsed.googleLicenseKey { app.googleLicenseKey = key }
        if let policy = parsed.claimsPolicy { app.claimsPolicy = policy }
        if let mode = parsed.deliveryMode { app.deliveryMode = mode }
        if let catalog = parsed.productCatalog { app.catalog = catalog }
        if let enrichment = parsed.enrichment { app.enrichment = enrichment }
        if let idLookups = parsed.idLookups { app.idLookups = idLookups }
        if let requiresUser = parsed.requiresUser { app.requiresUser = requiresUser }
        if let storeUserIDs = parsed.storeUserIDs { app.storeUserIDs = storeUserIDs }
        if let appleAppID = parsed.appleAppID { app.appleAppID = appleAppID }
        if let testAnchors = parsed.testAnchors { app.testAnchors = testAnchors }
        if let policy = parsed.refundPolicy { app.refundAnswers.policy = policy }
        if let consent = parsed.consumptionConsent { app.refundAnswers.customerConsented = consent }
        if let sample = parsed.sampleContentProvided { app.refundAnswers.sampleContentProvided = sample }
    }

    /// Refuses an app whose bundle IDs or product catalog outgrow the plan's limits. A list that does not grow is
    /// kept (an account moved to a smaller plan keeps what it has, and can still change other settings).
    static func check(_ app: App, within limits: PlanLimits, comparedWith before: App?, plan: Plan) throws {
        if app.bundleIDs.count > limits.bundleIDs, app.bundleIDs.count > before?.bundleIDs.count ?? 0 {
            throw limitReached(.bundleIDs, of: plan, per: "app", hint: "give fewer")
        }
        let products = app.productCatalog?.count ?? 0
        if products > limits.products, products > before?.productCatalog?.count ?? 0 {
            throw limitReached(.products, of: plan, per: "app", hint: "give fewer")
        }
    }

    /// The refusal of something the plan's limits do not allow.
    static func limitReached(_ field: PlanLimits.Field, of plan: Plan, per owner: String, hint: String)
        -> ServiceError
    {
        ServiceError(
            .invalidArgument,
            "plan '\(plan.name)' allows \(plan.limits[field]) \(field.words) per \(owner): \(hint), "
                + "or move to a larger plan")
    }

    /// Refuses a bundle ID that another app of the same account holds: each app has a ledger of its own, so two apps
    /// of one bundle would each deliver its purchases once (one app holds every bundle ID of a universal purchase).
    private func checkBundleIDsAreFree(_ bundleIDs: [BundleID], of app: App) async throws {
        for other in try await store.apps(accountID: app.accountID) where other.id != app.id {
            if let shared = bundleIDs.first(where: { id in other.bundleIDs.contains(id) }) {
                throw ServiceError(
                    .invalidArgument,
                    "bundle ID \(shared.value) is already held by the app '\(Validation.printable(other.name))' of this "
                        + "account: each purchase would be delivered once per app"
                )
            }
        }
    }

    /// Refuses an Android package name that another app of the same account holds: each app has a ledger of its own,
    /// so two apps of one package would each deliver its purchases once.
    private func checkPackageNamesAreFree(_ names: [String], of app: App) async throws {
        guard !names.isEmpty else { return }
        for other in try await store.apps(accountID: app.accountID) where other.id != app.id {
            if let shared = names.first(where: { other.packageNames.contains($0) }) {
                throw ServiceError(
                    .invalidArgument,
                    "package name \(shared) is already held by the app '\(Validation.printable(other.name))' of this "
                        + "account: each purchase would be delivered once per app")
            }
        }
    }

    /// Refuses an app whose settings, once applied, contradict each other: enrichment asks the App Store Server
    /// API, so it needs the app's credentials (which also refuses removing them while enrichment is on).
    private func checkConsistency(of app: App) throws {
        if app.refundAnswers.policy != .off {
            guard app.refundAnswers.customerConsented else {
                throw ServiceError(
                    .invalidArgument,
                    "a refund policy answers Apple with consumption data only with the customers' consent: "
                        + "state it (--consumption-consent true) where your terms have it, or keep the policy off")
            }
            guard app.appStoreServerCredentials != nil else {
                throw ServiceError(
                    .invalidArgument, "a refund policy needs the app's App Store Server API credentials")
            }
        }
        if app.enrichment == .on && app.appStoreServerCredentials == nil {
            throw ServiceError(.invalidArgument, "enrichment needs the app's App Store Server API credentials")
        }
    }

    /// Locks an app (it is disabled, and neither its account nor the CLI's `--enable` can enable it) or unlocks it
    /// (it stays disabled until enabled again).
    public func setLocked(token: String, _ isLocked: Bool) async throws -> App {
        var app = try await app(token: token)
        app.isLocked = isLocked
        if isLocked { app.isEnabled = false }
        let saved = try await save(app)
        try await audit(app.accountID, isLocked ? "app.lock" : "app.unlock", "app \(app.id.uuidString.lowercased())")
        return saved
    }

    /// Gives the app a new token; the old one stops working at once.
    public func rotateToken(token: String) async throws -> App {
        var app = try await app(token: token)
        app.token = App.generateToken()
        let saved = try await save(app)
        try await audit(app.accountID, "app.rotate_token", "app \(app.id.uuidString.lowercased())")
        return saved
    }

    /// Gives the app a new result key; results encrypted before stay readable only with the old key.
    public func rotateResultKey(token: String) async throws -> App {
        var app = try await app(token: token)
        app.resultKey = try SealedSecret.seal(
            SecureRandom.bytes(32), context: App.secretContext(appID: app.id, purpose: "result_key"), with: masterKey)
        let saved = try await save(app)
        try await audit(app.accountID, "app.rotate_result_key", "app \(app.id.uuidString.lowercased())")
        return saved
    }

    /// Deletes the app.
    ///
    /// Removing an app deletes its ledger, and an app added again for its bundle IDs would deliver its purchases
    /// again: an app whose ledger holds transactions is removed only when the caller says it forgets them
    /// (`forgettingLedger`: the CLI's `--forget-ledger`, the account screen's confirmation, which says so).
    public func removeApp(token: String, forgettingLedger: Bool = false) async throws -> App {
        let app = try await app(token: token)
        if !forgettingLedger, try await !store.ledgerEntries(LedgerQuery(appID: app.id, limit: 1)).isEmpty {
            throw ServiceError(
                .invalidArgument,
                "the app's ledger holds transactions: removing it forgets them, and an app added again for its bundle "
                    + "IDs would deliver them again (disable the app instead, or say --forget-ledger)")
        }
        guard try await store.deleteApp(id: app.id) else {
            throw ServiceError(.unknownApp, "unknown app '\(Validation.printable(token))'")
        }
        try await audit(app.accountID, "app.remove", "app \(app.id.uuidString.lowercased()) (\(app.name))")
        return app
    }

    /// The app's 256-bit result key in clear.
    public func resultKey(of app: App) throws -> [UInt8] {
        try app.resultKey.open(context: App.secretContext(appID: app.id, purpose: "result_key"), with: masterKey)
    }

    /// The app's shared secret in clear, if it has one.
    public func sharedSecret(of app: App) throws -> String? {
        try app.sharedSecret.map {
            String(
                decoding: try $0.open(
                    context: App.secretContext(appID: app.id, purpose: "shared_secret"), with: masterKey),
                as: UTF8.self)
        }
    }

    /// The app's App Store Server API credentials with the private key in clear (PEM), if it has them.
    public func appleCredentials(of app: App) throws -> (issuerID: String, keyID: String, privateKeyPEM: String)? {
        try app.appStoreServerCredentials.map {
            (
                $0.issuerID, $0.keyID,
                String(
                    decoding: try $0.privateKey.open(
                        context: App.secretContext(appID: app.id, purpose: "apple_private_key"), with: masterKey),
                    as: UTF8.self)
            )
        }
    }

    /// The app's App Store Server API credentials for its first bundle ID (the JWT's `bid`), opened; nil when it has
    /// none.
    public func serverAPICredentials(of app: App) throws -> AppStoreServerAPICredentials? {
        guard let key = try appleCredentials(of: app), let bundleID = app.bundleIDs.first?.value else { return nil }
        return AppStoreServerAPICredentials(
            issuerID: key.issuerID, keyID: key.keyID, privateKeyPEM: key.privateKeyPEM, bundleID: bundleID)
    }

    /// The app's Google Play Developer API credentials with the private key in clear (PEM), if it has them.
    public func googleCredentials(of app: App) throws -> GoogleServiceAccount? {
        try app.googlePlayCredentials.map {
            GoogleServiceAccount(
                clientEmail: $0.clientEmail, keyID: $0.keyID, tokenURI: $0.tokenURI,
                privateKeyPEM: String(
                    decoding: try $0.privateKey.open(
                        context: App.secretContext(appID: app.id, purpose: "google_private_key"), with: masterKey),
                    as: UTF8.self))
        }
    }

    private func apply(secretsOf parsed: AppSettings.Parsed, to app: inout App) throws {
        if let sharedSecret = parsed.sharedSecret {
            app.sharedSecret = try sharedSecret.map {
                try SealedSecret.seal(
                    Array($0.utf8), context: App.secretContext(appID: app.id, purpose: "shared_secret"),
                    with: masterKey)
            }
        }
        if let key = parsed.googleCredentials {
            app.googlePlayCredentials = try key.map {
                GooglePlayCredentials(
                    clientEmail: $0.clientEmail, keyID: $0.keyID, tokenURI: $0.tokenURI,
                    privateKey: try SealedSecret.seal(
                        Array($0.privateKeyPEM.utf8),
                        context: App.secretContext(appID: app.id, purpose: "google_private_key"), with: masterKey))
            }
        }
        if let credentials = parsed.appleCredentials {
            app.appStoreServerCredentials = try credentials.map {
                AppStoreServerCredentials(
                    issuerID: $0.issuerID, keyID: $0.keyID,
                    privateKey: try SealedSecret.seal(
                        Array($0.privateKeyPEM.utf8),
                        context: App.secretContext(appID: app.id, purpose: "apple_private_key"), with: masterKey))
            }
        }
    }

    private func save(_ app: App, settlingOffers: Bool = false) async throws -> App {
        var app = app
        app.updatedAt = now()
        let updated =
            settlingOffers
            ? try await store.updateApp(app, settlingOffersAt: app.updatedAt) : try await store.updateApp(app)
        guard updated else {
            throw ServiceError(.unknownApp, "unknown app '\(app.token)'")
        }
        return app
    }
}
