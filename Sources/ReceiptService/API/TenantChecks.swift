import ReceiptCore

/// The app's checks on an authentic receipt (docs/api.md, "Status codes", 403); a failed check is a 403 answer.
enum TenantChecks {
    /// Why the receipt fails the app's checks (for the log), or nil when it passes.
    ///
    /// - Parameters:
    ///   - receipt: the receipt object (iOS 6 receipts and JWS payloads carry one transaction themselves).
    ///   - latest: `latest_receipt_info` entries, searched with the receipt's `in_app` ones.
    static func check(
        bundleID: String, environment: AppStoreEnvironment, isTestData: Bool, receipt: JSONObject,
        latest: [JSONValue] = [], request: VerificationRequest, app: App
    ) -> String? {
        guard app.bundleIDs.contains(where: { $0.value == bundleID }) else {
            return "bundle ID '\(bundleID)' is not one of the app's"
        }
        // Test-signed data reaches here only when the app allows it; its environment is Xcode, never configured.
        guard isTestData || app.allowedEnvironments.contains(environment) else {
            return "environment \(environment.rawValue) is not allowed for the app"
        }
        if request.transactionID != nil || request.productID != nil {
            let held = items(in: receipt, latest: latest).contains { item in
                matches(item, keys: transactionKeys, request.transactionID)
                    && matches(item, keys: productKeys, request.productID)
            }
            guard held else {
                return request.transactionID != nil
                    ? "the asserted transaction (and product) is not in the receipt"
                    : "the asserted product is not in the receipt"
            }
        }
        return nil
    }

    /// The receipt object, its `in_app` entries and the given `latest_receipt_info` entries.
    private static func items(in receipt: JSONObject, latest: [JSONValue]) -> [JSONObject] {
        var items = [receipt]
        for value in (receipt["in_app"]?.arrayValue ?? []) + latest {
            if case .object(let object) = value { items.append(object) }
        }
        return items
    }

    /// Receipt field names (`verifyReceipt`) and StoreKit 2 names of a transaction's id and product.
    private static let transactionKeys = ["transaction_id", "transactionId"]
    private static let productKeys = ["product_id", "productId"]

    private static func matches(_ item: JSONObject, keys: [String], _ expected: String?) -> Bool {
        guard let expected else { return true }
        return keys.contains { key in
            switch item[key] {
            case .string(let value)?: return value == expected
            case .integer(let value)?: return String(value) == expected
            default: return false
            }
        }
    }
}
