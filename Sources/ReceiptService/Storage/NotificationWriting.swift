import Foundation
import ReceiptCore

/// What ``NotificationRecorder`` needs of a store, inside one database transaction, for one app and environment
/// (beside the ledger's own writes). Each method is one statement (per chunk) whatever the number of notifications.
public protocol NotificationWriting: LedgerWriting {
    /// Inserts the notifications whose UUID is not recorded for the app (distinct UUIDs); returns the UUIDs it
    /// inserted.
    func insertNotifications(_ records: [NotificationRecord]) async throws -> Set<String>
    /// Opens the group of `CONSUMPTION_REQUEST`s about a transaction, or counts one more in it; returns whether the
    /// group is new. With `answering`, the group's answer to Apple becomes due now unless it is already due or
    /// given (once per transaction, however often Apple re-sends).
    func openConsumptionGroup(transactionID: String, uuid: String, at date: Date, answering: Bool) async throws
        -> Bool
    /// Sets (or, with nil, clears) the transaction's revocation as `transaction` states it, unless a notification
    /// signed after `asOf` set it; returns whether the row's revocation changed from unset to set (or back), decided on
    /// the row as it is when written, so that of two servers recording one refund one announces it (money review M12).
    func setRevocation(_ transactionID: String, to transaction: PurchaseTransaction?, asOf: Int64) async throws
        -> Bool
    /// Inserts events with one pending delivery per endpoint of the app that takes each.
    func insertEvents(_ events: [WebhookEvent]) async throws
}
