import Foundation
import ReceiptCore

/// A voided purchase (`VoidedPurchase` of `purchases.voidedpurchases.list`) revoking the ledger's row as Apple's refunds
/// do: read by ``GoogleVoidedReconciler`` page by page, and by the Real-time Developer Notifications' intake when
/// Google says an order was voided (docs/google-play.md, "Refunds").
public enum GoogleVoiding {
    /// The oldest `startTime` Google lists voided purchases from, in milliseconds: 30 days before `now`, with an
    /// hour's margin (Google refuses an older one with 400).
    public static func oldestStart(now: Date) -> Int64 {
        Int64((now.addingTimeInterval(-30 * 86_400 + 3_600).timeIntervalSince1970 * 1_000).rounded(.down))
    }

    /// Revokes the ledger's row of one voided purchase; returns what it found: `revoked`, `known` (revoked before) or
    /// `unknown` (the ledger never saw it).
    public static func revoke(
        _ voided: JSONObject, app: App, store: any DataStore, deadline: StoreDeadline, now: Date
    ) async throws -> String {
        guard let orderID = voided["orderId"]?.stringValue,
            let voidedAt = try? GooglePlayPurchase.millis(voided["voidedTimeMillis"], "voidedTimeMillis")
        else { return "unknown" }
        let rows = try await deadline.run("the ledger row of a voided purchase") { [store] in
            try await store.ledgerEntries(
                LedgerQuery(appID: app.id, originalTransactionID: GooglePlayPurchase.baseOrderID(orderID), limit: 1_000)
            )
        }
        guard let row = rows.first(where: { $0.store == .googlePlay && $0.transaction.transactionID == orderID }) else {
            return "unknown"
        }
        guard row.transaction.revocationDate == nil else { return "known" }
        var transaction = row.transaction
        transaction.revocationDate = voidedAt
        if case .integer(let reason)? = voided["voidedReason"] { transaction.revocationReason = Int(reason) }
        transaction.revocationType = "VOIDED"
        transaction.signedDate = voidedAt
        var recording = LedgerRecording(
            appID: app.id, store: .googlePlay, environment: row.environment, transactions: [transaction], user: nil,
            movesClaims: false, deliversNew: false, requestID: "voided:\(orderID)", now: now)
        recording.catalog = app.catalog
        let revoking = recording
        _ = try await deadline.run("revoking a voided purchase") { [store] in try await store.record(revoking) }
        return "revoked"
    }
}
