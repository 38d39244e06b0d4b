import Foundation
import Logging
import ReceiptCore
import ReceiptService
import ReceiptStore
import TestSupport
import Testing

/// The contract every ``TenancyStore`` keeps, run unchanged against SQLite and PostgreSQL.
@Suite struct TenancyStoreContractTests {
    static let epoch = Date(timeIntervalSince1970: 1_700_000_000.123).roundedToMilliseconds

    static func account(email: String = "dev@example.com", plan: String = "free") -> Account {
        Account(
            id: UUID(), name: "Example", email: email, planName: plan, isEnabled: true, createdAt: epoch,
            updatedAt: epoch)
    }

    static func app(accountID: UUID, bundleIDs: [String] = ["com.example.one", "com.example.two"]) -> App {
        App(
            id: UUID(), accountID: accountID, token: "app_" + UUID().uuidString.lowercased(), name: "One",
            bundleIDs: bundleIDs.map { BundleID($0)! }, allowedEnvironments: [.production, .sandbox],
            verificationMode: .localThenApple, sharedSecret: SealedSecret(bytes: [1, 2, 3]),
            appStoreServerCredentials: AppStoreServerCredentials(
                issuerID: "57246542-96fe-1a63-e053-0824d011072a", keyID: "2X9R4HXF34",
                privateKey: SealedSecret(bytes: [4, 5, 6])),
            resultCipher: .aes256GCM, resultKey: SealedSecret(bytes: Array(repeating: 7, count: 45)),
            allowsTestData: true, isEnabled: true, createdAt: epoch, updatedAt: epoch)
    }

    @Test(arguments: StoreKind.available)
    func migrationsAreIdempotentAndSeedThePlans(kind: StoreKind) async throws {
        try await withTestStore(kind) { store, _ in
            try await store.migrate()
            try await store.migrate()
            #expect(try await store.plans() == Plan.seeded.sorted { $0.name < $1.name })
            #expect(try await store.plan(named: "pro") == Plan.seeded[1])
            #expect(try await store.plan(named: "gold") == nil)
        }
    }

    @Test(arguments: StoreKind.available)
    func plansAreCreatedAndReplaced(kind: StoreKind) async throws {
        try await withTestStore(kind) { store, _ in
            var plan = Plan(
                name: "gold", monthlyQuota: 10, rateLimitPerSecond: 2, includesEncryptedEndpoint: true,
                monthlyPriceCents: 100, overagePricePer1000Cents: 7)
            try await store.savePlan(plan)
            #expect(try await store.plan(named: "gold") == plan)
            #expect(plan.limits == .standard)
            plan.monthlyQuota = nil
            plan.includesEncryptedEndpoint = false
            plan.limits = PlanLimits(apps: 1, apiKeys: 2, bundleIDs: 3, products: 4, webhookEndpoints: 5)
            try await store.savePlan(plan)
            #expect(try await store.plan(named: "gold") == plan)
            #expect(try await store.plans().count == Plan.seeded.count + 1)
        }
    }

    @Test(arguments: StoreKind.available)
    func accountsRoundTripAndEmailsAreUnique(kind: StoreKind) async throws {
        try await withTestStore(kind) { store, _ in
            var account = Self.account()
            try await store.insertAccount(account)
            #expect(try await store.account(id: account.id) == account)
            #expect(try await store.account(email: "dev@example.com") == account)
            #expect(try await store.account(email: "other@example.com") == nil)

            await #expect(throws: ServiceError(.duplicateEmail)) {
                try await store.insertAccount(Self.account())
            }
            await #expect(throws: ServiceError(.invalidArgument)) {
                try await store.insertAccount(Self.account(email: "x@example.com", plan: "nonexistent"))
            }
            #expect(try await store.accounts() == [account])

            account.planName = "pro"
            account.isEnabled = false
            account.updatedAt = Self.epoch.addingTimeInterval(60).roundedToMilliseconds
            #expect(try await store.updateAccount(account))
            #expect(try await store.account(id: account.id) == account)
            #expect(try await store.updateAccount(Self.account(email: "ghost@example.com")) == false)
        }
    }

    @Test(arguments: StoreKind.available)
    func apiKeysAreFoundByPrefixAndRevokedOnce(kind: StoreKind) async throws {
        try await withTestStore(kind) { store, _ in
            let account = Self.account()
            try await store.insertAccount(account)
            let (clearText, key) = APIKey.generate(accountID: account.id, label: "ci", at: Self.epoch)
            try await store.insertAPIKey(key)
            let found = try #require(try await store.apiKey(prefix: key.prefix))
            #expect(found == key)
            #expect(found.matches(clearText))
            #expect(try await store.apiKeys(accountID: account.id) == [key])

            let used = Self.epoch.addingTimeInterval(5).roundedToMilliseconds
            try await store.recordAPIKeyUse(id: key.id, at: used)
            #expect(try await store.apiKey(prefix: key.prefix)?.lastUsedAt == used)

            #expect(try await store.revokeAPIKey(id: key.id, accountID: UUID(), at: used) == false)
            #expect(try await store.revokeAPIKey(id: key.id, accountID: account.id, at: used))
            #expect(try await store.revokeAPIKey(id: key.id, accountID: account.id, at: used) == false)
            #expect(try await store.apiKey(prefix: key.prefix)?.revokedAt == used)
        }
    }

    @Test(arguments: StoreKind.available)
    func appsRoundTripWithOrderedBundleIDs(kind: StoreKind) async throws {
        try await withTestStore(kind) { store, _ in
            let account = Self.account()
            try await store.insertAccount(account)
            var app = Self.app(accountID: account.id, bundleIDs: ["com.example.zeta", "com.example.alpha"])
            try await store.insertApp(app)
            #expect(try await store.app(token: app.token) == app)
            #expect(try await store.apps(accountID: account.id) == [app])
            #expect(try await store.apps(accountID: UUID()) == [])

            app.token = "app_rotated"
            app.bundleIDs = [BundleID("com.example.beta")!]
            app.sharedSecret = nil
            app.appStoreServerCredentials = nil
            app.allowedEnvironments = [.production]
            app.verificationMode = .apple
            app.resultCipher = .aes256CBC
            app.isEnabled = false
            #expect(try await store.updateApp(app))
            #expect(try await store.app(token: "app_rotated") == app)
            #expect(try await store.apps(accountID: nil) == [app])

            #expect(try await store.deleteApp(id: app.id))
            #expect(try await store.deleteApp(id: app.id) == false)
            #expect(try await store.app(token: "app_rotated") == nil)
        }
    }

    @Test(arguments: StoreKind.available)
    func aFailedAppInsertWritesNothing(kind: StoreKind) async throws {
        try await withTestStore(kind) { store, _ in
            let account = Self.account()
            try await store.insertAccount(account)
            // The second bundle ID row violates the (app, bundle ID) uniqueness after the app row went in.
            let app = Self.app(accountID: account.id, bundleIDs: ["com.example.same", "com.example.same"])
            await #expect(throws: ServiceError.self) { try await store.insertApp(app) }
            #expect(try await store.app(token: app.token) == nil)
            #expect(try await store.apps(accountID: nil) == [])
        }
    }

    @Test(arguments: StoreKind.available)
    func theFirstMasterKeyCheckWins(kind: StoreKind) async throws {
        try await withTestStore(kind) { store, _ async throws in
            #expect(try await store.claimMasterKeyCheck("first") == "first")
            #expect(try await store.claimMasterKeyCheck("second") == "first")
        }
    }

    @Test(arguments: StoreKind.available)
    func concurrentMigrationsAgree(kind: StoreKind) async throws {
        try await withTestStore(kind) { _, location in
            let logger = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
            try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<4 {
                    group.addTask { try await location.withStore(logger: logger) { try await $0.plans().count } }
                }
                for try await count in group { #expect(count == Plan.seeded.count) }
            }
        }
    }

    @Test func postgresRunsUnderCI() {
        // CI must exercise PostgreSQL: the test script starts a server and sets the URL.
        if ProcessInfo.processInfo.environment["CI"] != nil {
            #expect(TestPostgres.serverURL != nil, "CI is set but RECEIPTVERIFY_TEST_POSTGRES_URL is not")
        }
    }
}
