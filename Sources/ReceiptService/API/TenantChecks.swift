import ReceiptCore

/// The app's checks on an authentic receipt (docs/api.md, "Status codes", 403); a failed check is a 403 answer.
enum TenantChecks {
    /// Why a receipt fails the app's checks: the reason for the log, and the answer's description where it is more
    /// precise than 403's fixed one.
    struct Rejection: Error {
        let reason: String
        var description: String?
        /// The receipt's environment, when that is what the app does not allow.
        var environment: StoreEnvironment?
    }

    /// The description of a 403 for a product outside the app's catalog.
    static let productNotInCatalog = "A product in the receipt is not one of the app's"

    /// Why the receipt fails the app's checks, or nil when it passes.
    ///
    /// - Parameter transactions: the input's transactions (``PurchaseTransaction``), searched for the asserted
    ///   `transaction_id` and `product_id`.
    static func check(
        bundleID: String, environment: StoreEnvironment, isTestData: Bool, transactions: [PurchaseTransaction],
        request: VerificationRequest, app: App
    ) -> Rejection? {
        guard app.bundleIDs.contains(where: { $0.value == bundleID }) else {
            return Rejection(reason: "bundle ID '\(bundleID)' is not one of the app's")
        }
        // Test-signed data reaches here only when the app allows it; its environment is Xcode, never configured.
        guard isTestData || app.allowedEnvironments.contains(environment) else {
            return Rejection(
                reason: "environment \(environment.rawValue) is not allowed for the app", environment: environment)
        }
        if let catalog = app.productCatalog,
            let outside = transactions.first(where: { !catalog.contains($0.productID) })
        {
            return Rejection(
                reason: "product '\(outside.productID)' is not in the app's catalog", description: productNotInCatalog)
        }
        if request.transactionID != nil || request.productID != nil {
            let held = transactions.contains { transaction in
                (request.transactionID.map { $0 == transaction.transactionID } ?? true)
                    && (request.productID.map { $0 == transaction.productID } ?? true)
            }
            guard held else {
                return Rejection(
                    reason: request.transactionID != nil
                        ? "the asserted transaction (and product) is not in the receipt"
                        : "the asserted product is not in the receipt")
            }
        }
        return nil
    }
}
