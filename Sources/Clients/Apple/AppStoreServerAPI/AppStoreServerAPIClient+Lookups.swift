import Foundation
import NIOHTTP1
import ReceiptCore
import ReceiptService

extension AppStoreServerAPIClient: AppStoreServerLooking {
    /// The most pages of a customer's history read for one answer (20 transactions each): the newest 200.
    public static let maximumHistoryPages = 10
    /// The most pages read for an import (every page, within reason: 100,000 transactions).
    public static let maximumWholeHistoryPages = 5_000

    public func transaction(_ transactionID: String, credentials: AppStoreServerAPICredentials) async throws
        -> VerifiedReceipt
    {
        try await transactionInfo(transactionID, credentials: credentials).verified
    }

    public func history(
        of id: String, in only: StoreEnvironment?, credentials: AppStoreServerAPICredentials, whole: Bool
    ) async throws -> (transactions: [VerifiedReceipt], environment: StoreEnvironment) {
        var transactions: [VerifiedReceipt] = []
        var revision: String?
        var environment = StoreEnvironment.production
        let asked: Environment? = only.map { $0 == .production ? .production : .sandbox }
        for _ in 0..<(whole ? Self.maximumWholeHistoryPages : Self.maximumHistoryPages) {
            let page = try await transactionHistory(
                id, revision: revision, credentials: credentials, in: asked, newestFirst: !whole)
            transactions += page.transactions.map(\.verified)
            environment = page.environment == .production ? .production : .sandbox
            guard page.hasMore, let next = page.revision, next != revision else { break }
            revision = next
        }
        return (whole ? transactions : transactions.reversed(), environment)
    }

    public func renewals(of id: String, credentials: AppStoreServerAPICredentials) async throws -> [VerifiedReceipt] {
        try await subscriptionStatuses(id, credentials: credentials).signed.map(\.verified).filter {
            $0.kind == .signedRenewalInfo
        }
    }

    public func finish(
        _ transactionID: String, environment: StoreEnvironment, credentials: AppStoreServerAPICredentials
    ) async throws {
        _ = try await fetch(
            Call(
                method: .POST, path: "/inApps/v1/transactions/\(try Self.pathID(transactionID))/finish",
                endpoint: "finish_transaction", environment: environment == .production ? .production : .sandbox),
            credentials: credentials)
    }

    public func sendConsumption(
        _ transactionID: String, body: [UInt8], environment: StoreEnvironment,
        credentials: AppStoreServerAPICredentials
    ) async throws {
        _ = try await fetch(
            Call(
                method: .PUT, path: "/inApps/v2/transactions/consumption/\(try Self.pathID(transactionID))", body: body,
                endpoint: "send_consumption", environment: environment == .production ? .production : .sandbox),
            credentials: credentials)
    }

    public func notificationHistoryPage(
        from start: Date, to end: Date, onlyFailures: Bool, paginationToken: String?, environment: StoreEnvironment,
        credentials: AppStoreServerAPICredentials
    ) async throws -> (payloads: [String], next: String?) {
        let page = try await notificationHistory(
            from: start, to: end, onlyFailures: onlyFailures, paginationToken: paginationToken,
            environment: environment == .production ? .production : .sandbox, credentials: credentials)
        let next = page.hasMore ? page.paginationToken.flatMap { $0 == paginationToken ? nil : $0 } : nil
        return (page.notifications.map(\.signed.jws), next)
    }

    public func requestTestNotification(environment: StoreEnvironment, credentials: AppStoreServerAPICredentials)
        async throws -> String
    {
        let object = try await fetch(
            Call(
                method: .POST, path: "/inApps/v1/notifications/test", endpoint: "test_notification",
                environment: environment == .production ? .production : .sandbox),
            credentials: credentials
        ).object
        guard case .string(let token)? = object["testNotificationToken"] else {
            throw AppStoreServerAPIError(.invalidResponse, "Request a Test Notification answered no token")
        }
        return token
    }

    /// Get Test Notification Status: the results of Apple's attempts to send the test notification `token` names,
    /// oldest first (`SUCCESS`, `TIMED_OUT`, `TLS_ISSUE`, …); empty while Apple has not tried yet.
    public func testNotificationStatus(
        token: String, environment: StoreEnvironment, credentials: AppStoreServerAPICredentials
    ) async throws -> [String] {
        guard !token.isEmpty, token.utf8.count <= 200,
            token.allSatisfy({ $0 == "-" || $0 == "_" || ($0.isASCII && ($0.isLetter || $0.isNumber)) })
        else { throw AppStoreServerAPIError(.refused, "a test notification token is letters, digits, - and _") }
        let object = try await fetch(
            Call(
                method: .GET, path: "/inApps/v1/notifications/test/\(token)", endpoint: "test_notification_status",
                environment: environment == .production ? .production : .sandbox),
            credentials: credentials
        ).object
        guard case .array(let attempts)? = object["sendAttempts"] else { return [] }
        return attempts.compactMap { $0["sendAttemptResult"]?.stringValue }
    }

    /// One page of Get Notification History.
    public struct NotificationPage: Sendable {
        /// Each notification: its signed payload, verified, and Apple's send attempts (`attemptDate`,
        /// `sendAttemptResult`) as Apple gave them.
        public let notifications: [(signed: Signed, attempts: [JSONValue])]
        /// Where the next page starts, when there is more.
        public let paginationToken: String?
        /// Whether there are more pages.
        public let hasMore: Bool
    }

    /// Get Notification History: one page of the notifications Apple sent an app in `environment` between two
    /// dates (Apple keeps 180 days), only those that failed to reach the app's URL when `onlyFailures`.
    /// Not cached: each page is asked of Apple.
    public func notificationHistory(
        from start: Date, to end: Date, onlyFailures: Bool, paginationToken: String?, environment: Environment,
        credentials: AppStoreServerAPICredentials
    ) async throws -> NotificationPage {
        var request = JSONObject()
        request.append("startDate", .integer(Int64((start.timeIntervalSince1970 * 1_000).rounded(.down))))
        request.append("endDate", .integer(Int64((end.timeIntervalSince1970 * 1_000).rounded(.down))))
        if onlyFailures { request.append("onlyFailures", .bool(true)) }
        let object = try await fetch(
            Call(
                method: .POST, path: "/inApps/v1/notifications/history",
                query: paginationToken.map { [("paginationToken", $0)] } ?? [], body: JSONValue.object(request).encoded,
                endpoint: "notification_history", environment: environment),
            credentials: credentials
        ).object
        var notifications: [(signed: Signed, attempts: [JSONValue])] = []
        for case .object(let item) in object["notificationHistory"]?.arrayValue ?? [] {
            guard case .string(let jws)? = item["signedPayload"] else {
                throw AppStoreServerAPIError(.invalidResponse, "a notification has no signedPayload")
            }
            notifications.append((try verify(jws), item["sendAttempts"]?.arrayValue ?? []))
        }
        return NotificationPage(
            notifications: notifications, paginationToken: object["paginationToken"]?.stringValue,
            hasMore: object["hasMore"] == .bool(true))
    }
}
