import Foundation
import ReceiptCore

/// `customer.entitlements_changed` (docs/webhooks.md): told in the transaction that changes a customer's facts, and
/// by the scheduler when an expiry or a grace period's end passes, at most once per change.
///
/// What was last told of each user (their entitlements in the answer form) is kept per app and environment, locked
/// while a transaction recomputes it: of two servers recording for one user, the second waits and compares with what
/// the first told, so a change is told once.
public enum CustomerChanges {
    /// The most ledger rows of a user read to tell a change.
    public static let maximumTransactions = 10_000

    /// Whether `catalog` grants any entitlement (else there is nothing to tell, and nothing is read).
    public static func grantsEntitlements(_ catalog: [CatalogProduct]?) -> Bool {
        catalog?.contains { !$0.entitlements.isEmpty && $0.kind != .consumable } ?? false
    }

    /// Recomputes the entitlements of `users` (of the writer's app and environment) at `now` under `catalog`; saves
    /// each and returns an event for each user whose entitlements differ from what was last told.
    public static func events(
        for users: Set<String>, appID: UUID, environment: StoreEnvironment, catalog: [CatalogProduct]?,
        now: Date, with writer: some LedgerWriting, notificationUUID: String? = nil
    ) async throws -> [WebhookEvent] {
        guard grantsEntitlements(catalog) else { return [] }
        var events: [WebhookEvent] = []
        // Sorted, so two servers lock the same users in one order.
        for user in users.sorted() {
            let told = try await writer.lockCustomerSnapshot(of: user, at: now)
            let facts = try await writer.customerFacts(of: user, limit: maximumTransactions)
            let view = EntitlementRules.view(
                appUserID: user, environment: environment, entries: facts.entries, statuses: facts.statuses,
                catalog: catalog, now: now.millisecondsSince1970)
            let after = JSONValue.array(view.entitlements.map { .object($0.json) })
            let text = after.encodedString
            let before = try told.map { try JSONParser.parse(Array($0.utf8)) } ?? .array([])
            let sequence = try await writer.saveCustomerSnapshot(
                of: user, entitlements: text, nextChangeAt: view.nextChangeAt, changed: before != after, at: now)
            guard before != after else { continue }
            var data = JSONObject(capacity: 6)
            data.append("app_user_id", .string(user))
            // Increments under the snapshot's lock: a receiver applies an event only when its sequence is higher than
            // the last it applied, whatever order deliveries and retries arrive in (money review M10).
            data.append("sequence", .integer(sequence))
            data.append("environment", .string(environment.rawValue))
            data.append("changed", .array(changedNames(before, after).map { .string($0) }))
            data.append("before", before)
            data.append("after", after)
            events.append(
                WebhookEvent(
                    appID: appID, environment: environment, kind: .customerEntitlementsChanged, createdAt: now,
                    data: data, notificationUUID: notificationUUID))
        }
        return events
    }

    /// What ``LedgerStore/tellCustomers(appID:environment:users:catalog:at:)`` does inside its transaction.
    public static func tell(
        _ users: [String], appID: UUID, environment: StoreEnvironment, catalog: [CatalogProduct]?, at now: Date,
        with writer: some LedgerWriting
    ) async throws -> [WebhookEvent] {
        guard grantsEntitlements(catalog) else {
            try await writer.clearCustomerDue(of: users.sorted())
            return []
        }
        let events = try await events(
            for: Set(users), appID: appID, environment: environment, catalog: catalog, now: now, with: writer)
        try await writer.insertLedgerEvents(events)
        return events
    }

    /// The names of the entitlements that differ between two lists, in order (those of `after` first).
    static func changedNames(_ before: JSONValue, _ after: JSONValue) -> [String] {
        func byName(_ list: JSONValue) -> [(String, JSONValue)] {
            (list.arrayValue ?? []).compactMap { item in item["name"]?.stringValue.map { ($0, item) } }
        }
        let old = Dictionary(byName(before), uniquingKeysWith: { first, _ in first })
        let new = byName(after)
        var names = new.filter { old[$0.0] != $0.1 }.map(\.0)
        let kept = Set(new.map(\.0))
        names += byName(before).map(\.0).filter { !kept.contains($0) }
        return names
    }
}
