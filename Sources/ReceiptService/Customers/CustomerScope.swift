import Foundation
import ReceiptCore

/// What a signed-in account may see and change: its own API keys, apps, usage and ledger, each change through the
/// same ``TenancyService`` function as the CLI's and recorded in the audit log. An id of another account's key or
/// app is answered as unknown (the page's 404), never as "forbidden", so ids cannot be probed.
public struct CustomerScope: Sendable {
    let service: CustomerService
    /// The signed-in account.
    public let account: Account
    /// The browser's address, for the audit log.
    public let address: String?

    /// The CLI's functions, acting as the signed-in customer (the audit log records them so).
    private var tenancy: TenancyService {
        service.tenancy.acting(as: AuditActor(name: account.email, address: address))
    }
    private var reference: String { account.id.uuidString }

    // MARK: Plan and usage

    /// The account's plan.
    public func plan() async throws -> Plan { try await tenancy.plan(named: account.planName) }

    /// The account's usage counters of the last `days` UTC days up to `now`'s, oldest first.
    public func usage(days: Int, now: Date) async throws -> [UsageRecord] {
        let today = UsageDay(containing: now)
        let first = UsageDay(containing: now.addingTimeInterval(-Double(days - 1) * 86_400))
        var months = [first.usageMonth]
        if today.usageMonth != first.usageMonth { months.append(today.usageMonth) }
        var records: [UsageRecord] = []
        for month in months {
            records += try await service.store.usage(month: month, accountID: account.id, appID: nil)
        }
        return records.filter { $0.key.day >= first && $0.key.day <= today }
    }

    /// The account's billable calls in `now`'s month, as the quota counts them.
    public func monthCalls(now: Date) async throws -> Int {
        try await service.store.standing(accountID: account.id, month: UsageMonth(containing: now))?.monthCalls ?? 0
    }

    // MARK: API keys

    /// The account's keys, revoked ones included.
    public func keys() async throws -> [APIKey] { try await tenancy.apiKeys(account: reference) }

    /// Creates a key; its clear text is for this answer only.
    public func createKey(label: String?) async throws -> (clearText: String, key: APIKey) {
        try await tenancy.createAPIKey(account: reference, label: label)
    }

    /// Revokes one of the account's keys, named by its id.
    public func revokeKey(id: UUID) async throws -> APIKey {
        try await tenancy.revokeAPIKey(account: reference, key: id.uuidString)
    }

    // MARK: Apps

    /// The account's apps.
    public func apps() async throws -> [App] { try await tenancy.apps(account: reference) }

    /// One of the account's apps by id; another account's (or none) throws ``ServiceError/Code/unknownApp``.
    public func app(id: UUID) async throws -> App {
        guard let app = try await apps().first(where: { $0.id == id }) else {
            throw ServiceError(.unknownApp, "account \(account.email) has no app \(id)")
        }
        return app
    }

    /// Adds an app.
    public func addApp(_ settings: AppSettings) async throws -> App {
        try await tenancy.addApp(account: reference, settings: try Self.customerSettings(settings, of: nil))
    }

    /// Changes the given settings of one of the account's apps.
    public func updateApp(id: UUID, _ settings: AppSettings) async throws -> App {
        let app = try await app(id: id)
        return try await tenancy.updateApp(token: app.token, settings: try Self.customerSettings(settings, of: app))
    }

    /// A customer's settings, refused where they reach into the operator's: the test roots bound to an app, and its
    /// test-data switch while no root is bound to it. A test root signs only for the apps its operator bound it to,
    /// so a customer cannot accept another tenant's test data by ticking a box.
    static func customerSettings(_ settings: AppSettings, of app: App?) throws -> AppSettings {
        guard settings.testAnchors == nil else {
            throw ServiceError(.invalidArgument, "the test roots an app trusts are bound by the operator")
        }
        if let allows = settings.allowsTestData, allows != (app?.allowsTestData ?? AppDefaults.allowsTestData),
            app?.testAnchors.isEmpty ?? true
        {
            throw ServiceError(
                .invalidArgument, "test data is the operator's setting until the operator binds a test root to the app")
        }
        return settings
    }

    /// Gives one of the account's apps a new token.
    public func rotateToken(appID: UUID) async throws -> App {
        try await tenancy.rotateToken(token: try await app(id: appID).token)
    }

    /// Gives one of the account's apps a new result key.
    public func rotateResultKey(appID: UUID) async throws -> App {
        try await tenancy.rotateResultKey(token: try await app(id: appID).token)
    }

    /// The result key of one of the account's apps, in clear (base64); rate limited per account.
    public func revealResultKey(appID: UUID) async throws -> String {
        let app = try await app(id: appID)
        guard service.keyReveals.spend(account.id, at: service.now) else {
            throw ServiceError(.tooManyAttempts, "too many result keys revealed by \(account.email); wait an hour")
        }
        let key = try tenancy.resultKey(of: app)
        try await tenancy.audit(account.id, "app.reveal_result_key", "app \(app.id.uuidString.lowercased())")
        return Data(key).base64EncodedString()
    }

    /// Removes one of the account's apps, forgetting its ledger (the page's confirmation says so).
    public func removeApp(id: UUID) async throws -> App {
        try await tenancy.removeApp(token: try await app(id: id).token, forgettingLedger: true)
    }

    // MARK: Apple's notifications

    /// The latest notifications received for one of the account's apps.
    public func recentNotifications(appID: UUID, limit: Int) async throws -> [ReceivedNotification] {
        try await service.store.recentNotifications(appID: try await app(id: appID).id, limit: limit)
    }

    /// Spends one of the account's integration actions of the hour (``CustomerService/integrationActionsPerHour``).
    private func spendIntegrationAction() throws {
        guard service.integrationActions.spend(account.id, at: service.now) else {
            throw ServiceError(.tooManyAttempts, "too many test and recovery actions by \(account.email); wait an hour")
        }
    }

    /// The tools for Apple's side, or a refusal when this server has none.
    private func setup() throws -> NotificationSetup {
        guard let setup = service.notificationSetup else {
            throw ServiceError(.invalidArgument, "this server does not reach the App Store Server API")
        }
        return setup
    }

    /// Apple's actions on the customers of one of the account's apps (docs/app-store-server-api.md, "Actions on a
    /// customer"), acting as the signed-in customer: each spends one of the account's integration actions, and is
    /// audited as the customer's.
    public func appleActions(appID: UUID) async throws -> (actions: AppleActions, app: App) {
        let app = try await app(id: appID)
        try spendIntegrationAction()
        return (
            AppleActions(storeKit: try setup().storeKit, tenancy: tenancy, requester: "account \(account.email)"), app
        )
    }

    /// The latest renewal-date extensions of one of the account's apps, newest first.
    public func renewalExtensions(appID: UUID, limit: Int) async throws -> [RenewalExtensionRecord] {
        try await service.store.renewalExtensions(appID: try await app(id: appID).id, limit: limit)
    }

    /// Has Apple send a test notification to one of the account's apps; Apple's token.
    public func requestTestNotification(appID: UUID, environment: StoreEnvironment) async throws -> String {
        let app = try await app(id: appID)
        try spendIntegrationAction()
        let token = try await setup().requestTest(app, environment: environment, tenancy: tenancy)
        try await tenancy.audit(
            account.id, "notifications.test", "app \(app.id.uuidString.lowercased()), \(environment.rawValue)")
        return token
    }

    /// Apple's attempts at a test notification of one of the account's apps.
    public func testNotificationStatus(appID: UUID, token: String, environment: StoreEnvironment) async throws
        -> [String]
    {
        try await setup().testStatus(try await app(id: appID), token: token, environment: environment, tenancy: tenancy)
    }

    /// Takes in what Apple could not deliver to one of the account's apps in the last `days` days (1-180).
    public func recoverNotifications(appID: UUID, days: Int) async throws -> NotificationReconciler.Report {
        guard (1...180).contains(days) else { throw ServiceError(.invalidArgument, "recover from 1 to 180 days") }
        let app = try await app(id: appID)
        try spendIntegrationAction()
        let report = try await setup().recover(app, days: days, tenancy: tenancy)
        try await tenancy.audit(
            account.id, "notifications.recover", "app \(app.id.uuidString.lowercased()): \(report.recorded) recorded")
        return report
    }

    // MARK: Webhooks

    /// The endpoints of one of the account's apps.
    public func webhookEndpoints(appID: UUID) async throws -> [WebhookEndpoint] {
        try await tenancy.webhookEndpoints(token: try await app(id: appID).token)
    }

    /// Adds an endpoint (https to a public address, unless the operator allows private ones); its secret is for this
    /// answer only.
    public func addWebhookEndpoint(appID: UUID, url: String, eventTypes: [String]) async throws -> (
        endpoint: WebhookEndpoint, secret: String
    ) {
        try await tenancy.addWebhookEndpoint(
            token: try await app(id: appID).token, url: url, environments: [], eventTypes: eventTypes,
            forwardsSignedPayload: false)
    }

    /// Pauses or resumes an endpoint of one of the account's apps.
    public func setWebhookEndpoint(appID: UUID, id: UUID, enabled: Bool) async throws -> WebhookEndpoint {
        try await tenancy.setWebhookEndpoint(token: try await app(id: appID).token, id: id, enabled: enabled)
    }

    /// Removes an endpoint of one of the account's apps, with its pending deliveries.
    public func removeWebhookEndpoint(appID: UUID, id: UUID) async throws {
        try await tenancy.removeWebhookEndpoint(token: try await app(id: appID).token, id: id)
    }

    /// Gives an endpoint a new secret, shown once; the previous one signs too for `graceHours`.
    public func rotateWebhookSecret(appID: UUID, id: UUID, graceHours: Int) async throws -> (
        endpoint: WebhookEndpoint, secret: String
    ) {
        try await tenancy.rotateWebhookSecret(token: try await app(id: appID).token, id: id, graceHours: graceHours)
    }

    /// Queues a test event for one endpoint.
    public func queueTestWebhookEvent(appID: UUID, id: UUID) async throws -> WebhookEvent {
        let token = try await app(id: appID).token
        try spendIntegrationAction()
        return try await tenancy.queueTestWebhookEvent(token: token, id: id)
    }

    /// The app's latest events with their deliveries (only those with a dead delivery, with `deadOnly`).
    public func webhookEvents(appID: UUID, deadOnly: Bool, limit: Int) async throws -> [WebhookEventRecord] {
        try await tenancy.webhookEvents(
            token: try await app(id: appID).token, state: deadOnly ? .dead : nil, since: nil, eventIDs: nil,
            limit: limit)
    }

    /// Redelivers one event (`eventID`), or every dead delivery of the app (nil); the number queued.
    public func redeliverWebhookEvents(appID: UUID, eventID: UUID?) async throws -> Int {
        try await tenancy.redeliverWebhookEvents(
            token: try await app(id: appID).token, state: eventID == nil ? .dead : nil, since: nil,
            eventIDs: eventID.map { [$0] }, limit: 10_000)
    }

    // MARK: Ledger

    /// Entries of one of the account's apps' ledgers, by user or original transaction id; at most `limit`.
    public func ledgerEntries(appID: UUID, user: String?, originalTransactionID: String?, limit: Int) async throws
        -> [LedgerEntry]
    {
        try await tenancy.ledgerEntries(
            token: try await app(id: appID).token, user: user, originalTransactionID: originalTransactionID,
            since: nil, limit: limit)
    }
}

extension CustomerScope {
    /// What a user of one of the account's apps (or the holder of an original transaction) may use now, with the
    /// ledger rows it is computed from (for the customer page's timeline).
    public func customer(
        appID: UUID, user: String?, originalTransactionID: String?, environment: StoreEnvironment?
    ) async throws -> (view: CustomerView, rows: [LedgerEntry]) {
        try await tenancy.customer(
            token: try await app(id: appID).token, user: user, originalTransactionID: originalTransactionID,
            environment: environment)
    }
}
