import Foundation
import ReceiptCore
import ReceiptService
import Synchronization

/// A real store (SQLite, from the caller) seen through a window that counts the reads a request can cause and can
/// hold them, as a database that stops answering would: the tests of what strangers and outages cost.
final class InstrumentedStore: TenancyStore, UsageStore, LedgerStore, SessionStore, AppleFinishStore,
    GoogleAcknowledgementStore, GoogleVoidedStore, GoogleNotificationStore,
    ConsumptionAnswerStore, RenewalExtensionStore, NotificationStore, WebhookStore, RetentionStore, ReconciliationStore,
    ExportStore
{
    let base: any DataStore

    private struct State {
        var counts: [String: Int] = [:]
        var stalled = false
        var waiting: [CheckedContinuation<Void, Never>] = []
    }

    private let state = Mutex(State())

    init(_ base: any DataStore) {
        self.base = base
    }

    /// How many times `operation` was called.
    func count(_ operation: String) -> Int { state.withLock { $0.counts[operation, default: 0] } }

    /// Every counted call, summed.
    var totalCount: Int { state.withLock { $0.counts.values.reduce(0, +) } }

    /// From now on, counted calls wait until ``resume()``: the database stopped answering.
    func stall() { state.withLock { $0.stalled = true } }

    /// The database answers again; waiting calls go on.
    func resume() {
        let waiting = state.withLock { state in
            state.stalled = false
            defer { state.waiting = [] }
            return state.waiting
        }
        for continuation in waiting { continuation.resume() }
    }

    private func enter(_ operation: String) async {
        let stalled = state.withLock { state in
            state.counts[operation, default: 0] += 1
            return state.stalled
        }
        guard stalled else { return }
        await withCheckedContinuation { continuation in
            let stillStalled = state.withLock { state in
                if state.stalled { state.waiting.append(continuation) }
                return state.stalled
            }
            if !stillStalled { continuation.resume() }
        }
    }

    // The reads on a request's path: counted, and held while stalled.
    func record(_ recording: LedgerRecording) async throws -> [LedgerRecorded] {
        await enter("record")
        return try await base.record(recording)
    }

    func plans() async throws -> [Plan] {
        await enter("plans")
        return try await base.plans()
    }
    func apiKey(prefix: String) async throws -> APIKey? {
        await enter("apiKey")
        return try await base.apiKey(prefix: prefix)
    }
    func account(id: UUID) async throws -> Account? {
        await enter("account")
        return try await base.account(id: id)
    }
    func recordAPIKeyUse(id: UUID, at date: Date) async throws {
        await enter("recordAPIKeyUse")
        try await base.recordAPIKeyUse(id: id, at: date)
    }
    func app(id: UUID) async throws -> App? { try await base.app(id: id) }
    func app(token: String) async throws -> App? {
        await enter("app")
        return try await base.app(token: token)
    }
    func standing(accountID: UUID, month: UsageMonth) async throws -> AccountStanding? {
        await enter("standing")
        return try await base.standing(accountID: accountID, month: month)
    }
    func addUsage(_ counts: [UsageKey: Int], grants: GrantRenewal?) async throws {
        await enter("addUsage")
        try await base.addUsage(counts, grants: grants)
    }
    func claimQuota(_ claim: QuotaClaim, now: Date) async throws -> Int {
        await enter("claimQuota")
        return try await base.claimQuota(claim, now: now)
    }
    func releaseQuotaGrants(server: UUID) async throws { try await base.releaseQuotaGrants(server: server) }

    // The rest passes through.
    func migrate() async throws { try await base.migrate() }
    func claimMasterKeyCheck(_ value: String) async throws -> String { try await base.claimMasterKeyCheck(value) }
    func plan(named name: String) async throws -> Plan? { try await base.plan(named: name) }
    func savePlan(_ plan: Plan) async throws { try await base.savePlan(plan) }
    func insertAccount(_ account: Account) async throws { try await base.insertAccount(account) }
    func updateAccount(_ account: Account) async throws -> Bool { try await base.updateAccount(account) }
    func accounts() async throws -> [Account] { try await base.accounts() }
    func account(email: String) async throws -> Account? { try await base.account(email: email) }
    func insertAPIKey(_ key: APIKey, limit: Int) async throws -> Bool { try await base.insertAPIKey(key, limit: limit) }
    func apiKeys(accountID: UUID) async throws -> [APIKey] { try await base.apiKeys(accountID: accountID) }
    func revokeAPIKey(id: UUID, accountID: UUID, at date: Date) async throws -> Bool {
        try await base.revokeAPIKey(id: id, accountID: accountID, at: date)
    }
    func insertApp(_ app: App, limit: Int) async throws -> Bool { try await base.insertApp(app, limit: limit) }
    func updateApp(_ app: App) async throws -> Bool { try await base.updateApp(app) }
    func deleteApp(id: UUID) async throws -> Bool { try await base.deleteApp(id: id) }
    func apps(accountID: UUID?) async throws -> [App] { try await base.apps(accountID: accountID) }
    func changeMarker() -> Int? { base.changeMarker() }
    func ledgerChangeMarker() -> Int? { base.ledgerChangeMarker() }
    func dueCustomers(dueBy now: Date, limit: Int) async throws -> [DueCustomer] {
        try await base.dueCustomers(dueBy: now, limit: limit)
    }
    func tellCustomers(
        appID: UUID, environment: StoreEnvironment, users: [String], catalog: [CatalogProduct]?, at now: Date
    ) async throws -> [WebhookEvent] {
        try await base.tellCustomers(appID: appID, environment: environment, users: users, catalog: catalog, at: now)
    }
    func statusChangeMarker() -> Int? { base.statusChangeMarker() }
    func customerChangeMarker() -> Int? { base.customerChangeMarker() }
    func insertSession(_ session: AccountSession) async throws { try await base.insertSession(session) }
    func session(tokenHash: [UInt8]) async throws -> AccountSession? {
        await enter("session")
        return try await base.session(tokenHash: tokenHash)
    }
    func touchSession(id: UUID, at date: Date) async throws { try await base.touchSession(id: id, at: date) }
    func deleteSession(id: UUID) async throws -> Bool { try await base.deleteSession(id: id) }
    func deleteSessions(accountID: UUID) async throws -> Int { try await base.deleteSessions(accountID: accountID) }
    func insertSignInLink(_ link: SignInLink) async throws { try await base.insertSignInLink(link) }
    func useSignInLink(tokenHash: [UInt8], at date: Date) async throws -> UUID? {
        await enter("useSignInLink")
        return try await base.useSignInLink(tokenHash: tokenHash, at: date)
    }
    func accountID(issuer: String, subject: String) async throws -> UUID? {
        try await base.accountID(issuer: issuer, subject: subject)
    }
    func signInLinkAccount(tokenHash: [UInt8], at date: Date) async throws -> UUID? {
        try await base.signInLinkAccount(tokenHash: tokenHash, at: date)
    }

    func linkFirstIdentity(_ identity: AccountIdentity) async throws -> Bool {
        try await base.linkFirstIdentity(identity)
    }
    func signUp(_ account: Account, identity: AccountIdentity) async throws {
        try await base.signUp(account, identity: identity)
    }
    func appendAudit(_ entry: AuditEntry) async throws { try await base.appendAudit(entry) }
    func auditEntries(accountID: UUID?, limit: Int) async throws -> [AuditEntry] {
        try await base.auditEntries(accountID: accountID, limit: limit)
    }
    func confirmDelivery(
        appID: UUID, environment: StoreEnvironment?, transactionIDs: [String], at date: Date,
        finishingWithApple: Bool
    )
        async throws -> [LedgerEntry]
    {
        try await base.confirmDelivery(
            appID: appID, environment: environment, transactionIDs: transactionIDs, at: date,
            finishingWithApple: finishingWithApple)
    }
    func updateApp(_ app: App, settlingOffersAt date: Date) async throws -> Bool {
        try await base.updateApp(app, settlingOffersAt: date)
    }
    func claimAppleFinishes(dueBy now: Date, lease: Duration, limit: Int) async throws -> [AppleFinishTask] {
        try await base.claimAppleFinishes(dueBy: now, lease: lease, limit: limit)
    }
    func claimGoogleAcknowledgements(dueBy now: Date, lease: Duration, limit: Int) async throws
        -> [GoogleAcknowledgementTask]
    {
        try await base.claimGoogleAcknowledgements(dueBy: now, lease: lease, limit: limit)
    }
    func recordGoogleAcknowledgement(_ task: GoogleAcknowledgementTask, outcome: AppleFinishOutcome, at date: Date)
        async throws
    {
        try await base.recordGoogleAcknowledgement(task, outcome: outcome, at: date)
    }
    func ensureVoidedCursors(_ packages: [(appID: UUID, packageName: String)], at now: Date) async throws {
        try await base.ensureVoidedCursors(packages, at: now)
    }
    func claimVoidedCursors(dueBy now: Date, lease: Duration, limit: Int) async throws -> [VoidedCursor] {
        try await base.claimVoidedCursors(dueBy: now, lease: lease, limit: limit)
    }
    func saveVoidedCursor(_ cursor: VoidedCursor, nextRunAt: Date, at now: Date) async throws {
        try await base.saveVoidedCursor(cursor, nextRunAt: nextRunAt, at: now)
    }

    func keepVoidedPurchase(appID: UUID, orderID: String, void: PurchaseVoid, at now: Date) async throws {
        try await base.keepVoidedPurchase(appID: appID, orderID: orderID, void: void, at: now)
    }

    func voidedOrders(appID: UUID, keptSince date: Date, limit: Int) async throws -> [String] {
        try await base.voidedOrders(appID: appID, keptSince: date, limit: limit)
    }
    func isGoogleNotificationRecorded(appID: UUID, messageID: String) async throws -> Bool {
        try await base.isGoogleNotificationRecorded(appID: appID, messageID: messageID)
    }
    func recordGoogleNotification(_ notification: GoogleNotificationRecord, events: [WebhookEvent]) async throws
        -> Bool
    {
        try await base.recordGoogleNotification(notification, events: events)
    }
    func pendingGoogleAcknowledgements(purchasedBefore date: Date) async throws -> Int {
        try await base.pendingGoogleAcknowledgements(purchasedBefore: date)
    }
    func recordAppleFinish(_ task: AppleFinishTask, outcome: AppleFinishOutcome, at date: Date) async throws {
        try await base.recordAppleFinish(task, outcome: outcome, at: date)
    }
    func claimConsumptionAnswers(dueBy now: Date, lease: Duration, limit: Int) async throws
        -> [ConsumptionAnswerTask]
    {
        try await base.claimConsumptionAnswers(dueBy: now, lease: lease, limit: limit)
    }
    func consumptionFacts(of task: ConsumptionAnswerTask) async throws -> ConsumptionRules.Facts {
        try await base.consumptionFacts(of: task)
    }
    func recordConsumptionAnswer(
        _ task: ConsumptionAnswerTask, outcome: ConsumptionAnswerOutcome, event: WebhookEvent?, at date: Date
    ) async throws {
        try await base.recordConsumptionAnswer(task, outcome: outcome, event: event, at: date)
    }
    func reportConsumption(
        appID: UUID, environment: StoreEnvironment?, transactionIDs: [String], report: ConsumptionReport
    ) async throws -> Set<String> {
        try await base.reportConsumption(
            appID: appID, environment: environment, transactionIDs: transactionIDs, report: report)
    }
    func consumptionAnswers(appID: UUID, limit: Int) async throws -> [ConsumptionAnswerStatus] {
        try await base.consumptionAnswers(appID: appID, limit: limit)
    }
    func beginRenewalExtension(_ record: RenewalExtensionRecord) async throws -> RenewalExtensionRecord? {
        try await base.beginRenewalExtension(record)
    }
    func saveRenewalExtension(_ record: RenewalExtensionRecord) async throws {
        try await base.saveRenewalExtension(record)
    }
    func renewalExtensions(appID: UUID, limit: Int) async throws -> [RenewalExtensionRecord] {
        try await base.renewalExtensions(appID: appID, limit: limit)
    }
    func claimRenewalExtensionPolls(dueBy now: Date, lease: Duration, limit: Int) async throws
        -> [RenewalExtensionRecord]
    {
        try await base.claimRenewalExtensionPolls(dueBy: now, lease: lease, limit: limit)
    }
    func ledgerEntries(_ query: LedgerQuery) async throws -> [LedgerEntry] { try await base.ledgerEntries(query) }
    func recordNotification(_ record: NotificationRecord) async throws -> NotificationRecorded {
        await enter("recordNotification")
        return try await base.recordNotification(record)
    }
    func subscriptionStatuses(appID: UUID, originalTransactionIDs: [String]) async throws -> [SubscriptionStatus] {
        try await base.subscriptionStatuses(appID: appID, originalTransactionIDs: originalTransactionIDs)
    }
    func expireSubscriptions(dueBy now: Date, limit: Int) async throws -> Int {
        try await base.expireSubscriptions(dueBy: now, limit: limit)
    }
    func knownNotifications(appID: UUID, uuids: [String]) async throws -> Set<String> {
        try await base.knownNotifications(appID: appID, uuids: uuids)
    }
    func recentNotifications(appID: UUID, limit: Int) async throws -> [ReceivedNotification] {
        try await base.recentNotifications(appID: appID, limit: limit)
    }
    func updateWebhookEndpoint(_ endpoint: WebhookEndpoint) async throws -> Bool {
        try await base.updateWebhookEndpoint(endpoint)
    }
    func addWebhookEndpoint(_ endpoint: WebhookEndpoint, limit: Int) async throws -> Bool {
        try await base.addWebhookEndpoint(endpoint, limit: limit)
    }
    func webhookEndpoints(appID: UUID) async throws -> [WebhookEndpoint] {
        try await base.webhookEndpoints(appID: appID)
    }
    func removeWebhookEndpoint(id: UUID, appID: UUID) async throws -> Bool {
        try await base.removeWebhookEndpoint(id: id, appID: appID)
    }
    func recordEvents(_ events: [WebhookEvent]) async throws { try await base.recordEvents(events) }
    func claimReconciliation(appID: UUID, now: Date, until: Date) async throws -> ReconciliationState? {
        try await base.claimReconciliation(appID: appID, now: now, until: until)
    }

    func saveReconciliation(appID: UUID, cursor: String?, now: Date, leaseUntil: Date?) async throws {
        try await base.saveReconciliation(appID: appID, cursor: cursor, now: now, leaseUntil: leaseUntil)
    }

    func purge(_ kind: PurgeKind, before: Date, limit: Int) async throws -> Int {
        try await base.purge(kind, before: before, limit: limit)
    }

    func claimWebhookDeliveries(dueBy now: Date, lease: Duration, limit: Int, perEndpoint: Int) async throws
        -> [WebhookDeliveryTask]
    {
        try await base.claimWebhookDeliveries(dueBy: now, lease: lease, limit: limit, perEndpoint: perEndpoint)
    }
    func recordWebhookDeliveries(_ attempts: [WebhookAttempt], at date: Date, breaker: WebhookCircuitBreaker)
        async throws
    {
        try await base.recordWebhookDeliveries(attempts, at: date, breaker: breaker)
    }
    func webhookEvents(_ query: WebhookEventQuery) async throws -> [WebhookEventRecord] {
        try await base.webhookEvents(query)
    }
    func redeliverWebhookEvents(_ query: WebhookEventQuery, at date: Date) async throws -> Int {
        try await base.redeliverWebhookEvents(query, at: date)
    }
    func webhookBacklog() async throws -> (pending: Int, oldest: Date?) { try await base.webhookBacklog() }
    func exportClaimants(appID: UUID, range: ExportRange, after: (String, String)?, limit: Int) async throws
        -> [ExportClaimant]
    { try await base.exportClaimants(appID: appID, range: range, after: after, limit: limit) }
    func exportEvents(appID: UUID, range: ExportRange, after: (Int64, UUID)?, limit: Int) async throws
        -> [(event: WebhookEvent, microseconds: Int64)]
    { try await base.exportEvents(appID: appID, range: range, after: after, limit: limit) }
    func exportUsage(appID: UUID, fromDay: String?, toDay: String?, after: [String]?, limit: Int) async throws
        -> [ExportUsageRow]
    { try await base.exportUsage(appID: appID, fromDay: fromDay, toDay: toDay, after: after, limit: limit) }
    func setClaim(appID: UUID, originalTransactionID: String, user: String?, at date: Date) async throws -> Bool {
        try await base.setClaim(appID: appID, originalTransactionID: originalTransactionID, user: user, at: date)
    }
    func usage(month: UsageMonth, accountID: UUID?, appID: UUID?) async throws -> [UsageRecord] {
        try await base.usage(month: month, accountID: accountID, appID: appID)
    }
    func monthlyCalls(month: UsageMonth) async throws -> [UUID: Int] { try await base.monthlyCalls(month: month) }
}
