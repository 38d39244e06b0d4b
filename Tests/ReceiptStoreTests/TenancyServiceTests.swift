import Crypto
import Foundation
import ReceiptCore
import ReceiptService
import ReceiptStore
import TestSupport
import Testing

/// The operator's use cases through ``TenancyService`` on both stores: validation happens before any write.
@Suite struct TenancyServiceTests {
    func withTenancy(_ kind: StoreKind, _ body: @Sendable (TenancyService) async throws -> Void) async throws {
        try await withTestStore(kind) { store, _ in
            let tenancy = TenancyService(store: store, masterKey: MasterKey.generate())
            try await tenancy.checkMasterKey()
            try await body(tenancy)
        }
    }

    @Test(arguments: StoreKind.available)
    func accountKeyAndAppEndToEnd(kind: StoreKind) async throws {
        try await withTenancy(kind) { tenancy in
            let account = try await tenancy.createAccount(name: " Acme ", email: "Ops@Acme.io", planName: "pro")
            #expect(account.name == "Acme")
            #expect(account.email == "ops@acme.io")
            #expect(try await tenancy.account("OPS@acme.io") == account)
            #expect(try await tenancy.account(account.id.uuidString) == account)

            let (clearText, key) = try await tenancy.createAPIKey(account: "ops@acme.io", label: "backend")
            #expect(clearText.hasPrefix("rvk_") && clearText.count == 52)
            #expect(key.prefix == String(clearText.prefix(12)))
            #expect(!key.hash.isEmpty && key.matches(clearText) && !key.matches(clearText + "x"))

            let app = try await tenancy.addApp(
                account: "ops@acme.io",
                settings: AppSettings(bundleIDs: ["com.acme.one", "com.acme.two"], sharedSecret: "0123456789abcdef"))
            #expect(app.bundleIDs.map(\.value) == ["com.acme.one", "com.acme.two"])
            #expect(app.name == "com.acme.one")
            #expect(app.verificationMode == .local)
            #expect(app.resultCipher == .aes256CBC)
            #expect(app.allowedEnvironments == [.production, .sandbox])
            #expect(try tenancy.resultKey(of: app).count == 32)
            #expect(try tenancy.sharedSecret(of: app) == "0123456789abcdef")
            #expect(app.token.hasPrefix("app_") && app.token.count == 36)

            let stored = try await tenancy.app(token: app.token)
            #expect(stored == app)
            #expect(try tenancy.resultKey(of: stored) == tenancy.resultKey(of: app))
        }
    }

    @Test(arguments: StoreKind.available)
    func badInputIsRejectedBeforeAnyWrite(kind: StoreKind) async throws {
        try await withTenancy(kind) { tenancy in
            _ = try await tenancy.createAccount(name: "A", email: "a@example.com", planName: "free")
            await #expect(throws: ServiceError(.duplicateEmail)) {
                try await tenancy.createAccount(name: "B", email: "A@example.com", planName: "free")
            }
            await #expect(throws: ServiceError(.unknownPlan)) {
                try await tenancy.createAccount(name: "B", email: "b@example.com", planName: "platinum")
            }
            await #expect(throws: ServiceError(.invalidArgument)) {
                try await tenancy.createAccount(name: "B", email: "not-an-email", planName: "free")
            }
            #expect(try await tenancy.accounts().count == 1)

            for bundleIDs in [["com"], ["com..example"], ["com.example.app", "has space.x"], [], ["a.b", "a.b"]] {
                await #expect(throws: ServiceError(.invalidArgument)) {
                    try await tenancy.addApp(account: "a@example.com", settings: AppSettings(bundleIDs: bundleIDs))
                }
            }
            for settings in [
                AppSettings(bundleIDs: ["com.example.app"], allowedEnvironments: ["staging"]),
                AppSettings(bundleIDs: ["com.example.app"], verificationMode: "remote"),
                AppSettings(bundleIDs: ["com.example.app"], resultCipher: "rot13"),
                AppSettings(bundleIDs: ["com.example.app"], sharedSecret: "short"),
                AppSettings(bundleIDs: ["com.example.app"], appleIssuerID: "57246542-96fe-1a63-e053-0824d011072a"),
                AppSettings(
                    bundleIDs: ["com.example.app"], appleIssuerID: "57246542-96fe-1a63-e053-0824d011072a",
                    appleKeyID: "ABC",
                    applePrivateKeyPEM: "-----BEGIN PRIVATE KEY-----\nnope\n-----END PRIVATE KEY-----"),
            ] {
                await #expect(throws: ServiceError(.invalidArgument)) {
                    try await tenancy.addApp(account: "a@example.com", settings: settings)
                }
            }
            await #expect(throws: ServiceError(.unknownAccount)) {
                try await tenancy.addApp(account: "nobody@example.com", settings: AppSettings(bundleIDs: ["a.b"]))
            }
            #expect(try await tenancy.apps(account: nil).isEmpty)

            await #expect(throws: ServiceError(.unknownApp)) { try await tenancy.app(token: "app_missing") }
            await #expect(throws: ServiceError(.unknownApp)) { try await tenancy.removeApp(token: "app_missing") }
        }
    }

    @Test(arguments: StoreKind.available)
    func appsAreUpdatedRotatedAndRemoved(kind: StoreKind) async throws {
        try await withTenancy(kind) { tenancy in
            _ = try await tenancy.createAccount(name: "A", email: "a@example.com", planName: "free")
            let pem = P256PEM.make()
            let app = try await tenancy.addApp(
                account: "a@example.com",
                settings: AppSettings(
                    bundleIDs: ["com.example.app"], appleIssuerID: "57246542-96FE-1A63-E053-0824D011072A",
                    appleKeyID: "2X9R4HXF34", applePrivateKeyPEM: pem))
            #expect(app.appStoreServerCredentials?.issuerID == "57246542-96fe-1a63-e053-0824d011072a")

            let updated = try await tenancy.updateApp(
                token: app.token,
                settings: AppSettings(
                    name: "Renamed", bundleIDs: ["com.example.app", "com.example.app.watch"],
                    allowedEnvironments: ["production"], verificationMode: "local-then-apple",
                    sharedSecret: "abcdef0123456789", removeAppleCredentials: true, resultCipher: "aes-256-gcm",
                    allowsTestData: true, isEnabled: false))
            #expect(updated.name == "Renamed")
            #expect(updated.bundleIDs.count == 2)
            #expect(updated.allowedEnvironments == [.production])
            #expect(updated.verificationMode == .localThenApple)
            #expect(updated.appStoreServerCredentials == nil)
            #expect(updated.resultCipher == .aes256GCM)
            #expect(updated.allowsTestData && !updated.isEnabled)
            #expect(try tenancy.sharedSecret(of: updated) == "abcdef0123456789")
            #expect(try tenancy.resultKey(of: updated) == tenancy.resultKey(of: app))

            let rotated = try await tenancy.rotateToken(token: app.token)
            #expect(rotated.token != app.token)
            await #expect(throws: ServiceError(.unknownApp)) { try await tenancy.app(token: app.token) }

            let rekeyed = try await tenancy.rotateResultKey(token: rotated.token)
            #expect(try tenancy.resultKey(of: rekeyed) != tenancy.resultKey(of: app))
            #expect(
                try tenancy.resultKey(of: try await tenancy.app(token: rotated.token)) == tenancy.resultKey(of: rekeyed)
            )

            _ = try await tenancy.removeApp(token: rotated.token)
            #expect(try await tenancy.apps(account: "a@example.com").isEmpty)
        }
    }

    @Test(arguments: StoreKind.available)
    func enrichmentNeedsCredentialsAndLookupSettingsAreChecked(kind: StoreKind) async throws {
        try await withTenancy(kind) { tenancy in
            _ = try await tenancy.createAccount(name: "A", email: "a@example.com", planName: "pro")
            for settings in [
                AppSettings(bundleIDs: ["com.example.app"], enrichment: "on"),
                AppSettings(bundleIDs: ["com.example.app"], enrichment: "yes"),
                AppSettings(bundleIDs: ["com.example.app"], idLookups: "deny"),
            ] {
                await #expect(throws: ServiceError(.invalidArgument)) {
                    try await tenancy.addApp(account: "a@example.com", settings: settings)
                }
            }
            #expect(try await tenancy.apps(account: nil).isEmpty)
            #expect(
                AppSettings(enrichment: "yes", idLookups: "deny").problems() == [
                    .enrichment: "unknown enrichment 'yes': expected off or on",
                    .idLookups: "unknown id look-ups 'deny': expected allow or refuse",
                ])

            let app = try await tenancy.addApp(
                account: "a@example.com", settings: AppSettings(bundleIDs: ["com.example.app"]))
            // An Apple app id is App Store Connect's number; "" removes it.
            await #expect(throws: ServiceError(.invalidArgument)) {
                try await tenancy.addApp(
                    account: "a@example.com", settings: AppSettings(bundleIDs: ["com.example.x"], appleAppID: "12a"))
            }
            let bound = try await tenancy.addApp(
                account: "a@example.com", settings: AppSettings(bundleIDs: ["com.example.bound"], appleAppID: "1234"))
            #expect(bound.appleAppID == 1_234)
            #expect(
                try await tenancy.updateApp(token: bound.token, settings: AppSettings(appleAppID: "")).appleAppID == nil
            )
            // A bundle ID is one app's in an account (each app has its own ledger), unless the operator says the
            // apps share it; another account's app may hold it.
            await #expect(throws: ServiceError(.invalidArgument)) {
                try await tenancy.addApp(
                    account: "a@example.com", settings: AppSettings(bundleIDs: ["com.example.bound"]))
            }
            await #expect(throws: ServiceError(.invalidArgument)) {
                try await tenancy.updateApp(token: app.token, settings: AppSettings(bundleIDs: ["com.example.bound"]))
            }
            var sharing = AppSettings(bundleIDs: ["com.example.bound"])
            sharing.sharesBundleIDs = true
            _ = try await tenancy.addApp(account: "a@example.com", settings: sharing)
            _ = try await tenancy.createAccount(name: "B", email: "b@example.com", planName: "free")
            _ = try await tenancy.addApp(
                account: "b@example.com", settings: AppSettings(bundleIDs: ["com.example.bound"]))
            // Look-ups by id are off for a new app.
            #expect(app.enrichment == .off && app.idLookups == .refuse)
            await #expect(throws: ServiceError(.invalidArgument)) {
                try await tenancy.updateApp(token: app.token, settings: AppSettings(enrichment: "on"))
            }
            let allowing = try await tenancy.updateApp(token: app.token, settings: AppSettings(idLookups: "allow"))
            #expect(allowing.idLookups == .allow && allowing.enrichment == .off)

            let enriched = try await tenancy.updateApp(
                token: app.token,
                settings: AppSettings(
                    appleIssuerID: "57246542-96fe-1a63-e053-0824d011072a", appleKeyID: "2X9R4HXF34",
                    applePrivateKeyPEM: P256PEM.make(), enrichment: "on"))
            #expect(enriched.enrichment == .on && enriched.idLookups == .allow)
            #expect(try await tenancy.app(token: app.token) == enriched)
            // Removing the credentials would leave enrichment without them.
            await #expect(throws: ServiceError(.invalidArgument)) {
                try await tenancy.updateApp(token: app.token, settings: AppSettings(removeAppleCredentials: true))
            }
            let plain = try await tenancy.updateApp(
                token: app.token, settings: AppSettings(removeAppleCredentials: true, enrichment: "off"))
            #expect(plain.appStoreServerCredentials == nil && plain.enrichment == .off)
        }
    }

    @Test(arguments: StoreKind.available)
    func keysAreRevokedByIDOrPrefix(kind: StoreKind) async throws {
        try await withTenancy(kind) { tenancy in
            _ = try await tenancy.createAccount(name: "A", email: "a@example.com", planName: "free")
            _ = try await tenancy.createAccount(name: "B", email: "b@example.com", planName: "free")
            let first = try await tenancy.createAPIKey(account: "a@example.com", label: nil).key
            let second = try await tenancy.createAPIKey(account: "a@example.com", label: "second").key
            await #expect(throws: ServiceError(.unknownKey)) {
                try await tenancy.revokeAPIKey(account: "b@example.com", key: first.prefix)
            }
            #expect(try await tenancy.revokeAPIKey(account: "a@example.com", key: first.prefix).isRevoked)
            #expect(try await tenancy.revokeAPIKey(account: "a@example.com", key: second.id.uuidString).isRevoked)
            await #expect(throws: ServiceError(.invalidArgument)) {
                try await tenancy.revokeAPIKey(account: "a@example.com", key: first.prefix)
            }
            #expect(try await tenancy.apiKeys(account: "a@example.com").allSatisfy(\.isRevoked))
        }
    }

    @Test(arguments: StoreKind.available)
    func plansAndAccountPlansChange(kind: StoreKind) async throws {
        try await withTenancy(kind) { tenancy in
            await #expect(throws: ServiceError(.invalidArgument)) {
                try await tenancy.setPlan(
                    name: "gold", monthlyQuota: nil, rateLimitPerSecond: 3, includesEncryptedEndpoint: nil,
                    monthlyPriceCents: nil, overagePricePer1000Cents: nil)
            }
            let gold = try await tenancy.setPlan(
                name: "gold", monthlyQuota: .some(nil), rateLimitPerSecond: 3, includesEncryptedEndpoint: true,
                monthlyPriceCents: 999, overagePricePer1000Cents: nil)
            #expect(gold.monthlyQuota == nil && gold.overagePricePer1000Cents == 0)
            let free = try await tenancy.setPlan(
                name: "free", monthlyQuota: .some(2_000), rateLimitPerSecond: nil, includesEncryptedEndpoint: nil,
                monthlyPriceCents: nil, overagePricePer1000Cents: nil)
            #expect(free.monthlyQuota == 2_000 && free.rateLimitPerSecond == 5)
            await #expect(throws: ServiceError(.invalidArgument)) {
                try await tenancy.setPlan(
                    name: "free", monthlyQuota: nil, rateLimitPerSecond: 0, includesEncryptedEndpoint: nil,
                    monthlyPriceCents: nil, overagePricePer1000Cents: nil)
            }
            #expect(try await tenancy.plan(named: "free").rateLimitPerSecond == 5)

            _ = try await tenancy.createAccount(name: "A", email: "a@example.com", planName: "free")
            #expect(try await tenancy.setPlan(ofAccount: "a@example.com", to: "gold").planName == "gold")
            await #expect(throws: ServiceError(.unknownPlan)) {
                try await tenancy.setPlan(ofAccount: "a@example.com", to: "platinum")
            }
            #expect(try await tenancy.setEnabled(account: "a@example.com", false).isEnabled == false)
            #expect(try await tenancy.account("a@example.com").planName == "gold")
        }
    }

    @Test(arguments: StoreKind.available)
    func anotherMasterKeyIsRefused(kind: StoreKind) async throws {
        try await withTestStore(kind) { store, _ in
            try await TenancyService(store: store, masterKey: MasterKey.generate()).checkMasterKey()
            await #expect(throws: ServiceError(.wrongMasterKey)) {
                try await TenancyService(store: store, masterKey: MasterKey.generate()).checkMasterKey()
            }
        }
    }
}

/// A fresh P-256 private key in PEM, as App Store Connect's `.p8` files hold; never a real Apple key.
enum P256PEM {
    static func make() -> String { P256.Signing.PrivateKey().pemRepresentation }
}
