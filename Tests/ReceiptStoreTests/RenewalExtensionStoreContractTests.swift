import Foundation
import ReceiptCore
import ReceiptService
import ReceiptStore
import TestSupport
import Testing

/// ``RenewalExtensionStore`` on both stores: one extension per app and request identifier, asked again only when it
/// may be (failed, unknown, or abandoned mid-send); a mass extension's polls claimed by one server at a time.
@Suite struct RenewalExtensionStoreContractTests {
    static let start = Date(timeIntervalSince1970: 1_790_000_000)

    static func record(
        _ app: App, _ identifier: String, state: RenewalExtensionRecord.State = .sending, at date: Date = start,
        product: String? = nil
    ) -> RenewalExtensionRecord {
        RenewalExtensionRecord(
            appID: app.id, requestIdentifier: identifier, environment: .sandbox,
            originalTransactionID: product == nil ? "7100" : nil, productID: product,
            storefronts: product == nil ? [] : ["USA", "FRA"], days: 7, reason: .customerSatisfaction, state: state,
            actor: "api", createdAt: date, updatedAt: date)
    }

    @Test(
        "an identifier is taken once; a failed one may be asked again, a lost one is returned to be looked up",
        arguments: StoreKind.available)
    func identifiersAreTakenOnce(kind: StoreKind) async throws {
        try await LedgerStoreContractTests.withApp(kind) { store, app in
            #expect(try await store.beginRenewalExtension(Self.record(app, "r1")) == nil)
            // Being sent: a second ask gets the first, unchanged.
            let held = try #require(
                try await store.beginRenewalExtension(Self.record(app, "r1", at: Self.start.addingTimeInterval(60))))
            #expect(held == Self.record(app, "r1"))
            // Extended: a repeat answers it, Apple's date kept.
            var done = held
            done.state = .extended
            done.effectiveDate = 1_800_000_000_000
            done.updatedAt = Self.start.addingTimeInterval(2)
            try await store.saveRenewalExtension(done)
            #expect(try await store.beginRenewalExtension(Self.record(app, "r1")) == done)
            // Lost (unknown), with the renewal date stated before it was sent: returned as held, for the caller to
            // look at Apple before anything is sent again (money review M6).
            #expect(try await store.beginRenewalExtension(Self.record(app, "r2")) == nil)
            var lost = Self.record(app, "r2")
            lost.state = .unknown
            lost.expiresBefore = 1_790_000_000_000
            lost.error = "Apple's sandbox API failed (HTTP 503)"
            try await store.saveRenewalExtension(lost)
            #expect(
                try await store.beginRenewalExtension(Self.record(app, "r2", at: Self.start.addingTimeInterval(5)))
                    == lost)
            // Apple did not apply it (failed): the new attempt replaces it.
            var notTaken = lost
            notTaken.state = .failed
            try await store.saveRenewalExtension(notTaken)
            let retry = Self.record(app, "r2", at: Self.start.addingTimeInterval(6))
            #expect(try await store.beginRenewalExtension(retry) == nil)
            #expect(
                try await store.renewalExtensions(appID: app.id, limit: 10).first { $0.requestIdentifier == "r2" }
                    == retry)
            // A send abandoned by its server is returned as held too (the caller judges it by its age).
            #expect(try await store.beginRenewalExtension(Self.record(app, "r3")) == nil)
            let abandoned = try #require(
                try await store.beginRenewalExtension(Self.record(app, "r3", at: Self.start.addingTimeInterval(301))))
            #expect(abandoned.isInDoubt(at: Self.start.addingTimeInterval(301)))
            #expect(!abandoned.isInDoubt(at: Self.start.addingTimeInterval(200)))
            let listed = try await store.renewalExtensions(appID: app.id, limit: 10)
            #expect(listed.map(\.requestIdentifier) == ["r2", "r1", "r3"])
        }
    }

    @Test("a mass extension's polls are claimed by one server at a time until complete", arguments: StoreKind.available)
    func pollsAreLeased(kind: StoreKind) async throws {
        try await LedgerStoreContractTests.withApp(kind) { store, app in
            #expect(
                try await store.beginRenewalExtension(Self.record(app, "m1", product: "com.example.app.monthly")) == nil
            )
            var requested = Self.record(app, "m1", product: "com.example.app.monthly")
            requested.state = .requested
            requested.nextPollAt = Self.start.addingTimeInterval(10)
            try await store.saveRenewalExtension(requested)
            #expect(
                try await store.claimRenewalExtensionPolls(dueBy: Self.start, lease: .seconds(60), limit: 5).isEmpty)
            let now = Self.start.addingTimeInterval(10)
            let claimed = try await store.claimRenewalExtensionPolls(dueBy: now, lease: .seconds(60), limit: 5)
            #expect(claimed.map(\.requestIdentifier) == ["m1"] && claimed.first?.storefronts == ["USA", "FRA"])
            #expect(
                try await store.claimRenewalExtensionPolls(
                    dueBy: now.addingTimeInterval(59), lease: .seconds(60), limit: 5
                ).isEmpty)
            var complete = try #require(claimed.first)
            complete.state = .complete
            complete.succeeded = 30
            complete.failed = 2
            complete.completeDate = 1_790_000_100_000
            complete.nextPollAt = nil
            try await store.saveRenewalExtension(complete)
            #expect(
                try await store.claimRenewalExtensionPolls(
                    dueBy: now.addingTimeInterval(3_600), lease: .seconds(60), limit: 5
                ).isEmpty)
            #expect(try await store.renewalExtensions(appID: app.id, limit: 5) == [complete])
        }
    }

    @Test("retention deletes answered extensions, never one in flight", arguments: StoreKind.available)
    func answeredExtensionsArePurged(kind: StoreKind) async throws {
        try await LedgerStoreContractTests.withApp(kind) { store, app in
            for (identifier, state) in [
                ("done", RenewalExtensionRecord.State.extended), ("lost", .unknown), ("sent", .sending),
                ("polled", .requested),
            ] {
                #expect(try await store.beginRenewalExtension(Self.record(app, identifier)) == nil)
                var record = Self.record(app, identifier)
                record.state = state
                try await store.saveRenewalExtension(record)
            }
            #expect(try await store.purge(.renewalExtensions, before: Self.start, limit: 10) == 0)
            #expect(try await store.purge(.renewalExtensions, before: Self.start.addingTimeInterval(1), limit: 10) == 2)
            let left = try await store.renewalExtensions(appID: app.id, limit: 10).map(\.requestIdentifier)
            #expect(Set(left) == ["sent", "polled"])
        }
    }
}
