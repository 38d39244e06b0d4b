import Foundation
import ReceiptCore

/// A voided purchase (`VoidedPurchase` of `purchases.voidedpurchases.list`) revoking the ledger's row as Apple's refunds
/// do: read by ``GoogleVoidedReconciler`` page by page, and by the Real-time Developer Notifications' intake when
/// Google says an order was voided (docs/google-play.md, "Refunds"). Each is kept, so that an order the ledger records
/// only later (a purchase refunded before the app first verified it) is recorded revoked, and a quantity-based partial
/// refund revokes its share (money review M8).
public enum GoogleVoiding {
    /// The oldest `startTime` Google lists voided purchases from, in milliseconds: 30 days before `now`, with an
    /// hour's margin (Google refuses an older one with 400).
    public static func oldestStart(now: Date) -> Int64 {
        Int64((now.addingTimeInterval(-30 * 86_400 + 3_600).timeIntervalSince1970 * 1_000).rounded(.down))
    }

    /// The order of a listed voided purchase and what it voided; nil without an order id or a voided time.
    public static func void(of voided: JSONObject) -> (orderID: String, void: PurchaseVoid)? {
        guard let orderID = voided["orderId"]?.stringValue, !orderID.isEmpty, orderID.utf8.count <= 256,
            let voidedAt = try? GooglePlayPurchase.millis(voided["voidedTimeMillis"], "voidedTimeMillis")
        else { return nil }
        return (
            orderID,
            PurchaseVoid(
                voidedAt: voidedAt, reason: count(voided["voidedReason"]),
                quantity: count(voided["voidedQuantity"]).flatMap { $0 > 0 ? $0 : nil })
        )
    }

    /// Keeps one voided purchase of `orderID` (as ``void(of:)`` read it) and revokes the ledger's row of the order;
    /// returns what it found: `revoked`, `known` (revoked as much before) or `unknown` (not in the ledger yet: recorded
    /// revoked when it is).
    public static func revoke(
        _ orderID: String, _ void: PurchaseVoid, app: App, store: any DataStore, deadline: StoreDeadline, now: Date
    ) async throws -> String {
        try await deadline.run("keeping a voided purchase") { [store] in
            try await store.keepVoidedPurchase(appID: app.id, orderID: orderID, void: void, at: now)
        }
        return try await apply(orderID, app: app, store: store, deadline: deadline, now: now)
    }

    /// Records the ledger's row of `orderID` again, so that the voids kept of it revoke it (``LedgerRecorder``
    /// applies them inside the recording's transaction): `revoked`, `known` or `unknown`. A row revoked wholly is left
    /// alone.
    public static func apply(_ orderID: String, app: App, store: any DataStore, deadline: StoreDeadline, now: Date)
        async throws -> String
    {
        let rows = try await deadline.run("the ledger row of a voided purchase") { [store] in
            try await store.ledgerEntries(
                LedgerQuery(appID: app.id, originalTransactionID: GooglePlayPurchase.baseOrderID(orderID), limit: 1_000)
            )
        }
        guard let row = rows.first(where: { $0.store == .googlePlay && $0.transaction.transactionID == orderID }) else {
            return "unknown"
        }
        if row.isRevoked, row.transaction.revocationPercentage == nil { return "known" }
        var recording = LedgerRecording(
            appID: app.id, store: .googlePlay, environment: row.environment, transactions: [row.transaction], user: nil,
            movesClaims: false, deliversNew: false, requestID: "voided:\(orderID)", now: now)
        recording.catalog = app.catalog
        let revoking = recording
        let outcome = try await deadline.run("revoking a voided purchase") { [store] in try await store.record(revoking)
        }
        return outcome.contains(where: \.revokedNow) ? "revoked" : "known"
    }

    /// A small count Google states as a JSON number or a decimal string.
    private static func count(_ value: JSONValue?) -> Int? {
        switch value {
        case .integer(let number)? where number >= 0 && number <= 1_000_000_000: Int(number)
        case .string(let text)?: Int(text).flatMap { $0 >= 0 && $0 <= 1_000_000_000 ? $0 : nil }
        default: nil
        }
    }
}
