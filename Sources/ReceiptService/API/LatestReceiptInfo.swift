import ReceiptCore

/// `latest_receipt_info` derived from a unified receipt, as `verifyReceipt` lays it out: the auto-renewable
/// subscription transactions (those with `expires_date_ms`), oldest purchase first.
///
/// Apple adds `subscription_group_identifier`, which a receipt does not carry; everything else is the receipt's.
/// [Apple's documentation](https://developer.apple.com/documentation/appstorereceipts/responsebody/latest_receipt_info)
enum LatestReceiptInfo {
    /// The receipt's subscription transactions; with `excludingOld`, only the newest of each original transaction,
    /// as Apple's `exclude-old-transactions` does.
    static func subscriptions(in receipt: JSONObject, excludingOld: Bool) -> [JSONValue] {
        var entries: [(purchase: Int64, value: JSONValue, original: String)] = []
        for value in receipt["in_app"]?.arrayValue ?? [] {
            // Apple's entry is passed on as it is; the typed transaction only says which entries and in what order.
            guard case .object(let item) = value, item["expires_date_ms"] != nil,
                let transaction = PurchaseTransaction(verifyReceiptFields: item)
            else { continue }
            entries.append((transaction.purchaseDate ?? 0, value, transaction.originalTransactionID))
        }
        // Stable: equal purchase dates keep the receipt's order.
        let sorted = entries.enumerated().sorted { lhs, rhs in
            lhs.element.purchase != rhs.element.purchase
                ? lhs.element.purchase < rhs.element.purchase : lhs.offset < rhs.offset
        }.map(\.element)
        guard excludingOld else { return sorted.map(\.value) }
        var newest: [String: Int] = [:]
        for (index, entry) in sorted.enumerated() { newest[entry.original] = index }
        return sorted.indices.filter { newest[sorted[$0].original] == $0 }.map { sorted[$0].value }
    }
}
