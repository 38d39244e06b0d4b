import Foundation
import ReceiptCore
import ReceiptService
import ReceiptStore
import TestSupport
import Testing

/// A plan bounds what an account sets up: apps and keys per account; bundle IDs, products and webhook endpoints per
/// app. What is refused names the plan and writes nothing; what an account already has is kept when its plan shrinks.
@Suite struct PlanLimitServiceTests {
    @Test(arguments: StoreKind.available)
    func theFreePlansLimitsAreRefusedByNameAndWriteNothing(kind: StoreKind) async throws {
        try await withTestStore(kind) { store, _ in
            let tenancy = TenancyService(store: store, masterKey: MasterKey.generate())
            try await tenancy.checkMasterKey()
            _ = try await tenancy.createAccount(name: "A", email: "a@example.com", planName: "free")
            let free = PlanLimits.free

            // Keys: the plan's number, then a refusal; a revoked key frees its place.
            var keys: [APIKey] = []
            for _ in 0..<free.apiKeys {
                keys.append(try await tenancy.createAPIKey(account: "a@example.com", label: nil).key)
            }
            let keyRefusal = try await #require(throws: ServiceError.self) {
                try await tenancy.createAPIKey(account: "a@example.com", label: nil)
            }
            #expect(keyRefusal.code == .invalidArgument && keyRefusal.reason.contains("plan 'free' allows 3 API keys"))
            #expect(try await tenancy.apiKeys(account: "a@example.com").count == free.apiKeys)
            _ = try await tenancy.revokeAPIKey(account: "a@example.com", key: keys[0].id.uuidString)
            _ = try await tenancy.createAPIKey(account: "a@example.com", label: nil)

            // Bundle IDs and products per app, checked before anything is written.
            let tooManyBundles = (0...free.bundleIDs).map { "com.example.b\($0)" }
            await #expect(throws: ServiceError.self) {
                try await tenancy.addApp(account: "a@example.com", settings: AppSettings(bundleIDs: tooManyBundles))
            }
            let tooManyProducts = (0...free.products).map { "com.example.p\($0)" }
            await #expect(throws: ServiceError.self) {
                try await tenancy.addApp(
                    account: "a@example.com",
                    settings: AppSettings(bundleIDs: ["com.example.a"], productCatalog: tooManyProducts))
            }
            #expect(try await tenancy.apps(account: "a@example.com").isEmpty)

            // Apps per account.
            var apps: [App] = []
            for index in 0..<free.apps {
                apps.append(
                    try await tenancy.addApp(
                        account: "a@example.com", settings: AppSettings(bundleIDs: ["com.example.app\(index)"])))
            }
            let appRefusal = try await #require(throws: ServiceError.self) {
                try await tenancy.addApp(account: "a@example.com", settings: AppSettings(bundleIDs: ["com.example.x"]))
            }
            #expect(appRefusal.reason.contains("plan 'free' allows 2 apps per account"))

            // Webhook endpoints per app.
            for index in 0..<free.webhookEndpoints {
                _ = try await tenancy.addWebhookEndpoint(
                    token: apps[0].token, url: "https://hooks.example.com/\(index)", environments: [],
                    eventTypes: ["*"], forwardsSignedPayload: false)
            }
            let endpointRefusal = try await #require(throws: ServiceError.self) {
                try await tenancy.addWebhookEndpoint(
                    token: apps[0].token, url: "https://hooks.example.com/over", environments: [], eventTypes: ["*"],
                    forwardsSignedPayload: false)
            }
            #expect(endpointRefusal.reason.contains("webhook endpoints per app"))
            #expect(try await tenancy.webhookEndpoints(token: apps[0].token).count == free.webhookEndpoints)
            // The other app has places of its own.
            _ = try await tenancy.addWebhookEndpoint(
                token: apps[1].token, url: "https://hooks.example.com/other", environments: [], eventTypes: ["*"],
                forwardsSignedPayload: false)
        }
    }

    @Test(arguments: StoreKind.available)
    func aSmallerPlanKeepsWhatTheAccountHasButNotMore(kind: StoreKind) async throws {
        try await withTestStore(kind) { store, _ in
            let tenancy = TenancyService(store: store, masterKey: MasterKey.generate())
            try await tenancy.checkMasterKey()
            _ = try await tenancy.createAccount(name: "A", email: "a@example.com", planName: "pro")
            let app = try await tenancy.addApp(
                account: "a@example.com",
                settings: AppSettings(
                    bundleIDs: ["com.example.a", "com.example.b", "com.example.c"],
                    productCatalog: ["p.one", "p.two", "p.three"]))
            _ = try await tenancy.setPlan(
                name: "tiny", monthlyQuota: .some(10), rateLimitPerSecond: 1, includesEncryptedEndpoint: nil,
                monthlyPriceCents: nil, overagePricePer1000Cents: nil,
                limits: [.bundleIDs: 1, .products: 1, .apps: 1])
            _ = try await tenancy.setPlan(ofAccount: "a@example.com", to: "tiny")

            // Other settings still change, and the lists may shrink; they may not grow past the plan.
            _ = try await tenancy.updateApp(token: app.token, settings: AppSettings(name: "Renamed"))
            _ = try await tenancy.updateApp(
                token: app.token, settings: AppSettings(bundleIDs: ["com.example.a", "com.example.b"]))
            await #expect(throws: ServiceError.self) {
                try await tenancy.updateApp(
                    token: app.token,
                    settings: AppSettings(bundleIDs: ["com.example.a", "com.example.b", "com.example.d"]))
            }
            await #expect(throws: ServiceError.self) {
                try await tenancy.updateApp(
                    token: app.token, settings: AppSettings(productCatalog: ["p.one", "p.two", "p.three", "p.four"]))
            }
            let kept = try await tenancy.app(token: app.token)
            #expect(kept.name == "Renamed" && kept.bundleIDs.count == 2 && kept.productCatalog?.count == 3)

            // Limits out of range are refused by name.
            let refusal = try await #require(throws: ServiceError.self) {
                try await tenancy.setPlan(
                    name: "tiny", monthlyQuota: nil, rateLimitPerSecond: nil, includesEncryptedEndpoint: nil,
                    monthlyPriceCents: nil, overagePricePer1000Cents: nil, limits: [.webhookEndpoints: 101])
            }
            #expect(refusal.reason.contains("webhook endpoints must be from 0 to 100"))
            await #expect(throws: ServiceError.self) {
                try await tenancy.setPlan(
                    name: "tiny", monthlyQuota: nil, rateLimitPerSecond: nil, includesEncryptedEndpoint: nil,
                    monthlyPriceCents: nil, overagePricePer1000Cents: nil, limits: [.apps: -1])
            }
        }
    }
}
