import Foundation
import ReceiptCore
import Testing

@testable import ReceiptService

/// The rules of recording notifications (``NotificationRecorder``) against the in-memory ledger: each UUID once,
/// `CONSUMPTION_REQUEST`s grouped, revocations and statuses ordered by signed date, and each notification of a group
/// getting the outcome it would have had alone.
@Suite struct NotificationRecorderTests {
    static let start = Date(timeIntervalSince1970: 1_790_000_000)
    static let day: Int64 = 86_400_000
    static var now: Int64 { start.millisecondsSince1970 }
    static let appID = UUID()

    static func transaction(_ id: String, expires: Int64, revokedAt: Int64? = nil) -> JSONObject {
        var object = JSONObject(capacity: 10)
        object.append("transactionId", .string(id))
        object.append("originalTransactionId", .string("1000"))
        object.append("productId", .string("com.example.monthly"))
        object.append("purchaseDate", .integer(expires - 30 * day))
        object.append("expiresDate", .integer(expires))
        object.append("type", .string("Auto-Renewable Subscription"))
        if let revokedAt {
            object.append("revocationDate", .integer(revokedAt))
            object.append("revocationReason", .integer(1))
        }
        return object
    }

    static func record(
        _ type: String, subtype: String? = nil, uuid: String = UUID().uuidString, signedAt: Int64,
        transaction: JSONObject?
    ) -> NotificationRecord {
        var payload = JSONObject(capacity: 2)
        payload.append("notificationType", .string(type))
        let notification = ServerNotification(
            type: type, subtype: subtype, uuid: uuid, signedDate: signedAt, environment: .sandbox,
            bundleID: "com.example.one", payload: payload, transaction: transaction, renewalInfo: nil,
            appTransaction: nil, isTestData: false)
        return NotificationRecord(
            notification: notification, signedPayload: "h.p.s", appID: appID, source: .apple, receivedAt: start)
    }

    static func recordAlone(_ records: [NotificationRecord], in ledger: MemoryLedger) async throws
        -> [NotificationRecorded]
    {
        var results: [NotificationRecorded] = []
        for record in records { results += try await recordTogether([record], in: ledger) }
        return results
    }

    static func recordTogether(_ records: [NotificationRecord], in ledger: MemoryLedger) async throws
        -> [NotificationRecorded]
    {
        try await NotificationRecorder.recordTogether(records) {
            ledger.writer($0.appID, $0.notification.environment)
        }.outcomes.map(\.result)
    }

    static func types(_ recorded: NotificationRecorded) -> [String] {
        guard case .recorded(let events) = recorded else { return ["duplicate"] }
        return events.map(\.type)
    }

    @Test func aUUIDIsRecordedOnceInAGroupAndAfter() async throws {
        let ledger = MemoryLedger()
        let renewal = Self.record(
            "DID_RENEW", uuid: "u1", signedAt: Self.now,
            transaction: Self.transaction("1", expires: Self.now + Self.day))
        let results = try await Self.recordTogether([renewal, renewal], in: ledger)
        #expect(
            results.map(Self.types) == [
                ["notification", "transaction.created", "subscription.status_changed"], ["duplicate"],
            ])
        #expect(try await Self.recordTogether([renewal], in: ledger) == [.duplicate])
        #expect(ledger.ledger(Self.appID, .sandbox).statuses["1000"]?.state == .active)
    }

    @Test func consumptionRequestsMakeEventsOncePerTransaction() async throws {
        let ledger = MemoryLedger()
        let asked = Self.transaction("1", expires: Self.now + Self.day)
        let first = Self.record("CONSUMPTION_REQUEST", signedAt: Self.now, transaction: asked)
        let again = Self.record("CONSUMPTION_REQUEST", signedAt: Self.now + 1_000, transaction: asked)
        let results = try await Self.recordAlone([first, again], in: ledger)
        #expect(Self.types(results[0]).prefix(2) == ["notification", "consumption.requested"])
        #expect(results[1] == .recorded(events: []))
        #expect(ledger.ledger(Self.appID, .sandbox).consumptionRequests == ["1": 2])
    }

    @Test func aStatusSignedEarlierArrivingLaterChangesNothing() async throws {
        let ledger = MemoryLedger()
        let renewed = Self.record(
            "DID_RENEW", signedAt: Self.now, transaction: Self.transaction("2", expires: Self.now + Self.day))
        let expiredEarlier = Self.record(
            "EXPIRED", signedAt: Self.now - 60_000, transaction: Self.transaction("1", expires: Self.now - Self.day))
        let results = try await Self.recordAlone([renewed, expiredEarlier], in: ledger)
        #expect(Self.types(results[1]) == ["notification", "transaction.created"])
        #expect(ledger.ledger(Self.appID, .sandbox).statuses["1000"]?.state == .active)
        #expect(ledger.ledger(Self.appID, .sandbox).statuses["1000"]?.asOf == Self.now)
    }

    @Test func refundsAreOrderedBySignedDate() async throws {
        let ledger = MemoryLedger()
        let expires = Self.now + Self.day
        let bought = Self.record(
            "DID_RENEW", signedAt: Self.now - 10_000, transaction: Self.transaction("1", expires: expires))
        let refund = Self.record(
            "REFUND", uuid: "refund", signedAt: Self.now,
            transaction: Self.transaction("1", expires: expires, revokedAt: Self.now - 1_000))
        let reversed = Self.record(
            "REFUND_REVERSED", signedAt: Self.now + 1_000, transaction: Self.transaction("1", expires: expires))
        let lateRefund = Self.record(
            "REFUND", uuid: "late", signedAt: Self.now - 5_000,
            transaction: Self.transaction("1", expires: expires, revokedAt: Self.now - 6_000))
        let results = try await Self.recordAlone([bought, refund, reversed, lateRefund], in: ledger)
        #expect(Self.types(results[1]).contains("transaction.revoked"))
        #expect(Self.types(results[2]).contains("transaction.revocation_reversed"))
        #expect(!Self.types(results[3]).contains("transaction.revoked"))
        #expect(ledger.ledger(Self.appID, .sandbox).rows["1"]?.isRevoked == false)
        #expect(ledger.ledger(Self.appID, .sandbox).revocationAsOf["1"] == Self.now + 1_000)
    }

    @Test func aGroupGivesWhatOneAfterAnotherGives() async throws {
        let expires = Self.now + Self.day
        let records = [
            Self.record(
                "DID_RENEW", uuid: "a", signedAt: Self.now, transaction: Self.transaction("1", expires: expires)),
            Self.record(
                "REFUND", uuid: "b", signedAt: Self.now + 1,
                transaction: Self.transaction("1", expires: expires, revokedAt: Self.now)),
            Self.record(
                "DID_RENEW", uuid: "a", signedAt: Self.now, transaction: Self.transaction("1", expires: expires)),
            Self.record(
                "REFUND_REVERSED", uuid: "c", signedAt: Self.now + 2,
                transaction: Self.transaction("1", expires: expires)),
            Self.record(
                "EXPIRED", uuid: "d", signedAt: Self.now - 5, transaction: Self.transaction("1", expires: expires)),
        ]
        let alone = MemoryLedger()
        let oneByOne = try await Self.recordAlone(records, in: alone)
        let together = MemoryLedger()
        let grouped = try await Self.recordTogether(records, in: together)
        #expect(grouped.map(Self.types) == oneByOne.map(Self.types))
        #expect(together.ledger(Self.appID, .sandbox).rows == alone.ledger(Self.appID, .sandbox).rows)
        #expect(together.ledger(Self.appID, .sandbox).statuses == alone.ledger(Self.appID, .sandbox).statuses)
        #expect(together.statements("insertNotifications") == 1)
    }
}

/// Whether a verified notification is the app's to take: its bundle ID, an allowed environment, and (a Production
/// one, when the app's Apple ID is bound) its `appAppleId`, as Apple's library checks.
@Suite struct NotificationOwnershipTests {
    static func notification(environment: StoreEnvironment, appAppleID: Int64?) -> ServerNotification {
        var data = JSONObject()
        data.append("bundleId", .string("com.example.one"))
        if let appAppleID { data.append("appAppleId", .integer(appAppleID)) }
        var payload = JSONObject()
        payload.append("notificationType", .string("DID_RENEW"))
        payload.append("data", .object(data))
        return ServerNotification(
            type: "DID_RENEW", subtype: nil, uuid: "u", signedDate: 1, environment: environment,
            bundleID: "com.example.one", payload: payload, transaction: nil, renewalInfo: nil, appTransaction: nil,
            isTestData: false)
    }

    static func app(appleAppID: Int64?) throws -> App {
        var app = try VerificationServiceTests.caller(mode: .local, bundleIDs: ["com.example.one"]).app
        app.allowedEnvironments = [.production, .sandbox]
        app.appleAppID = appleAppID
        return app
    }

    @Test func aBoundAppleIDIsCheckedOnProductionNotifications() throws {
        let bound = try Self.app(appleAppID: 1_234_567_890)
        #expect(
            NotificationIntake.refusal(
                of: Self.notification(environment: .production, appAppleID: 1_234_567_890), for: bound) == nil)
        #expect(
            NotificationIntake.refusal(of: Self.notification(environment: .production, appAppleID: 99), for: bound)?
                .kind == .notTheApps)
        #expect(
            NotificationIntake.refusal(of: Self.notification(environment: .production, appAppleID: nil), for: bound)?
                .kind == .notTheApps)
        // The sandbox states no Apple ID of a released app; unbound apps take any.
        #expect(
            NotificationIntake.refusal(of: Self.notification(environment: .sandbox, appAppleID: nil), for: bound) == nil
        )
        #expect(
            NotificationIntake.refusal(
                of: Self.notification(environment: .production, appAppleID: 99), for: try Self.app(appleAppID: nil))
                == nil)
    }
}
