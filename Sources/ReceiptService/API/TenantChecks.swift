import ReceiptCore

/// The app's checks on an authentic receipt (docs/api.md, "Status codes", 403); a failed check is a 403 answer.
enum TenantChecks {
    /// Why the receipt fails the app's checks (for the log), or nil when it passes.
    ///
    /// - Parameter transactions: the input's transactions (``PurchaseTransaction``), searched for the asserted
    ///   `transaction_id` and `product_id`.
    static func check(
        bundleID: String, environment: AppStoreEnvironment, isTestData: Bool, transactions: [PurchaseTransaction],
        request: VerificationRequest, app: App
    ) -> String? {
        guard app.bundleIDs.contains(where: { $0.value == bundleID }) else {
            return "bundle ID '\(bundleID)' is not one of the app's"
        }
        // Test-signed data reaches here only when the app allows it; its environment is Xcode, never configured.
        guard isTestData || app.allowedEnvironments.contains(environment) else {
            return "environment \(environment.rawValue) is not allowed for the app"
        }
        if request.transactionID != nil || request.productID != nil {
            let held = transactions.contains { transaction in
                (request.transactionID.map { $0 == transaction.transactionID } ?? true)
                    && (request.productID.map { $0 == transaction.productID } ?? true)
            }
            guard held else {
                return request.transactionID != nil
                    ? "the asserted transaction (and product) is not in the receipt"
                    : "the asserted product is not in the receipt"
            }
        }
        return nil
    }
}
