import Foundation
import ReceiptCore
import Testing

@testable import ReceiptService

/// How a store's voided purchases revoke a transaction (money review M8): wholly, or for the share of its quantity
/// that quantity-based partial refunds voided, the parts adding up.
@Suite struct PurchaseVoidTests {
    static func packs(_ quantity: Int) -> PurchaseTransaction {
        PurchaseTransaction(
            transactionID: "GPA.1", originalTransactionID: "GPA.1", productID: "coins", purchaseDate: 1_000,
            quantity: quantity)
    }

    @Test func aWholeVoidRevokesAtItsTime() throws {
        let revoked = try #require(PurchaseVoid(voidedAt: 5_000, reason: 1, quantity: nil).revoking(Self.packs(1)))
        #expect(revoked.revocationDate == 5_000 && revoked.signedDate == 5_000 && revoked.revocationReason == 1)
        #expect(revoked.revocationType == "VOIDED" && revoked.revocationPercentage == nil)
        // Already revoked wholly: nothing more to say.
        #expect(PurchaseVoid(voidedAt: 6_000, reason: 0, quantity: nil).revoking(revoked) == nil)
    }

    @Test func partsAddUpToTheWhole() throws {
        let first = PurchaseVoid(voidedAt: 5_000, reason: 0, quantity: 4)
        let part = try #require(first.revoking(Self.packs(10)))
        #expect(part.revocationType == "VOIDED_QUANTITY" && part.revocationPercentage == 40_000)
        // The same part again states nothing new; a second part adds to it, and the rest makes the whole.
        #expect(first.revoking(part) == nil)
        let second = try #require(
            PurchaseVoid.combined([first, PurchaseVoid(voidedAt: 7_000, reason: 1, quantity: 3)]))
        #expect(second.voidedAt == 7_000 && second.reason == 1 && second.quantity == 7)
        #expect(second.revoking(part)?.revocationPercentage == 70_000)
        let whole = try #require(
            PurchaseVoid.combined([first, PurchaseVoid(voidedAt: 8_000, reason: 1, quantity: 6)])?.revoking(part))
        #expect(whole.revocationType == "VOIDED" && whole.revocationPercentage == nil && whole.revocationDate == 8_000)
        // A whole void among parts is the whole purchase; no void is nothing.
        #expect(
            PurchaseVoid.combined([first, PurchaseVoid(voidedAt: 6_000, reason: nil, quantity: nil)])?.quantity == nil)
        #expect(PurchaseVoid.combined([]) == nil)
    }

    /// A subscription revoked by its own statement (`REVOKED`) is not revoked again by a void.
    @Test func aRevokedTransactionTakesNoSmallerVoid() {
        var revoked = Self.packs(10)
        revoked.revocationDate = 4_000
        revoked.revocationType = "REVOKED"
        #expect(PurchaseVoid(voidedAt: 5_000, reason: 0, quantity: 5).revoking(revoked) == nil)
        #expect(PurchaseVoid(voidedAt: 5_000, reason: 0, quantity: nil).revoking(revoked) == nil)
    }
}
