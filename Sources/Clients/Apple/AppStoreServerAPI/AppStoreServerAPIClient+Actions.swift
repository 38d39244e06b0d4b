import Foundation
import NIOHTTP1
import ReceiptCore
import ReceiptService

/// Apple's actions on a customer (docs/app-store-server-api.md, "Actions on a customer"): paced by the app's request
/// budget as every call is, never cached.
extension AppStoreServerAPIClient {
    public var acceptsTestData: Bool { configuration.acceptsTestSignatures }

    static func environment(_ environment: StoreEnvironment) -> Environment {
        environment == .production ? .production : .sandbox
    }

    public func currentStatuses(
        of id: String, environment: StoreEnvironment, credentials: AppStoreServerAPICredentials
    ) async throws -> [VerifiedReceipt] {
        let answer = try await fetch(
            Call(
                path: "/inApps/v1/subscriptions/\(try Self.pathID(id))", endpoint: "subscription_statuses",
                environment: Self.environment(environment)),
            credentials: credentials)
        return try Self.signedValues(in: answer.object).map { try verify($0).verified }
    }

    public func setAppAccountToken(
        _ token: UUID, originalTransactionID: String, environment: StoreEnvironment,
        credentials: AppStoreServerAPICredentials
    ) async throws {
        var body = JSONObject(capacity: 1)
        body.append("appAccountToken", .string(token.uuidString.lowercased()))
        _ = try await fetch(
            Call(
                method: .PUT, path: "/inApps/v1/transactions/\(try Self.pathID(originalTransactionID))/appAccountToken",
                body: JSONValue.object(body).encoded, endpoint: "set_app_account_token",
                environment: Self.environment(environment)),
            credentials: credentials)
    }

    public func extendRenewalDate(
        originalTransactionID: String, _ extension: RenewalExtension, environment: StoreEnvironment,
        credentials: AppStoreServerAPICredentials
    ) async throws -> RenewalExtension.Result {
        let object = try await fetch(
            Call(
                method: .PUT, path: "/inApps/v1/subscriptions/extend/\(try Self.pathID(originalTransactionID))",
                body: `extension`.body, endpoint: "extend_renewal_date", environment: Self.environment(environment),
                retries: false),
            credentials: credentials
        ).object
        guard case .bool(let success)? = object["success"] else {
            throw AppStoreServerAPIError(.invalidResponse, "Extend a Subscription Renewal Date answered no success")
        }
        let effective: Int64? = if case .integer(let date)? = object["effectiveDate"] { date } else { nil }
        return RenewalExtension.Result(
            success: success, effectiveDate: effective, webOrderLineItemID: object["webOrderLineItemId"]?.stringValue)
    }

    public func massExtendRenewalDate(
        productID: String, storefronts: [String], _ extension: RenewalExtension, environment: StoreEnvironment,
        credentials: AppStoreServerAPICredentials
    ) async throws {
        _ = try await fetch(
            Call(
                method: .POST, path: "/inApps/v1/subscriptions/extend/mass",
                body: `extension`.massBody(productID: productID, storefronts: storefronts),
                endpoint: "mass_extend_renewal_date", environment: Self.environment(environment), retries: false),
            credentials: credentials)
    }

    public func massExtensionStatus(
        productID: String, requestIdentifier: String, environment: StoreEnvironment,
        credentials: AppStoreServerAPICredentials
    ) async throws -> RenewalExtension.MassStatus {
        guard
            let product = productID.addingPercentEncoding(
                withAllowedCharacters: .urlPathAllowed.subtracting(.init(charactersIn: "/"))),
            let request = requestIdentifier.addingPercentEncoding(
                withAllowedCharacters: .urlPathAllowed.subtracting(.init(charactersIn: "/"))),
            !product.isEmpty, !request.isEmpty
        else { throw AppStoreServerAPIError(.refused, "malformed product or request identifier") }
        let object = try await fetch(
            Call(
                path: "/inApps/v1/subscriptions/extend/mass/\(product)/\(request)",
                endpoint: "mass_extend_renewal_date_status", environment: Self.environment(environment)),
            credentials: credentials
        ).object
        func integer(_ key: String) -> Int64? { if case .integer(let value)? = object[key] { value } else { nil } }
        return RenewalExtension.MassStatus(
            complete: object["complete"] == .bool(true), completeDate: integer("completeDate"),
            succeeded: integer("succeededCount").map { Int($0) }, failed: integer("failedCount").map { Int($0) })
    }

    public func appTransactionInfo(
        of id: String, environment: StoreEnvironment?, credentials: AppStoreServerAPICredentials
    ) async throws -> VerifiedReceipt {
        let object = try await fetch(
            Call(
                path: "/inApps/v1/transactions/appTransactions/\(try Self.pathID(id))",
                endpoint: "app_transaction_info",
                environment: environment.map(Self.environment)),
            credentials: credentials
        ).object
        guard case .string(let jws)? = object["signedAppTransactionInfo"] else {
            throw AppStoreServerAPIError(
                .invalidResponse, "Get App Transaction Info answered no signedAppTransactionInfo")
        }
        return try verify(jws).verified
    }
}
