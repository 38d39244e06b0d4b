import Foundation
import ReceiptCore
import ReceiptService

/// The ledger routes (docs/api.md, "Transactions"): `POST /api/transactions` looks up the app's ledger, and
/// `POST /api/transactions/delivered` confirms deliveries. Both authenticate and pass the plan's gate as `/api`
/// does; a look-up is metered as an endpoint of its own, a confirmation is not billed.
extension VerificationEndpoint {
    /// The description of a look-up's answer.
    static let lookUpDescription = "The app's ledger rows"
    /// The description of a confirmation's answer.
    static let confirmedDescription = "Deliveries confirmed"
    /// Rows of a look-up page when the request names no `limit`.
    static let defaultPageSize = 100

    /// One page of the app's ledger rows for a user or an original transaction, with `next_cursor` when more follow.
    func lookUp(_ request: VerificationRequest, for caller: Caller) async throws -> VerificationOutcome {
        let user = request.appUserID.flatMap { $0.isEmpty ? nil : $0 }
        let original = request.originalTransactionID.flatMap { $0.isEmpty ? nil : $0 }
        guard user != nil || original != nil else {
            throw HTTPFailure(
                status: ResponseStatus.badRequest, reason: "a look-up needs app_user_id or original_transaction_id")
        }
        var after: LedgerPosition?
        if let cursor = request.cursor, !cursor.isEmpty {
            guard let position = LedgerPosition(cursor: cursor) else {
                throw HTTPFailure(status: ResponseStatus.badRequest, reason: "cursor is not one this service gave")
            }
            after = position
        }
        let limit = request.limit ?? Self.defaultPageSize
        // One row more than asked tells whether another page follows.
        let query = LedgerQuery(
            appID: caller.app.id, user: user, originalTransactionID: original, after: after, limit: limit + 1)
        let rows = try await ledger.entries(query)
        let page = rows.prefix(limit)
        var body = JSONObject(capacity: 5)
        body.append("status", .integer(0))
        body.append("description", .string(Self.lookUpDescription))
        body.append("transactions", .array(page.map { JSONValue.object($0.json) }))
        var seen = Set<String>()
        let originals = page.map(\.transaction.originalTransactionID).filter { seen.insert($0).inserted }
        let known = try await statuses.statuses(appID: caller.app.id, originals: originals)
        body.append("subscriptions", .array(known.map { .object($0.json) }))
        if rows.count > limit, let last = page.last {
            body.append("next_cursor", .string(LedgerPosition(of: last).cursor))
        }
        return VerificationOutcome(status: 0, body: body, source: .local)
    }

    /// Marks the named transactions delivered (idempotent); answers each found one with its `delivered_at` (and its
    /// `apple_finish` for an app with App Store Server API credentials) and names the ids the app's ledger does not
    /// hold.
    func confirmDeliveries(_ request: VerificationRequest, for caller: Caller) async throws -> VerificationOutcome {
        guard let ids = request.transactionIDs, !ids.isEmpty else {
            throw HTTPFailure(status: ResponseStatus.badRequest, reason: "transaction_ids is required")
        }
        let environment = try request.namedEnvironment()
        let entries = try await ledger.confirmDelivery(
            app: caller.app, environment: environment, transactionIDs: ids)
        var found = Set<String>()
        var confirmed: [JSONValue] = []
        for entry in entries where found.insert(entry.transaction.transactionID).inserted {
            var object = JSONObject(capacity: 2)
            object.append("transaction_id", .string(entry.transaction.transactionID))
            if let delivered = entry.deliveredAt {
                object.append("delivered_at", .string(LedgerEntry.rfc3339(delivered)))
            }
            entry.appendAppleFinish(to: &object)
            confirmed.append(.object(object))
        }
        var unknown = Set<String>()
        let missing = ids.filter { !found.contains($0) && unknown.insert($0).inserted }
        var body = JSONObject(capacity: 4)
        body.append("status", .integer(0))
        body.append("description", .string(Self.confirmedDescription))
        body.append("transactions", .array(confirmed))
        body.append("unknown_transaction_ids", .array(missing.map { .string($0) }))
        return VerificationOutcome(status: 0, body: body, source: .local)
    }
}

extension VerificationRequest {
    /// The request's `environment` (Production, Sandbox or Xcode); nil when it names none; a 400 otherwise.
    func namedEnvironment() throws -> StoreEnvironment? {
        guard let name = environment, !name.isEmpty else { return nil }
        guard let named = StoreEnvironment(configurationName: name) else {
            throw HTTPFailure(
                status: ResponseStatus.badRequest, reason: "environment must be Production, Sandbox or Xcode")
        }
        return named
    }
}

/// `POST /api/transactions/consumption` (docs/notifications.md, "Refund requests"): the backend reports how much of
/// purchases was used (and, if it knows better than the ledger, whether they were delivered), for the app's answers
/// to Apple's refund requests. Admitted as a ledger look-up, never billed.
extension VerificationEndpoint {
    /// The description of the answer.
    static let consumptionDescription = "Consumption recorded"

    func reportConsumption(_ request: VerificationRequest, for caller: Caller) async throws -> VerificationOutcome {
        func refuse(_ reason: String) -> HTTPFailure { .badRequest(saying: reason) }
        let ids = request.transactionIDs ?? request.transactionID.map { [$0] } ?? []
        guard !ids.isEmpty else { throw refuse("transaction_ids (or transaction_id) is required") }
        var consumed: Int?
        if let text = request.consumptionPercentage, !text.isEmpty {
            guard let value = Int(text), (0...100_000).contains(value) else {
                throw refuse(
                    "consumption_percentage must be a whole number from 0 to 100000 (milliunits: 50000 is 50 %)")
            }
            consumed = value
        }
        var delivery: ConsumptionDeliveryStatus?
        if let text = request.deliveryStatus, !text.isEmpty {
            guard let status = ConsumptionDeliveryStatus(rawValue: text) else {
                let names = ConsumptionDeliveryStatus.allCases.map(\.rawValue).joined(separator: ", ")
                throw refuse("delivery_status must be one of \(names)")
            }
            delivery = status
        }
        guard consumed != nil || delivery != nil else {
            throw refuse("consumption_percentage or delivery_status is required")
        }
        let environment = try request.namedEnvironment()
        let report = ConsumptionReport(consumedMilli: consumed, deliveryStatus: delivery, reportedAt: Date())
        let found = try await ledger.reportConsumption(
            app: caller.app, environment: environment, transactionIDs: ids, report: report)
        var unknown = Set<String>()
        var body = JSONObject(capacity: 4)
        body.append("status", .integer(0))
        body.append("description", .string(Self.consumptionDescription))
        body.append("transaction_ids", .array(ids.filter { found.contains($0) }.map { .string($0) }))
        body.append(
            "unknown_transaction_ids",
            .array(ids.filter { !found.contains($0) && unknown.insert($0).inserted }.map { .string($0) }))
        return VerificationOutcome(status: 0, body: body, source: .local)
    }
}
