import Foundation
import Logging
import ReceiptCore
import ReceiptService
import ReceiptStore
import TestSupport
import Testing

/// Notifications, subscription statuses, webhook endpoints and the outbox in both stores: each notification once,
/// its effects ordered by signed date, its events with one delivery per endpoint that takes them, deliveries claimed
/// once, retried, dead and redelivered.
@Suite struct NotificationStoreContractTests {
    static let start = Date(timeIntervalSince1970: 1_790_000_000)
    static let day: Int64 = 86_400_000
    static var startMilliseconds: Int64 { start.millisecondsSince1970 }

    /// A subscription transaction's payload, as Apple signs it.
    static func transaction(
        _ id: String, original: String = "1000", expires: Int64, revokedAt: Int64? = nil,
        type: String =
            "Auto-Renewable Subscription"
    ) -> JSONObject {
        var object = JSONObject(capacity: 12)
        object.append("transactionId", .string(id))
        object.append("originalTransactionId", .string(original))
        object.append("productId", .string("com.example.monthly"))
        object.append("purchaseDate", .integer(expires - 30 * day))
        object.append("originalPurchaseDate", .integer(startMilliseconds - 90 * day))
        object.append("expiresDate", .integer(expires))
        object.append("quantity", .integer(1))
        object.append("type", .string(type))
        object.append("inAppOwnershipType", .string("PURCHASED"))
        if let revokedAt {
            object.append("revocationDate", .integer(revokedAt))
            object.append("revocationReason", .integer(1))
            object.append("revocationType", .string("REFUND_FULL"))
        }
        return object
    }

    /// A verified notification's decoded parts.
    static func notification(
        _ type: String, subtype: String? = nil, uuid: String = UUID().uuidString.lowercased(), signedAt: Int64,
        transaction: JSONObject?, environment: StoreEnvironment = .sandbox, renewal: JSONObject? = nil
    ) -> ServerNotification {
        var payload = JSONObject(capacity: 4)
        payload.append("notificationType", .string(type))
        payload.append("notificationUUID", .string(uuid))
        return ServerNotification(
            type: type, subtype: subtype, uuid: uuid, signedDate: signedAt, environment: environment,
            bundleID: "com.example.one", payload: payload, transaction: transaction, renewalInfo: renewal,
            appTransaction: nil, isTestData: false)
    }

    static func record(_ notification: ServerNotification, app: App, at offset: TimeInterval = 0) -> NotificationRecord
    {
        NotificationRecord(
            notification: notification, signedPayload: "h.p.s", appID: app.id, source: .apple,
            receivedAt: start.addingTimeInterval(offset))
    }

    static func endpoint(
        _ app: App, environments: Set<StoreEnvironment> = [], types: [String] = ["*"], offset: TimeInterval = 0,
        forwards: Bool = true
    ) -> WebhookEndpoint {
        WebhookEndpoint(
            id: UUID(), appID: app.id, url: "https://hooks.example.com/\(types.joined())", environments: environments,
            eventTypes: types, forwardsSignedPayload: forwards,
            secret: SealedSecret(bytes: Array(repeating: 9, count: 40)),
            createdAt: start.addingTimeInterval(offset))
    }

    static func events(_ recorded: NotificationRecorded) -> [String] {
        guard case .recorded(let events) = recorded else { return [] }
        return events.map(\.type)
    }

    @Test(arguments: StoreKind.available)
    func aNotificationIsRecordedOnceWithItsEffectsAndEvents(kind: StoreKind) async throws {
        try await LedgerStoreContractTests.withApp(kind) { store, app in
            let everything = Self.endpoint(app)
            let subscriptions = Self.endpoint(app, types: ["subscription.*"], offset: 1)
            let productionOnly = Self.endpoint(app, environments: [.production], offset: 2)
            for endpoint in [everything, subscriptions, productionOnly] { try await store.addWebhookEndpoint(endpoint) }
            #expect(try await store.webhookEndpoints(appID: app.id) == [everything, subscriptions, productionOnly])

            let renewal = Self.notification(
                "DID_RENEW", uuid: "uuid-1", signedAt: Self.startMilliseconds - 1_000,
                transaction: Self.transaction("2001", expires: Self.startMilliseconds + 30 * Self.day))
            let first = try await store.recordNotification(Self.record(renewal, app: app))
            #expect(Self.events(first) == ["notification", "transaction.created", "subscription.status_changed"])
            #expect(try await store.recordNotification(Self.record(renewal, app: app, at: 5)) == .duplicate)
            #expect(try await store.knownNotifications(appID: app.id, uuids: ["uuid-1", "uuid-2"]) == ["uuid-1"])

            let entries = try await store.ledgerEntries(LedgerQuery(appID: app.id, limit: 10))
            #expect(entries.map(\.transaction.transactionID) == ["2001"])
            #expect(entries.first?.firstRequestID == "notification:uuid-1")
            #expect(entries.first?.environment == .sandbox)
            let status = try #require(
                try await store.subscriptionStatuses(appID: app.id, originalTransactionIDs: ["1000"]).first)
            #expect(status.state == .active)
            #expect(status.expiresDate == Self.startMilliseconds + 30 * Self.day)
            #expect(status.asOf == Self.startMilliseconds - 1_000)

            let records = try await store.webhookEvents(WebhookEventQuery(appID: app.id))
            #expect(records.count == 3)
            let deliveries = records.flatMap(\.deliveries)
            #expect(deliveries.filter { $0.endpointID == everything.id }.count == 3)
            #expect(deliveries.filter { $0.endpointID == subscriptions.id }.count == 1)
            #expect(!deliveries.contains { $0.endpointID == productionOnly.id })
            #expect(deliveries.allSatisfy { $0.state == .pending && $0.attempts == 0 })
            let backlog = try await store.webhookBacklog()
            #expect(backlog.pending == 4 && backlog.oldest == Self.start)
        }
    }

    /// A billing issue keeps the date it was first stated while later statements repeat it, and a renewal clears it;
    /// so does the renewal turned off (for the customer view's `billing_issue_detected_at`, `unsubscribe_detected_at`).
    @Test(arguments: StoreKind.available)
    func theFirstStatementOfABillingIssueKeepsItsDate(kind: StoreKind) async throws {
        try await LedgerStoreContractTests.withApp(kind) { store, app in
            let expiry = Self.startMilliseconds - Self.day
            func status() async throws -> SubscriptionStatus {
                try #require(
                    try await store.subscriptionStatuses(appID: app.id, originalTransactionIDs: ["1000"]).first)
            }
            var renewalOff = JSONObject(capacity: 2)
            renewalOff.append("autoRenewStatus", .integer(0))
            renewalOff.append("originalTransactionId", .string("1000"))
            for (offset, uuid) in [(0, "f1"), (1_000, "f2")] {
                let failure = Self.notification(
                    "DID_FAIL_TO_RENEW", uuid: uuid, signedAt: expiry + Int64(offset),
                    transaction: Self.transaction("2001", expires: expiry))
                _ = try await store.recordNotification(Self.record(failure, app: app))
            }
            var current = try await status()
            #expect(current.state == .billingRetry && current.asOf == expiry + 1_000)
            #expect(current.billingIssueDetectedAt == expiry && current.unsubscribeDetectedAt == nil)
            let renewed = Self.notification(
                "DID_RENEW", uuid: "r1", signedAt: expiry + 2_000,
                transaction: Self.transaction("2002", expires: Self.startMilliseconds + 29 * Self.day))
            _ = try await store.recordNotification(Self.record(renewed, app: app))
            current = try await status()
            #expect(current.state == .active && current.billingIssueDetectedAt == nil)
            for (offset, uuid) in [(3_000, "o1"), (4_000, "o2")] {
                let off = Self.notification(
                    "DID_CHANGE_RENEWAL_STATUS", subtype: "AUTO_RENEW_DISABLED", uuid: uuid,
                    signedAt: expiry + Int64(offset),
                    transaction: Self.transaction("2002", expires: Self.startMilliseconds + 29 * Self.day),
                    renewal: renewalOff)
                _ = try await store.recordNotification(Self.record(off, app: app))
            }
            current = try await status()
            #expect(current.autoRenews == false && current.unsubscribeDetectedAt == expiry + 3_000)
        }
    }

    /// Money review M12: two servers (two stores on one database) recording one refund at once, by a refunded input on
    /// one and its `REFUND` notification on the other, announce it once: whether a recording revoked the row is decided
    /// on the row as written, not as read before.
    @Test(arguments: StoreKind.available)
    func oneRefundRecordedByTwoServersIsAnnouncedOnce(kind: StoreKind) async throws {
        try await withTestStore(kind) { first, location in
            let account = TenancyStoreContractTests.account()
            try await first.insertAccount(account)
            let app = TenancyStoreContractTests.app(accountID: account.id)
            try await first.insertApp(app)
            try await first.addWebhookEndpoint(Self.endpoint(app))
            let logger = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
            try await location.withStore(logger: logger) { second in
                let t = Self.startMilliseconds - 100 * 60_000
                let ids = (0..<12).map { "6\($0)" }
                for id in ids {
                    _ = try await first.record(
                        LedgerStoreContractTests.recording(app, [Self.purchase(id)], environment: .sandbox))
                }
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for id in ids {
                        group.addTask {
                            var refunded = Self.purchase(id, revokedAt: t + 1_000)
                            refunded.signedDate = t + 2_000
                            _ = try await first.record(
                                LedgerStoreContractTests.recording(
                                    app, [refunded], environment: .sandbox, at: 1, request: "api-\(id)"))
                        }
                        group.addTask {
                            _ = try await second.recordNotification(
                                Self.record(
                                    Self.notification(
                                        "REFUND", signedAt: t + 2_000,
                                        transaction: Self.transaction(
                                            id, original: id, expires: Self.startMilliseconds, revokedAt: t + 1_000,
                                            type: "Consumable")),
                                    app: app))
                        }
                    }
                    try await group.waitForAll()
                }
                let revoked = try await first.webhookEvents(WebhookEventQuery(appID: app.id, limit: 500)).filter {
                    $0.event.type == "transaction.revoked"
                }
                let perTransaction = Dictionary(grouping: revoked) {
                    $0.event.data["transaction_id"]?.stringValue ?? ""
                }
                #expect(Set(perTransaction.keys) == Set(ids))
                #expect(perTransaction.values.allSatisfy { $0.count == 1 }, "\(perTransaction.mapValues(\.count))")
            }
        }
    }

    /// A consumable bought by the app, as the ledger records it.
    static func purchase(_ id: String, revokedAt: Int64? = nil) -> PurchaseTransaction {
        var purchase = PurchaseTransaction(
            transactionID: id, originalTransactionID: id, productID: "com.example.monthly",
            purchaseDate: startMilliseconds - 30 * day, quantity: 1, revocationDate: revokedAt,
            revocationReason: revokedAt.map { _ in 1 }, revocationType: revokedAt.map { _ in "REFUND_FULL" })
        purchase.productType = "Consumable"
        return purchase
    }

    /// Money review M9: a refund of last month's period while this month's runs revokes that period's row, and leaves
    /// the subscription active until this month's end (no `subscription.status_changed` to `revoked`).
    @Test(arguments: StoreKind.available)
    func aRefundOfAnOlderPeriodLeavesTheSubscriptionActive(kind: StoreKind) async throws {
        try await LedgerStoreContractTests.withApp(kind) { store, app in
            try await store.addWebhookEndpoint(Self.endpoint(app))
            let current = Self.startMilliseconds + 20 * Self.day
            let older = current - 30 * Self.day
            let t = Self.startMilliseconds - 100 * 60_000
            for (type, id, expires, signedAt, revokedAt) in [
                ("SUBSCRIBED", "5001", older, t, nil), ("DID_RENEW", "5002", current, t + 1_000, nil),
                ("REFUND", "5001", older, t + 2_000, t + 1_500),
            ] as [(String, String, Int64, Int64, Int64?)] {
                _ = try await store.recordNotification(
                    Self.record(
                        Self.notification(
                            type, signedAt: signedAt,
                            transaction: Self.transaction(id, original: "5001", expires: expires, revokedAt: revokedAt)),
                        app: app))
            }
            let status = try #require(
                try await store.subscriptionStatuses(appID: app.id, originalTransactionIDs: ["5001"]).first)
            #expect(status.state == .active && status.expiresDate == current, "\(status)")
            let rows = try await store.ledgerEntries(LedgerQuery(appID: app.id, limit: 10))
            #expect(rows.first { $0.transaction.transactionID == "5001" }?.isRevoked == true)
            #expect(rows.first { $0.transaction.transactionID == "5002" }?.isRevoked == false)
            let changes = try await store.webhookEvents(WebhookEventQuery(appID: app.id, limit: 100)).filter {
                $0.event.type == "subscription.status_changed"
            }
            #expect(!changes.contains { $0.event.data["status"] == .string("revoked") }, "\(changes)")
        }
    }

    /// REFUND, REFUND_REVERSED, then the revoked signed transaction the device kept from before the reversal:
    /// `/api`'s recording of it changes nothing and sends no second `transaction.revoked`; a statement signed after the
    /// reversal (a new refund) still revokes.
    @Test(arguments: StoreKind.available)
    func anOldRevokedItemDoesNotUndoAReversal(kind: StoreKind) async throws {
        try await LedgerStoreContractTests.withApp(kind) { store, app in
            try await store.addWebhookEndpoint(Self.endpoint(app))
            let expires = Self.startMilliseconds + 10 * Self.day
            let t = Self.startMilliseconds - 100 * 60_000
            for (type, signedAt, revokedAt) in [
                ("SUBSCRIBED", t, nil), ("REFUND", t + 2_000, t + 1_500), ("REFUND_REVERSED", t + 3_000, nil),
            ] as [(String, Int64, Int64?)] {
                _ = try await store.recordNotification(
                    Self.record(
                        Self.notification(
                            type, signedAt: signedAt,
                            transaction: Self.transaction("2001", expires: expires, revokedAt: revokedAt)),
                        app: app))
            }
            func revokedEvents() async throws -> Int {
                try await store.webhookEvents(WebhookEventQuery(appID: app.id, limit: 100)).filter {
                    $0.event.type == "transaction.revoked"
                }.count
            }
            #expect(try await revokedEvents() == 1)
            func input(signedAt: Int64?, revokedAt: Int64, offset: TimeInterval) -> LedgerRecording {
                var purchase = PurchaseTransaction(
                    transactionID: "2001", originalTransactionID: "1000", productID: "com.example.monthly",
                    revocationDate: revokedAt, revocationReason: 1, signedDate: signedAt)
                purchase.expiresDate = expires
                return LedgerRecording(
                    appID: app.id, environment: .sandbox, transactions: [purchase], user: nil, movesClaims: false,
                    deliversNew: true, requestID: "api", now: Self.start.addingTimeInterval(offset))
            }
            // Signed before the reversal, or of unknown date: stale.
            for (index, signedAt) in [t + 2_500, nil].enumerated() {
                let stale = try await store.record(
                    input(signedAt: signedAt, revokedAt: t + 1_500, offset: 700 * Double(index + 1)))
                #expect(stale.map(\.entry.isRevoked) == [false])
                #expect(stale.map(\.revokedNow) == [false])
            }
            #expect(try await store.ledgerEntries(LedgerQuery(appID: app.id, limit: 10)).first?.isRevoked == false)
            #expect(try await revokedEvents() == 1)
            // Signed after it: a new refund.
            let fresh = try await store.record(input(signedAt: t + 4_000, revokedAt: t + 3_900, offset: 2_100))
            #expect(fresh.map(\.revokedNow) == [true])
            let stored = try await store.ledgerEntries(LedgerQuery(appID: app.id, limit: 10)).first
            #expect(stored?.isRevoked == true)
            #expect(stored?.revocationAsOf == t + 4_000)
        }
    }

    @Test(arguments: StoreKind.available)
    func revocationsAndStatusesFollowSignedDatesNotArrival(kind: StoreKind) async throws {
        try await LedgerStoreContractTests.withApp(kind) { store, app in
            let expires = Self.startMilliseconds + 10 * Self.day
            let t = Self.startMilliseconds - 100 * 60_000
            _ = try await store.recordNotification(
                Self.record(
                    Self.notification(
                        "SUBSCRIBED", signedAt: t, transaction: Self.transaction("2001", expires: expires)),
                    app: app))
            // The reversal (signed later) arrives before the refund: the refund, older, changes nothing.
            let reversed = try await store.recordNotification(
                Self.record(
                    Self.notification(
                        "REFUND_REVERSED", signedAt: t + 3_000, transaction: Self.transaction("2001", expires: expires)),
                    app: app))
            #expect(!Self.events(reversed).contains("transaction.revocation_reversed"))
            let refund = try await store.recordNotification(
                Self.record(
                    Self.notification(
                        "REFUND", signedAt: t + 2_000,
                        transaction: Self.transaction("2001", expires: expires, revokedAt: t + 1_500)),
                    app: app))
            #expect(Self.events(refund) == ["notification"])
            #expect(try await store.ledgerEntries(LedgerQuery(appID: app.id, limit: 10)).first?.isRevoked == false)

            // A newer refund revokes, and a newer reversal undoes it; each says so.
            let laterRefund = try await store.recordNotification(
                Self.record(
                    Self.notification(
                        "REFUND", signedAt: t + 4_000,
                        transaction: Self.transaction("2001", expires: expires, revokedAt: t + 3_500)),
                    app: app))
            #expect(Self.events(laterRefund) == ["notification", "transaction.revoked", "subscription.status_changed"])
            let revoked = try #require(try await store.ledgerEntries(LedgerQuery(appID: app.id, limit: 10)).first)
            #expect(revoked.transaction.revocationDate == t + 3_500)
            #expect(revoked.transaction.revocationType == "REFUND_FULL")
            let laterReversal = try await store.recordNotification(
                Self.record(
                    Self.notification(
                        "REFUND_REVERSED", signedAt: t + 5_000, transaction: Self.transaction("2001", expires: expires)),
                    app: app))
            #expect(
                Self.events(laterReversal) == [
                    "notification", "transaction.revocation_reversed", "subscription.status_changed",
                ])
            #expect(try await store.ledgerEntries(LedgerQuery(appID: app.id, limit: 10)).first?.isRevoked == false)

            // A reversal of a transaction the ledger did not know, then the refund it reversed, signed earlier: the
            // transaction stays unrevoked.
            _ = try await store.recordNotification(
                Self.record(
                    Self.notification(
                        "REFUND_REVERSED", signedAt: t + 6_000,
                        transaction: Self.transaction("2009", original: "1009", expires: expires)), app: app))
            let lateRefund = try await store.recordNotification(
                Self.record(
                    Self.notification(
                        "REFUND", signedAt: t + 5_500,
                        transaction: Self.transaction(
                            "2009", original: "1009", expires: expires, revokedAt: t + 5_000)), app: app))
            #expect(Self.events(lateRefund) == ["notification"])
            let unknownBefore = try await store.ledgerEntries(LedgerQuery(appID: app.id, limit: 10)).first {
                $0.transaction.transactionID == "2009"
            }
            #expect(unknownBefore?.isRevoked == false)

            // EXPIRED, then a renewal signed before it arriving late: still expired; a newer renewal: active.
            _ = try await store.recordNotification(
                Self.record(
                    Self.notification(
                        "EXPIRED", subtype: "VOLUNTARY", signedAt: t + 8_000,
                        transaction: Self.transaction("2001", expires: expires)), app: app))
            _ = try await store.recordNotification(
                Self.record(
                    Self.notification(
                        "DID_RENEW", signedAt: t + 7_000, transaction: Self.transaction("2002", expires: expires)),
                    app: app))
            var status = try await store.subscriptionStatuses(appID: app.id, originalTransactionIDs: ["1000"])
            #expect(status.map(\.state) == [.expired])
            _ = try await store.recordNotification(
                Self.record(
                    Self.notification(
                        "DID_RENEW", signedAt: t + 9_000,
                        transaction: Self.transaction("2003", expires: expires + 30 * Self.day)), app: app))
            status = try await store.subscriptionStatuses(appID: app.id, originalTransactionIDs: ["1000"])
            #expect(status.map(\.state) == [.active])
            #expect(status.first?.expiresDate == expires + 30 * Self.day)
            // The late renewal's transaction is in the ledger all the same.
            #expect(try await store.ledgerEntries(LedgerQuery(appID: app.id, limit: 10)).count == 4)
        }
    }

    @Test(arguments: StoreKind.available)
    func consumptionRequestsAreGroupedPerTransaction(kind: StoreKind) async throws {
        try await LedgerStoreContractTests.withApp(kind) { store, app in
            let coins = Self.transaction(
                "3001", original: "3001", expires: Self.startMilliseconds, type: "Consumable")
            let first = try await store.recordNotification(
                Self.record(Self.notification("CONSUMPTION_REQUEST", signedAt: 1, transaction: coins), app: app))
            #expect(Self.events(first) == ["notification", "consumption.requested", "transaction.created"])
            let again = try await store.recordNotification(
                Self.record(Self.notification("CONSUMPTION_REQUEST", signedAt: 2, transaction: coins), app: app))
            #expect(again == .recorded(events: []))
            // A consumable has no subscription status.
            #expect(try await store.subscriptionStatuses(appID: app.id, originalTransactionIDs: ["3001"]).isEmpty)
        }
    }

    @Test(
        "refund requests: due once per transaction for an answering app, leased by a claim, recorded once with its event",
        arguments: StoreKind.available)
    func consumptionAnswersAreClaimedOnceAndRecordedOnce(kind: StoreKind) async throws {
        try await LedgerStoreContractTests.withApp(kind) { store, app in
            #expect(try await store.addWebhookEndpoint(Self.endpoint(app, types: ["consumption.answered"]), limit: 10))
            func request(_ id: String, signedAt: Int64, answering: Bool) async throws {
                let coins = Self.transaction(id, original: id, expires: Self.startMilliseconds, type: "Consumable")
                var record = Self.record(
                    Self.notification("CONSUMPTION_REQUEST", signedAt: signedAt, transaction: coins), app: app)
                record.answersConsumption = answering
                _ = try await store.recordNotification(record)
            }
            // One app answering, one request not (the policy was off): only the first is due, however often Apple
            // re-sends it.
            // Apple asked an hour before the request arrived (its retries, a reconciliation): its 12 hours run from
            // the signed date (money review M7).
            let asked = Self.startMilliseconds - 3_600_000
            try await request("4001", signedAt: asked, answering: true)
            try await request("4001", signedAt: asked + 1, answering: true)
            try await request("4002", signedAt: asked + 2, answering: false)
            let now = Self.start.addingTimeInterval(1)
            let claimed = try await store.claimConsumptionAnswers(dueBy: now, lease: .seconds(60), limit: 10)
            #expect(claimed.map(\.transactionID) == ["4001"] && claimed.first?.attempts == 0)
            #expect(
                claimed.first?.requestedAt == Self.start.addingTimeInterval(-3_600)
                    && claimed.first?.environment == .sandbox)
            // Leased: a second server's claim gets nothing until the lease ends.
            #expect(
                try await store.claimConsumptionAnswers(
                    dueBy: now.addingTimeInterval(59), lease: .seconds(60), limit: 10
                ).isEmpty)
            // Re-sent after the policy is on, the unanswered request becomes due.
            try await request("4002", signedAt: asked + 3, answering: true)
            let task = try #require(claimed.first)
            try await store.recordConsumptionAnswer(
                task, outcome: .retry(next: now.addingTimeInterval(300), error: "Apple failed (HTTP 503)", status: nil),
                event: nil, at: now)
            let due = try await store.claimConsumptionAnswers(
                dueBy: now.addingTimeInterval(301), lease: .seconds(60), limit: 10)
            #expect(due.map(\.transactionID).sorted() == ["4001", "4002"])
            let retried = try #require(due.first { $0.transactionID == "4001" })
            #expect(retried.attempts == 1)
            // The backend's report and the facts the answer is built from.
            let reported = try await store.reportConsumption(
                appID: app.id, environment: nil, transactionIDs: ["4001", "9999"],
                report: ConsumptionReport(consumedMilli: 40_000, deliveryStatus: nil, reportedAt: now))
            #expect(reported == ["4001"])
            let facts = try await store.consumptionFacts(of: retried)
            #expect(facts.report?.consumedMilli == 40_000 && facts.deliveredAt == nil && facts.earlierRefunds == 0)
            // Sent: recorded once with its event; a late outcome of the same attempt (another server's, whose lease
            // ran out) changes nothing and adds no event.
            let event = WebhookEvent(
                appID: app.id, environment: .sandbox, kind: .consumptionAnswered, createdAt: now, data: [:])
            let sentAt = now.addingTimeInterval(302)
            try await store.recordConsumptionAnswer(
                retried, outcome: .sent(body: #"{"customerConsented":true}"#, status: 202), event: event, at: sentAt)
            try await store.recordConsumptionAnswer(
                retried, outcome: .failed(error: "late", body: nil, status: nil), event: event, at: sentAt)
            let answers = try await store.consumptionAnswers(appID: app.id, limit: 10)
            let sent = try #require(answers.first { $0.transactionID == "4001" })
            #expect(sent.state == "sent" && sent.attempts == 2 && sent.appleStatus == 202 && sent.requests == 2)
            #expect(sent.body == #"{"customerConsented":true}"# && sent.answeredAt == sentAt && sent.lastError == nil)
            let deliveries = try await store.claimWebhookDeliveries(
                dueBy: sentAt.addingTimeInterval(1), lease: .seconds(60), limit: 10)
            #expect(deliveries.filter { $0.event.type == "consumption.answered" }.count == 1)
            #expect(
                try await store.claimConsumptionAnswers(
                    dueBy: sentAt.addingTimeInterval(86_400), lease: .seconds(60), limit: 10
                ).map(\.transactionID) == ["4002"])
        }
    }

    static func event(_ app: App, at offset: TimeInterval) -> WebhookEvent {
        WebhookEvent(
            appID: app.id, environment: .production, kind: .test, createdAt: start.addingTimeInterval(offset),
            data: JSONObject(capacity: 0))
    }

    static func record(
        _ store: any DataStore, _ tasks: [WebhookDeliveryTask], _ outcome: WebhookDeliveryOutcome, at date: Date,
        breaker: WebhookCircuitBreaker
    ) async throws {
        let attempts: [WebhookAttempt] = tasks.map { (task: $0, outcome: outcome) }
        try await store.recordWebhookDeliveries(attempts, at: date, breaker: breaker)
    }

    static func claim(_ store: any DataStore, _ now: Date, limit: Int = 10) async throws -> [WebhookDeliveryTask] {
        try await store.claimWebhookDeliveries(dueBy: now, lease: .seconds(60), limit: limit, perEndpoint: 2)
    }

    @Test(
        "deliveries are claimed in turns across endpoints, two in flight per endpoint, none while it is paused",
        arguments: StoreKind.available)
    func deliveriesAreFairAndAnEndpointThatKeepsFailingIsPaused(kind: StoreKind) async throws {
        try await LedgerStoreContractTests.withApp(kind) { store, busy in try await Self.fairness(store, busy) }
    }

    static func fairness(_ store: any DataStore, _ busy: App) async throws {
        let quiet = TenancyStoreContractTests.app(accountID: busy.accountID, bundleIDs: ["com.example.quiet"])
        try await store.insertApp(quiet)
        let hanging = Self.endpoint(busy)
        let fresh = Self.endpoint(quiet)
        try await store.addWebhookEndpoint(hanging)
        try await store.addWebhookEndpoint(fresh)
        // The busy app's backlog is older than the quiet app's one event.
        try await store.recordEvents((0..<20).map { Self.event(busy, at: Double($0)) })
        let news = Self.event(quiet, at: 100)
        try await store.recordEvents([news])
        let now = Self.start.addingTimeInterval(200)
        let first = try await Self.claim(store, now, limit: 3)
        #expect(first.count == 3)
        #expect(first.contains { $0.event.id == news.id }, "the fresh event waits behind the backlog")
        #expect(first.filter { $0.endpointID == hanging.id }.count == 2)
        // Two of the hanging endpoint's are in flight: none more, however many are due.
        #expect(try await Self.claim(store, now).isEmpty)
        let delivered = try #require(first.first { $0.event.id == news.id })
        try await store.recordWebhookDelivery(delivered, outcome: .delivered(status: 204), at: now)

        // Its attempts fail, round after round: at the breaker's threshold it is paused, its due deliveries wait.
        let breaker = WebhookCircuitBreaker(threshold: 4, firstPause: .seconds(100))
        let firstRound = first.filter { $0.endpointID == hanging.id }
        try await Self.record(
            store, firstRound, .retry(next: now, status: 503, error: "HTTP 503"), at: now, breaker: breaker)
        let secondRound = try await Self.claim(store, now)
        #expect(secondRound.count == 2)
        try await Self.record(
            store, secondRound, .retry(next: now, status: 503, error: "HTTP 503"), at: now, breaker: breaker)
        #expect(try await Self.claim(store, now).isEmpty)
        let paused = now.addingTimeInterval(79)
        #expect(try await Self.claim(store, paused).isEmpty)
        let waiting = try await store.webhookEvents(WebhookEventQuery(appID: busy.id, state: .pending))
        let nextAttempts = waiting.compactMap { $0.deliveries.first?.nextAttemptAt }
        #expect(nextAttempts.count == 20 && nextAttempts.allSatisfy { $0 > paused })
        let resumed = now.addingTimeInterval(121)
        let probe = try await Self.claim(store, resumed)
        #expect(probe.count == 2 && probe.allSatisfy { $0.endpointID == hanging.id })
        // A delivery ends the run: no pause after the next failure.
        try await Self.record(store, [probe[0]], .delivered(status: 200), at: resumed, breaker: breaker)
        try await Self.record(
            store, [probe[1]], .retry(next: resumed, status: 500, error: "HTTP 500"), at: resumed, breaker: breaker)
        #expect(try await Self.claim(store, resumed).count == 2)
    }

    @Test(
        "with more endpoints due than the claim takes, each of those whose oldest is oldest gives its oldest",
        arguments: StoreKind.available)
    func aClaimTakesTheFirstTurnsOfTheEndpointsWaitingLongest(kind: StoreKind) async throws {
        try await LedgerStoreContractTests.withApp(kind) { store, first in
            var apps = [first]
            for index in 1..<6 {
                let app = TenancyStoreContractTests.app(
                    accountID: first.accountID, bundleIDs: ["com.example.endpoint\(index)"])
                try await store.insertApp(app)
                apps.append(app)
            }
            // Six endpoints, each with a backlog of three; the fourth app's began first, then the second's, ...
            let order = [3, 1, 5, 0, 4, 2]
            var oldest: [UUID: UUID] = [:]
            for (rank, index) in order.enumerated() {
                let app = apps[index]
                try await store.addWebhookEndpoint(Self.endpoint(app))
                let events = (0..<3).map { Self.event(app, at: Double(rank) + Double($0) * 10) }
                oldest[app.id] = events[0].id
                try await store.recordEvents(events)
            }
            let claimed = try await Self.claim(store, Self.start.addingTimeInterval(100), limit: 4)
            #expect(
                Set(claimed.map(\.event.id)) == Set(order.prefix(4).map { oldest[apps[$0].id]! }),
                "one turn each for the four endpoints whose oldest delivery waited longest")
            // The next claim gives the two left their first turn before any second turn.
            let next = try await Self.claim(store, Self.start.addingTimeInterval(100), limit: 2)
            #expect(Set(next.map(\.event.id)) == Set(order.suffix(2).map { oldest[apps[$0].id]! }))
        }
    }

    @Test(
        "a redelivery starts a fresh budget and never sends a delivery in flight twice", arguments: StoreKind.available)
    func aRedeliveryStartsAFreshBudgetAndLeavesFlightsAlone(kind: StoreKind) async throws {
        try await LedgerStoreContractTests.withApp(kind) { store, app in
            let endpoint = Self.endpoint(app)
            try await store.addWebhookEndpoint(endpoint)
            let old = WebhookEvent(
                appID: app.id, environment: .production, kind: .test, createdAt: Self.start,
                data: JSONObject(capacity: 0))
            let flying = WebhookEvent(
                appID: app.id, environment: .production, kind: .test, createdAt: Self.start.addingTimeInterval(1),
                data: JSONObject(capacity: 0))
            try await store.recordEvents([old, flying])
            let now = Self.start.addingTimeInterval(4 * 86_400)
            let claimed = try await store.claimWebhookDeliveries(
                dueBy: now, lease: .seconds(60), limit: 10, perEndpoint: 2)
            let dead = try #require(claimed.first { $0.event.id == old.id })
            try await store.recordWebhookDelivery(dead, outcome: .dead(status: 500, error: "HTTP 500"), at: now)
            // The other is in flight: a redelivery of everything leaves it to its attempt.
            let later = now.addingTimeInterval(5)
            #expect(try await store.redeliverWebhookEvents(WebhookEventQuery(appID: app.id), at: later) == 1)
            let again = try await store.claimWebhookDeliveries(
                dueBy: later, lease: .seconds(60), limit: 10, perEndpoint: 2)
            #expect(again.map(\.event.id) == [old.id])
            // Four days after the event, its redelivery has a fresh budget: a failure is retried, not dead.
            let redelivered = try #require(again.first)
            #expect(redelivered.attempts == 0 && redelivered.startedAt == later)
            let outcome = redelivered.outcome(
                status: 500, error: nil, policy: RetryPolicy(first: .seconds(30)), now: later)
            guard case .retry = outcome else {
                Issue.record("a redelivered event was dead at its first failure: \(outcome)")
                return
            }
        }
    }

    @Test(
        "deliveries of a disabled account or app wait, and are claimed once it is enabled",
        arguments: StoreKind.available)
    func deliveriesWaitWhileTheTenantIsDisabled(kind: StoreKind) async throws {
        try await LedgerStoreContractTests.withApp(kind) { store, app in
            try await store.addWebhookEndpoint(Self.endpoint(app))
            let event = WebhookEvent(
                appID: app.id, environment: .production, kind: .test, createdAt: Self.start,
                data: JSONObject(capacity: 0))
            try await store.recordEvents([event])
            let now = Self.start.addingTimeInterval(10)
            var account = try #require(try await store.account(id: app.accountID))
            account.isEnabled = false
            #expect(try await store.updateAccount(account))
            #expect(
                try await store.claimWebhookDeliveries(dueBy: now, lease: .seconds(60), limit: 10, perEndpoint: 10)
                    .isEmpty)
            account.isEnabled = true
            #expect(try await store.updateAccount(account))
            var disabled = app
            disabled.isEnabled = false
            #expect(try await store.updateApp(disabled))
            #expect(
                try await store.claimWebhookDeliveries(dueBy: now, lease: .seconds(60), limit: 10, perEndpoint: 10)
                    .isEmpty)
            #expect(try await store.updateApp(app))
            let claimed = try await store.claimWebhookDeliveries(
                dueBy: now, lease: .seconds(60), limit: 10, perEndpoint: 10)
            #expect(claimed.map(\.event.id) == [event.id])
        }
    }

    @Test(arguments: StoreKind.available)
    func deliveriesAreClaimedOnceRetriedKilledAndRedelivered(kind: StoreKind) async throws {
        try await LedgerStoreContractTests.withApp(kind) { store, app in
            let endpoint = Self.endpoint(app)
            try await store.addWebhookEndpoint(endpoint)
            let events = (0..<3).map { index in
                WebhookEvent(
                    appID: app.id, environment: .production, kind: .test,
                    createdAt: Self.start.addingTimeInterval(Double(index)), data: JSONObject(capacity: 0))
            }
            try await store.recordEvents(events)
            let now = Self.start.addingTimeInterval(10)
            // Concurrent claims (as from several servers) take each delivery once.
            let claims = try await withThrowingTaskGroup(of: [WebhookDeliveryTask].self) { group in
                for _ in 0..<4 {
                    group.addTask {
                        try await store.claimWebhookDeliveries(
                            dueBy: now, lease: .seconds(60), limit: 2, perEndpoint: 10)
                    }
                }
                return try await group.reduce(into: []) { $0 += $1 }
            }
            // (On PostgreSQL a claim that finds the endpoint's row locked by another claim skips it: what the others
            // left is claimed next.)
            let rest = try await store.claimWebhookDeliveries(
                dueBy: now, lease: .seconds(60), limit: 10, perEndpoint: 10)
            let claimedIDs = (claims + rest).map(\.event.id.uuidString).sorted()
            #expect(claimedIDs == events.map(\.id.uuidString).sorted())
            for claim in claims + rest {
                #expect(claim.url == endpoint.url)
                #expect(claim.secret == endpoint.secret)
                #expect(claim.attempts == 0)
            }
            #expect(
                try await store.claimWebhookDeliveries(dueBy: now, lease: .seconds(60), limit: 10, perEndpoint: 10)
                    .isEmpty)
            // Leases end: claimed again.
            let again = try await store.claimWebhookDeliveries(
                dueBy: now.addingTimeInterval(61), lease: .seconds(60), limit: 10, perEndpoint: 10)
            #expect(again.count == 3)

            let byID = Dictionary(uniqueKeysWithValues: again.map { ($0.event.id, $0) })
            let delivered = try #require(byID[events[0].id])
            let retried = try #require(byID[events[1].id])
            let dead = try #require(byID[events[2].id])
            try await store.recordWebhookDelivery(delivered, outcome: .delivered(status: 204), at: now)
            try await store.recordWebhookDelivery(
                retried, outcome: .retry(next: now.addingTimeInterval(30), status: 500, error: "HTTP 500"), at: now)
            try await store.recordWebhookDelivery(dead, outcome: .dead(status: nil, error: "timed out"), at: now)
            // Recording twice changes nothing: the first outcome stands.
            try await store.recordWebhookDelivery(delivered, outcome: .dead(status: nil, error: "late"), at: now)

            let listed = try await store.webhookEvents(WebhookEventQuery(appID: app.id))
            var states: [UUID: WebhookEventRecord.Delivery] = [:]
            for record in listed { states[record.event.id] = record.deliveries.first }
            let first = try #require(states[events[0].id])
            let second = try #require(states[events[1].id])
            let third = try #require(states[events[2].id])
            #expect(first.state == .delivered)
            #expect(first.lastStatus == 204)
            #expect(second.state == .pending)
            #expect(second.attempts == 1)
            #expect(second.lastError == "HTTP 500")
            #expect(third.state == .dead)
            #expect(
                try await store.webhookEvents(WebhookEventQuery(appID: app.id, state: .dead)).map(\.event.id)
                    == [events[2].id])

            let retry = try await store.claimWebhookDeliveries(
                dueBy: now.addingTimeInterval(31), lease: .seconds(60), limit: 10, perEndpoint: 10)
            #expect(retry.map(\.event.id) == [events[1].id] && retry.first?.attempts == 1)

            // Redelivery makes the dead one due now; the delivered one only when asked by id.
            #expect(
                try await store.redeliverWebhookEvents(WebhookEventQuery(appID: app.id, state: .dead), at: now) == 1)
            #expect(
                try await store.redeliverWebhookEvents(
                    WebhookEventQuery(appID: app.id, state: .delivered, eventIDs: [events[0].id]), at: now) == 1)
            let redelivered = try await store.claimWebhookDeliveries(
                dueBy: now, lease: .seconds(60), limit: 10, perEndpoint: 10)
            #expect(Set(redelivered.map(\.event.id)) == [events[0].id, events[2].id])

            // Removing the endpoint removes its deliveries.
            #expect(try await store.removeWebhookEndpoint(id: endpoint.id, appID: app.id))
            #expect(!(try await store.removeWebhookEndpoint(id: endpoint.id, appID: app.id)))
            #expect(try await store.webhookBacklog().pending == 0)
        }
    }

    @Test(arguments: StoreKind.available)
    func expiredSubscriptionsMoveOnceWithAnEvent(kind: StoreKind) async throws {
        try await LedgerStoreContractTests.withApp(kind) { store, app in
            try await store.addWebhookEndpoint(Self.endpoint(app, types: ["subscription.status_changed"]))
            let expires = Self.startMilliseconds + 60_000
            _ = try await store.recordNotification(
                Self.record(
                    Self.notification(
                        "SUBSCRIBED", signedAt: Self.startMilliseconds - 5_000,
                        transaction: Self.transaction("2001", expires: expires)), app: app))
            #expect(try await store.expireSubscriptions(dueBy: Self.start, limit: 10) == 0)
            let later = Self.start.addingTimeInterval(120)
            #expect(try await store.expireSubscriptions(dueBy: later, limit: 10) == 1)
            #expect(try await store.expireSubscriptions(dueBy: later, limit: 10) == 0)
            let status = try await store.subscriptionStatuses(appID: app.id, originalTransactionIDs: ["1000"])
            #expect(status.map(\.state) == [.expired])
            // Every event is kept; the endpoint takes the two status changes.
            let changes = try await store.webhookEvents(WebhookEventQuery(appID: app.id)).filter {
                !$0.deliveries.isEmpty
            }
            #expect(changes.map(\.event.type) == ["subscription.status_changed", "subscription.status_changed"])
            #expect(changes.first?.event.data["status"] == .string("expired"))
            #expect(changes.first?.event.data["previous_status"] == .string("active"))

            // A renewal signed before the expiry, arriving after it, renews.
            _ = try await store.recordNotification(
                Self.record(
                    Self.notification(
                        "DID_RENEW", signedAt: Self.startMilliseconds - 1_000,
                        transaction: Self.transaction("2002", expires: expires + 30 * Self.day)), app: app, at: 130))
            #expect(
                try await store.subscriptionStatuses(appID: app.id, originalTransactionIDs: ["1000"]).map(\.state) == [
                    .active
                ])
        }
    }

    @Test(arguments: StoreKind.available)
    func concurrentRetriesOfOneNotificationRecordItOnce(kind: StoreKind) async throws {
        try await LedgerStoreContractTests.withApp(kind) { store, app in
            let notification = Self.notification(
                "DID_RENEW", uuid: "retried", signedAt: Self.startMilliseconds,
                transaction: Self.transaction("2001", expires: Self.startMilliseconds + Self.day))
            let results = try await withThrowingTaskGroup(of: NotificationRecorded.self) { group in
                for _ in 0..<8 {
                    group.addTask { try await store.recordNotification(Self.record(notification, app: app)) }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(results.filter { $0 != .duplicate }.count == 1)
            #expect(try await store.webhookEvents(WebhookEventQuery(appID: app.id)).count == 3)
        }
    }

    /// Notifications arriving together are committed in groups: each is recorded exactly as it would be alone, in
    /// whatever order and grouping they come (retries in the same group included), and the state is the newest
    /// signed statement's.
    @Test(arguments: StoreKind.available)
    func notificationsArrivingTogetherAreEachRecordedOnceAndTheNewestStatementWins(kind: StoreKind) async throws {
        try await LedgerStoreContractTests.withApp(kind) { store, app in
            try await store.addWebhookEndpoint(Self.endpoint(app))
            let t = Self.startMilliseconds - 1_000_000
            let expires = Self.startMilliseconds + 10 * Self.day
            var notifications: [ServerNotification] = []
            for subscription in 0..<20 {
                let original = "\(5_000 + subscription)"
                let transaction = { (id: Int, revokedAt: Int64?) in
                    Self.transaction(
                        "\(original)-\(id)", original: original, expires: expires + Int64(id) * Self.day,
                        revokedAt: revokedAt)
                }
                notifications += [
                    Self.notification("SUBSCRIBED", signedAt: t, transaction: transaction(0, nil)),
                    Self.notification("DID_RENEW", signedAt: t + 1_000, transaction: transaction(1, nil)),
                    // Every other subscription's renewal is refunded, newest of all.
                    subscription.isMultiple(of: 2)
                        ? Self.notification("REFUND", signedAt: t + 2_000, transaction: transaction(1, t + 1_500))
                        : Self.notification(
                            "DID_CHANGE_RENEWAL_STATUS", subtype: "AUTO_RENEW_DISABLED", signedAt: t + 2_000,
                            transaction: transaction(1, nil)),
                ]
            }
            // Each sent twice (Apple's retry), all at once, shuffled.
            let sent = (notifications + notifications).shuffled()
            let results = try await withThrowingTaskGroup(of: (String, NotificationRecorded).self) { group in
                for notification in sent {
                    group.addTask {
                        (notification.uuid, try await store.recordNotification(Self.record(notification, app: app)))
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            let recorded = results.filter { $0.1 != .duplicate }
            #expect(recorded.count == notifications.count)
            #expect(Set(recorded.map(\.0)) == Set(notifications.map(\.uuid)))
            let events = recorded.flatMap { Self.events($0.1) }
            #expect(events.filter { $0 == "notification" }.count == 60)
            #expect(events.filter { $0 == "transaction.created" }.count == 40)
            #expect(try await store.webhookEvents(WebhookEventQuery(appID: app.id, limit: 500)).count == events.count)

            let entries = try await store.ledgerEntries(LedgerQuery(appID: app.id, limit: 100))
            #expect(entries.count == 40)
            for subscription in 0..<20 {
                let original = "\(5_000 + subscription)"
                let renewal = entries.first { $0.transaction.transactionID == "\(original)-1" }
                #expect(renewal?.isRevoked == subscription.isMultiple(of: 2))
                #expect(entries.first { $0.transaction.transactionID == "\(original)-0" }?.isRevoked == false)
            }
            let statuses = try await store.subscriptionStatuses(
                appID: app.id, originalTransactionIDs: (0..<20).map { "\(5_000 + $0)" })
            #expect(statuses.count == 20)
            #expect(statuses.allSatisfy { $0.asOf == t + 2_000 })
            #expect(statuses.filter { $0.state == .revoked }.count == 10)
            #expect(statuses.allSatisfy { $0.expiresDate == expires + Self.day })
        }
    }

    /// Apple's signed payload goes to the endpoints that forward it, and is kept only while the app has one.
    @Test(arguments: StoreKind.available)
    func theSignedPayloadIsForwardedOnlyToEndpointsThatForwardIt(kind: StoreKind) async throws {
        try await LedgerStoreContractTests.withApp(kind) { store, app in
            let plain = Self.endpoint(app, types: ["notification"], forwards: false)
            try await store.addWebhookEndpoint(plain)
            let first = Self.notification("TEST", uuid: "t-1", signedAt: Self.startMilliseconds, transaction: nil)
            _ = try await store.recordNotification(Self.record(first, app: app))
            var claimed = try await store.claimWebhookDeliveries(
                dueBy: Self.start, lease: .seconds(60), limit: 10, perEndpoint: 10)
            #expect(claimed.map(\.endpointID) == [plain.id])
            #expect(claimed.first?.signedPayload == nil)

            let forwarding = Self.endpoint(app, types: ["notification"], offset: 1)
            try await store.addWebhookEndpoint(forwarding)
            let second = Self.notification("TEST", uuid: "t-2", signedAt: Self.startMilliseconds, transaction: nil)
            _ = try await store.recordNotification(Self.record(second, app: app, at: 1))
            claimed = try await store.claimWebhookDeliveries(
                dueBy: Self.start.addingTimeInterval(1), lease: .seconds(60), limit: 10, perEndpoint: 10)
            #expect(Set(claimed.map(\.endpointID)) == [plain.id, forwarding.id])
            #expect(claimed.first { $0.endpointID == forwarding.id }?.signedPayload == "h.p.s")
            #expect(claimed.first { $0.endpointID == plain.id }?.signedPayload == nil)
        }
    }

    /// A status write moves the statuses' marker and leaves the ledger's alone (so `/api`'s ledger view survives a
    /// flow of notifications); a revocation moves the ledger's. Where the store can tell without a listener (SQLite).
    @Test(arguments: StoreKind.available)
    func statusWritesMoveTheirOwnMarkerNotTheLedgers(kind: StoreKind) async throws {
        try await LedgerStoreContractTests.withApp(kind) { store, app in
            guard let statusesBefore = store.statusChangeMarker(), let ledgerBefore = store.ledgerChangeMarker() else {
                return
            }
            let expires = Self.startMilliseconds - 1_000
            let t = Self.startMilliseconds - 100 * 60_000
            _ = try await store.recordNotification(
                Self.record(
                    Self.notification(
                        "SUBSCRIBED", signedAt: t, transaction: Self.transaction("2001", expires: expires)),
                    app: app, at: -120))
            let statusesAfter = try #require(store.statusChangeMarker())
            #expect(statusesAfter != statusesBefore)
            #expect(store.ledgerChangeMarker() == ledgerBefore)

            // The expiry scheduler writes statuses too.
            #expect(try await store.expireSubscriptions(dueBy: Self.start, limit: 10) == 1)
            #expect(store.statusChangeMarker() != statusesAfter)
            #expect(store.ledgerChangeMarker() == ledgerBefore)

            // A refund of the known transaction changes a ledger row.
            _ = try await store.recordNotification(
                Self.record(
                    Self.notification(
                        "REFUND", signedAt: t + 1_000,
                        transaction: Self.transaction("2001", expires: expires, revokedAt: t + 500)),
                    app: app))
            #expect(store.ledgerChangeMarker() != ledgerBefore)
        }
    }
}
