import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import ReceiptCore
import ReceiptService
import ReceiptStore
import TestSupport
import Testing

@testable import ReceiptServer

/// Exports streaming at once are bounded per account (`ExportSlots`): an export runs for as long as its rows take,
/// so the plan's rate limit alone would let one account hold any number open.
@Suite struct ExportSlotsTests {
    @Test func anAccountHoldsAtMostItsSlotsAndEachComesBackOnce() {
        let slots = ExportSlots(perAccount: 2)
        let account = UUID()
        let other = UUID()
        let first = slots.take(for: account)
        var second = slots.take(for: account)
        #expect(first != nil && second != nil)
        #expect(slots.take(for: account) == nil)
        // Another account has slots of its own.
        #expect(slots.take(for: other) != nil)
        // Released twice, given back once.
        first?.release()
        first?.release()
        #expect(slots.count(of: account) == 1)
        // A slot no one holds any more is given back.
        second = nil
        #expect(slots.count(of: account) == 0)
        #expect(slots.take(for: account) != nil)
    }

    @Test func anExportPastTheAccountsSlotsIsA429AndTheSlotsComeBackWhenExportsEnd() async throws {
        try await withTemporaryTenancy { tenancy, logger in
            _ = try await tenancy.setPlan(
                name: "pro", monthlyQuota: .some(nil), rateLimitPerSecond: 1000, includesEncryptedEndpoint: true,
                monthlyPriceCents: nil, overagePricePer1000Cents: nil)
            _ = try await tenancy.createAccount(name: "Acme", email: "ops@acme.test", planName: "pro")
            let key = try await tenancy.createAPIKey(account: "ops@acme.test", label: nil).clearText
            let app = try await tenancy.addApp(
                account: "ops@acme.test",
                settings: AppSettings(
                    bundleIDs: ["com.example.app"], allowedEnvironments: ["production"], verificationMode: "local",
                    resultCipher: "aes-256-gcm"))
            let configuration = ServerConfiguration.forTests()
            let components = ServerComponents(
                configuration: configuration, store: tenancy.store, metrics: ServerMetrics())
            let router = try buildRouter(
                configuration: configuration, tenancy: tenancy,
                verification: VerificationService(verifier: nil, apple: nil), components: components, logger: logger)
            let uri = "/api/export?token=\(app.token)&kind=usage"
            let headers: HTTPFields = [.authorization: "Bearer \(key)"]
            try await Application(router: router).test(.router) { client in
                // Two exports of the account streaming (held here): a third is refused before its first byte.
                let held = [
                    components.exportSlots.take(for: app.accountID), components.exportSlots.take(for: app.accountID),
                ]
                try await client.execute(uri: uri, method: .get, headers: headers) { response in
                    #expect(response.status == .tooManyRequests)
                    #expect(response.headers[.retryAfter] == "5")
                    #expect(String(buffer: response.body).contains("Too many exports at once"))
                }
                held.forEach { $0?.release() }
                // Ended, they leave room; an export that ran gives its slot back.
                for _ in 0..<3 {
                    try await client.execute(uri: uri, method: .get, headers: headers) { response in
                        #expect(response.status == .ok)
                    }
                }
                #expect(components.exportSlots.count(of: app.accountID) == 0)
            }
        }
    }
}
