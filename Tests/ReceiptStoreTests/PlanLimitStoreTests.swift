import Foundation
import ReceiptCore
import ReceiptService
import ReceiptStore
import TestSupport
import Testing

/// A plan's limits on what an account sets up hold in the store, under concurrency and across servers: inserts under
/// one account (or app) count one after another.
@Suite struct PlanLimitStoreTests {
    /// `attempts` inserts at once; how many were taken.
    static func concurrently(_ attempts: Int, _ insert: @escaping @Sendable () async throws -> Bool) async throws
        -> Int
    {
        try await withThrowingTaskGroup(of: Bool.self) { group in
            for _ in 0..<attempts { group.addTask { try await insert() } }
            var taken = 0
            for try await inserted in group where inserted { taken += 1 }
            return taken
        }
    }

    @Test(arguments: StoreKind.available)
    func appsAndKeysPerAccountHoldUnderConcurrency(kind: StoreKind) async throws {
        try await withTestStore(kind) { store, _ in
            let account = TenancyStoreContractTests.account()
            let other = TenancyStoreContractTests.account(email: "other@example.com")
            try await store.insertAccount(account)
            try await store.insertAccount(other)
            #expect(
                try await Self.concurrently(12) {
                    try await store.insertApp(TenancyStoreContractTests.app(accountID: account.id), limit: 3)
                } == 3)
            #expect(try await store.apps(accountID: account.id).count == 3)
            // Another account's count is its own.
            #expect(try await store.insertApp(TenancyStoreContractTests.app(accountID: other.id), limit: 1))
            #expect(!(try await store.insertApp(TenancyStoreContractTests.app(accountID: other.id), limit: 1)))

            #expect(
                try await Self.concurrently(12) {
                    try await store.insertAPIKey(
                        APIKey.generate(accountID: account.id, label: nil, at: TenancyStoreContractTests.epoch).key,
                        limit: 4)
                } == 4)
            // A revoked key is not counted.
            let keys = try await store.apiKeys(accountID: account.id)
            #expect(keys.count == 4)
            #expect(try await store.revokeAPIKey(id: keys[0].id, accountID: account.id, at: Date()))
            let again = APIKey.generate(accountID: account.id, label: nil, at: TenancyStoreContractTests.epoch).key
            #expect(try await store.insertAPIKey(again, limit: 4))
            let over = APIKey.generate(accountID: account.id, label: nil, at: TenancyStoreContractTests.epoch).key
            #expect(!(try await store.insertAPIKey(over, limit: 4)))
            #expect(try await store.apiKey(prefix: over.prefix) == nil)
        }
    }

    @Test(arguments: StoreKind.available)
    func webhookEndpointsPerAppHoldUnderConcurrency(kind: StoreKind) async throws {
        try await withTestStore(kind) { store, _ in
            let account = TenancyStoreContractTests.account()
            try await store.insertAccount(account)
            let app = TenancyStoreContractTests.app(accountID: account.id)
            let other = TenancyStoreContractTests.app(accountID: account.id, bundleIDs: ["com.example.other"])
            try await store.insertApp(app)
            try await store.insertApp(other)
            #expect(
                try await Self.concurrently(10) {
                    try await store.addWebhookEndpoint(NotificationStoreContractTests.endpoint(app), limit: 2)
                } == 2)
            #expect(try await store.webhookEndpoints(appID: app.id).count == 2)
            #expect(try await store.addWebhookEndpoint(NotificationStoreContractTests.endpoint(other), limit: 2))
        }
    }
}
