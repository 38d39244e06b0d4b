import Foundation

extension TenancyService {
    /// The daily usage counters of `month`, of one account (id or email) and/or one app (token) when given.
    public func usage(month: UsageMonth, account reference: String?, appToken: String?) async throws -> [UsageRecord] {
        let account = try await reference.asyncMap { try await self.account($0) }
        let app = try await appToken.asyncMap { try await self.app(token: $0) }
        if let account, let app, app.accountID != account.id {
            throw ServiceError(
                .unknownApp, "app '\(Validation.printable(app.token))' is not an app of \(account.email)")
        }
        return try await store.usage(month: month, accountID: account?.id ?? app?.accountID, appID: app?.id)
    }

    /// The billing report of `month`.
    public func billingReport(month: UsageMonth) async throws -> BillingReport {
        try BillingReport(
            month: month, accounts: try await store.accounts(), plans: try await store.plans(),
            calls: try await store.monthlyCalls(month: month))
    }
}

extension Optional {
    fileprivate func asyncMap<T>(_ transform: (Wrapped) async throws -> T) async rethrows -> T? {
        guard let self else { return nil }
        return try await transform(self)
    }
}
