import Foundation
import ReceiptCore
import Testing

@testable import ReceiptService

/// The rules of recording an input's transactions (``LedgerRecorder``) against the in-memory ledger: claims, their
/// transfer and refusal, deliveries, revocations, events, and a group giving what one-after-another gives.
@Suite struct LedgerRecorderTests {
    static let start = Date(timeIntervalSince1970: 1_790_000_000)
    static let appID = UUID()

    static func purchase(_ id: String, original: String? = nil, revokedAt: Int64? = nil) -> PurchaseTransaction {
        PurchaseTransaction(
            transactionID: id, originalTransactionID: original ?? id, productID: "com.example.coins",
            purchaseDate: 1_700_000_000_000, revocationDate: revokedAt, revocationReason: revokedAt.map { _ in 1 })
    }

    static func recording(
        _ transactions: [PurchaseTransaction], user: String? = nil, policy: ClaimsPolicy = .flag,
        once: Bool = true, at offset: TimeInterval = 0, request: String = "r1"
    ) -> LedgerRecording {
        var recording = LedgerRecording(
            appID: appID, environment: .production, transactions: transactions, user: user,
            movesClaims: policy == .transfer, deliversNew: once, requestID: request,
            now: start.addingTimeInterval(offset))
        recording.refusesOtherUsers = policy == .refuse
        return recording
    }

    /// An endpoint of the app that takes every event.
    static var everything: WebhookEndpoint {
        WebhookEndpoint(
            id: UUID(), appID: appID, url: "https://hooks.example.com/", environments: [], eventTypes: ["*"],
            forwardsSignedPayload: false, secret: SealedSecret(bytes: Array(repeating: 9, count: 40)),
            createdAt: start)
    }

    static func record(_ recording: LedgerRecording, in ledger: MemoryLedger) async throws -> LedgerRecorder.Outcome {
        try await LedgerRecorder.record(recording, with: ledger.writer(recording.appID, recording.environment))
    }

    @Test func theFirstUserClaimsAndIsDeliveredOnceAnotherIsFlagged() async throws {
        let ledger = MemoryLedger(endpoints: [Self.everything])
        let first = try await Self.record(Self.recording([Self.purchase("1")], user: "alice"), in: ledger)
        #expect(first.result.map(\.isNew) == [true])
        #expect(first.result.map(\.deliveredNow) == [true])
        #expect(first.result[0].entry.claimant == "alice")
        #expect(!first.changed)
        #expect(ledger.ledger(Self.appID).claims == ["1": "alice"])

        let again = try await Self.record(
            Self.recording([Self.purchase("1")], user: "alice", at: 5, request: "r2"), in: ledger)
        #expect(again.result.map(\.isNew) == [false])
        #expect(again.result.map(\.deliveredNow) == [false])

        let bob = try await Self.record(
            Self.recording([Self.purchase("1")], user: "bob", at: 10, request: "r3"), in: ledger)
        #expect(bob.result[0].entry.claimant == "alice")
        #expect(bob.result.map(\.deliveredNow) == [false])
        #expect(ledger.eventTypes == ["transaction.created", "claim.conflict"])
        #expect(ledger.events[1].data["presented_by"] == .string("bob"))
    }

    @Test func withoutAnEndpointLedgerChangesMakeNoEvents() async throws {
        let ledger = MemoryLedger()
        _ = try await Self.record(Self.recording([Self.purchase("1")], user: "alice"), in: ledger)
        _ = try await Self.record(Self.recording([Self.purchase("1")], user: "bob"), in: ledger)
        #expect(ledger.events.isEmpty)
    }

    @Test func aTransferMovesTheClaimAndSaysFromWhom() async throws {
        let ledger = MemoryLedger(endpoints: [Self.everything])
        _ = try await Self.record(Self.recording([Self.purchase("1")], user: "alice"), in: ledger)
        let moved = try await Self.record(
            Self.recording([Self.purchase("1")], user: "bob", policy: .transfer, at: 1), in: ledger)
        #expect(moved.result[0].transferredFrom == "alice")
        #expect(moved.result[0].entry.claimant == "bob")
        #expect(moved.changed)
        #expect(ledger.ledger(Self.appID).claims == ["1": "bob"])
        #expect(ledger.eventTypes == ["transaction.created", "claim.transferred"])
        #expect(ledger.events[1].data["previous_user"] == .string("alice"))
    }

    @Test func aRefusalWritesNothing() async throws {
        let ledger = MemoryLedger(endpoints: [Self.everything])
        _ = try await Self.record(Self.recording([Self.purchase("1")], user: "alice"), in: ledger)
        await #expect(throws: ServiceError(.claimedByOtherUser)) {
            _ = try await Self.record(
                Self.recording([Self.purchase("1"), Self.purchase("2")], user: "bob", policy: .refuse, at: 1),
                in: ledger)
        }
        let after = ledger.ledger(Self.appID)
        #expect(after.rows.keys.sorted() == ["1"])
        #expect(after.claims == ["1": "alice"])
        #expect(ledger.eventTypes == ["transaction.created"])
    }

    @Test func aRenewalFirstShownByAnotherUserIsDeliveredToItsClaimant() async throws {
        let ledger = MemoryLedger()
        _ = try await Self.record(Self.recording([Self.purchase("1")], user: "alice"), in: ledger)
        let renewal = Self.purchase("2", original: "1")
        let byBob = try await Self.record(Self.recording([renewal], user: "bob", at: 1), in: ledger)
        #expect(byBob.result.map(\.isNew) == [true])
        #expect(byBob.result.map(\.deliveredNow) == [false])
        let byAlice = try await Self.record(Self.recording([renewal], user: "alice", at: 2), in: ledger)
        #expect(byAlice.result.map(\.deliveredNow) == [true])
        #expect(ledger.ledger(Self.appID).rows["2"]?.deliveredAt == Self.start.addingTimeInterval(2))
    }

    @Test func anInputRevocationIsRecordedOnceAndNotUndoneByAnUnrevokedInput() async throws {
        let ledger = MemoryLedger(endpoints: [Self.everything])
        _ = try await Self.record(Self.recording([Self.purchase("1")]), in: ledger)
        let revoked = try await Self.record(
            Self.recording([Self.purchase("1", revokedAt: 1_700_000_100_000)], at: 1), in: ledger)
        #expect(revoked.result[0].revokedNow)
        #expect(revoked.changed)
        let plain = try await Self.record(Self.recording([Self.purchase("1")], at: 2), in: ledger)
        #expect(plain.result[0].entry.isRevoked)
        #expect(!plain.result[0].revokedNow)
        #expect(ledger.eventTypes == ["transaction.created", "transaction.revoked"])
    }

    @Test func aGroupGivesWhatOneAfterAnotherGives() async throws {
        let group = [
            Self.recording([Self.purchase("1"), Self.purchase("2", original: "1")], user: "alice", request: "a"),
            Self.recording([Self.purchase("2", original: "1"), Self.purchase("3")], user: "bob", request: "b"),
            Self.recording([Self.purchase("3"), Self.purchase("4")], request: "c"),
            Self.recording([Self.purchase("4")], user: "carol", request: "d"),
        ]
        let alone = MemoryLedger(endpoints: [Self.everything])
        var oneByOne: [[LedgerRecorded]] = []
        for recording in group { oneByOne.append(try await Self.record(recording, in: alone).result) }

        let together = MemoryLedger(endpoints: [Self.everything])
        let grouped = try await LedgerRecorder.recordTogether(group) { together.writer($0.appID, $0.environment) }
        // What an answer shows: a member without a user is not told who claims (a later member's claim may already
        // be made in the group), everything else is the same.
        func shown(_ results: [[LedgerRecorded]]) -> [[LedgerRecorded]] {
            zip(group, results).map { recording, results in
                results.map { result in
                    var result = result
                    if recording.user == nil { result.entry.claimant = nil }
                    return result
                }
            }
        }
        #expect(shown(grouped.map(\.result)) == shown(oneByOne))
        #expect(together.ledger(Self.appID).claims == alone.ledger(Self.appID).claims)
        #expect(together.ledger(Self.appID).rows == alone.ledger(Self.appID).rows)
        #expect(together.eventTypes.sorted() == alone.eventTypes.sorted())
        // One insert for the whole group.
        #expect(together.statements("insertIfAbsent") == 1)
    }

    @Test func aRecordingItsCallerAbandonedIsNotWrittenATakenOneIs() async throws {
        let ledger = MemoryLedger()
        var abandoned = Self.recording([Self.purchase("1")], request: "gone")
        abandoned.commitClaim = CommitClaim()
        #expect(abandoned.commitClaim?.abandon() == true)
        var taken = Self.recording([Self.purchase("2")], request: "here")
        taken.commitClaim = CommitClaim()
        let outcomes = try await LedgerRecorder.recordTogether([abandoned, taken]) {
            ledger.writer($0.appID, $0.environment)
        }
        #expect(outcomes.map(\.result.count) == [0, 1])
        #expect(ledger.ledger(Self.appID).rows.keys.sorted() == ["2"])
        // Taken: the caller can no longer give it up, and a failed group's retry alone still records it.
        #expect(taken.commitClaim?.abandon() == false)
        #expect(try await Self.record(taken, in: MemoryLedger()).result.map(\.deliveredNow) == [true])
        await #expect(throws: CancellationError.self) { _ = try await Self.record(abandoned, in: ledger) }
        #expect(ledger.ledger(Self.appID).rows.keys.sorted() == ["2"])
    }
}

/// The statuses an enriched answer's renewal infos state (``SubscriptionStatus/init(renewal:purchases:appID:environment:now:)``),
/// and their writing with the recording: the newest signed statement wins.
@Suite struct RenewalStatusTests {
    static let now = Date(timeIntervalSince1970: 1_790_000_000)
    static let nowMilliseconds: Int64 = 1_790_000_000_000
    static let hour: Int64 = 3_600_000

    static func period(_ id: String, expires: Int64, revoked: Bool = false) -> PurchaseTransaction {
        PurchaseTransaction(
            transactionID: id, originalTransactionID: "1", productID: "com.example.monthly",
            purchaseDate: expires - 720 * hour, expiresDate: expires,
            revocationDate: revoked ? expires - 100 * hour : nil, revocationReason: revoked ? 0 : nil)
    }

    static func renewal(
        signed: Int64 = nowMilliseconds - hour, retrying: Bool = false, grace: Int64? = nil, renews: Int = 1,
        renewalDate: Int64? = nil
    ) -> JSONObject {
        var object: JSONObject = [
            "originalTransactionId": .string("1"), "productId": .string("com.example.monthly"),
            "autoRenewProductId": .string("com.example.yearly"), "autoRenewStatus": .integer(Int64(renews)),
            "isInBillingRetryPeriod": .bool(retrying), "signedDate": .integer(signed),
        ]
        if let grace { object["gracePeriodExpiresDate"] = .integer(grace) }
        if let renewalDate { object["renewalDate"] = .integer(renewalDate) }
        return object
    }

    static func status(_ renewal: JSONObject, _ purchases: [PurchaseTransaction]) -> SubscriptionStatus? {
        SubscriptionStatus(
            renewal: renewal, purchases: purchases, appID: LedgerRecorderTests.appID, environment: .production,
            now: now)
    }

    @Test func aRenewalInfoStatesTheStateOfTheLatestPeriod() throws {
        let old = Self.period("1", expires: Self.nowMilliseconds - 700 * Self.hour)
        let current = Self.period("2", expires: Self.nowMilliseconds + 10 * Self.hour)
        let active = try #require(Self.status(Self.renewal(renews: 0), [current, old]))
        #expect(active.state == .active && active.expiresDate == current.expiresDate)
        #expect(active.autoRenews == false && active.autoRenewProductID == "com.example.yearly")
        #expect(active.asOf == Self.nowMilliseconds - Self.hour && active.productID == "com.example.monthly")

        let lapsed = Self.period("2", expires: Self.nowMilliseconds - Self.hour)
        let grace = Self.nowMilliseconds + 5 * Self.hour
        let inGrace = try #require(Self.status(Self.renewal(retrying: true, grace: grace), [lapsed]))
        #expect(inGrace.state == .gracePeriod && inGrace.gracePeriodExpiresDate == grace)
        #expect(Self.status(Self.renewal(retrying: true), [lapsed])?.state == .billingRetry)
        #expect(Self.status(Self.renewal(), [lapsed])?.state == .expired)
        #expect(
            Self.status(Self.renewal(), [Self.period("2", expires: Self.nowMilliseconds, revoked: true)])?.state
                == .revoked)
        // Apple's renewal date stands for a period the history has not shown yet.
        let renewed = try #require(
            Self.status(Self.renewal(renewalDate: Self.nowMilliseconds + 700 * Self.hour), [lapsed]))
        #expect(renewed.state == .active && renewed.expiresDate == Self.nowMilliseconds + 700 * Self.hour)
        // Nothing to judge by, or no date or subscription named: no statement.
        #expect(Self.status(Self.renewal(), []) == nil)
        var unsigned = Self.renewal()
        unsigned["signedDate"] = nil
        #expect(Self.status(unsigned, [lapsed]) == nil)
        var unnamed = Self.renewal()
        unnamed["originalTransactionId"] = nil
        #expect(Self.status(unnamed, [lapsed]) == nil)
    }

    @Test func aRecordingWritesItsStatusesUnlessOneSignedLaterIsStored() async throws {
        let ledger = MemoryLedger(endpoints: [LedgerRecorderTests.everything])
        let lapsed = Self.period("2", expires: Self.nowMilliseconds - Self.hour)
        var recording = LedgerRecorderTests.recording([lapsed])
        let retrying = try #require(Self.status(Self.renewal(retrying: true), [lapsed]))
        recording.statuses = [retrying]
        _ = try await LedgerRecorderTests.record(recording, in: ledger)
        #expect(ledger.ledger(LedgerRecorderTests.appID).statuses["1"]?.state == .billingRetry)
        #expect(ledger.eventTypes == ["transaction.created", "subscription.status_changed"])

        // An older renewal info (signed before) changes nothing; a newer one without an expiry keeps the stored one.
        var stale = LedgerRecorderTests.recording([lapsed], at: 1)
        stale.statuses = [
            try #require(Self.status(Self.renewal(signed: Self.nowMilliseconds - 2 * Self.hour), [lapsed]))
        ]
        _ = try await LedgerRecorderTests.record(stale, in: ledger)
        #expect(ledger.ledger(LedgerRecorderTests.appID).statuses["1"]?.state == .billingRetry)
        #expect(ledger.eventTypes.count == 2)

        // Renewal infos alone (no transaction) are written too.
        var alone = LedgerRecorderTests.recording([], at: 2)
        alone.statuses = [try #require(Self.status(Self.renewal(signed: Self.nowMilliseconds), [lapsed]))]
        _ = try await LedgerRecorderTests.record(alone, in: ledger)
        let stored = try #require(ledger.ledger(LedgerRecorderTests.appID).statuses["1"])
        #expect(stored.state == .expired && stored.asOf == Self.nowMilliseconds)
        #expect(ledger.eventTypes.last == "subscription.status_changed")
    }
}
