import Foundation
import Hummingbird
import ReceiptCore
import ReceiptService

/// `GET /account/customers`: one customer of one of the account's apps, found by user or original transaction: their
/// entitlements, and a timeline of each subscription's periods and each purchase (grace, expiry, refund) drawn.
enum CustomersPage {
    struct View: PageView {
        struct Entitlement: Sendable {
            var name: String
            var state: String
            var active: Bool
            var until: String
            var product: String
            var renews: String
        }

        /// A horizontal bar of the timeline: a period, a grace period, or a purchase kept for good.
        struct Bar: Sendable {
            var x: Int
            var y: Int
            var width: Int
            var kind: String
            var title: String
        }

        /// A point of the timeline: a refund, or now.
        struct Mark: Sendable {
            var x: Int
            var y: Int
            var kind: String
            var title: String
        }

        struct Lane: Sendable {
            var y: Int
            var label: String
        }

        var layout: LayoutView
        var apps: [AppForm.Option]
        var user: String
        var originalTransactionID: String
        var environment: String
        var searched: Bool
        var customer: String
        var shownEnvironment: String
        var entitlements: [Entitlement]
        var lanes: [Lane]
        var bars: [Bar]
        var marks: [Mark]
        var height: Int
        var start: String
        var end: String
        var nowX: Int
        var unknownProducts: String
    }

    static func register(on router: Router<ServerContext>, site: WebSite) {
        router.get("/account/customers") { request, context in
            await site.signedInPage(request, context: context) { signedIn, scope in
                let query = request.uri.queryParameters
                let apps = try await scope.apps()
                let chosen = query["app"].flatMap { UUID(uuidString: String($0)) }
                let user = query["user"].map { String($0.prefix(255)).trimmingCharacters(in: .whitespaces) } ?? ""
                let original =
                    query["original_transaction_id"].map {
                        String($0.prefix(64)).trimmingCharacters(in: .whitespaces)
                    } ?? ""
                let environmentName = query["environment"].map(String.init) ?? ""
                var view = View(
                    layout: LayoutView(title: "Customers", signedIn: signedIn),
                    apps: apps.map {
                        AppForm.Option(value: $0.id.uuidString.lowercased(), label: $0.name, selected: $0.id == chosen)
                    },
                    user: user, originalTransactionID: original, environment: environmentName, searched: false,
                    customer: "", shownEnvironment: "", entitlements: [], lanes: [], bars: [], marks: [], height: 0,
                    start: "", end: "", nowX: 0, unknownProducts: "")
                if let chosen, !user.isEmpty || !original.isEmpty {
                    let environment = AppStoreEnvironment(configurationName: environmentName)
                    // Another account's app id is unknown here (404).
                    let found = try await scope.customer(
                        appID: chosen, user: user.isEmpty ? nil : user,
                        originalTransactionID: original.isEmpty ? nil : original, environment: environment)
                    fill(&view, with: found.view, entries: found.rows, now: Date())
                }
                return site.page("customers", view)
            }
        }
    }

    /// The width of the timeline's drawing, the left margin for the lanes' labels, and a lane's height.
    static let (width, margin, laneHeight) = (760, 200, 26)

    static func fill(_ view: inout View, with customer: CustomerView, entries: [LedgerEntry], now: Date) {
        view.searched = true
        view.customer = customer.appUserID ?? customer.originalTransactionID ?? ""
        view.shownEnvironment = customer.environment.rawValue
        view.unknownProducts = customer.unknownProducts.joined(separator: ", ")
        let date: (Int64?) -> String = { $0.map { Format.time(Date(timeIntervalSince1970: Double($0) / 1000)) } ?? "" }
        view.entitlements = customer.entitlements.map { entitlement in
            let state =
                entitlement.refundedAt != nil
                ? "refunded"
                : entitlement.gracePeriodExpiresAt != nil
                    ? "grace period"
                    : entitlement.billingIssueDetectedAt != nil
                        ? "billing retry" : entitlement.isActive ? "active" : "expired"
            return View.Entitlement(
                name: entitlement.name, state: state, active: entitlement.isActive,
                until: entitlement.expiresAt == nil ? "lifetime" : date(entitlement.expiresAt),
                product: entitlement.productID,
                renews: entitlement.willRenew.map { $0 ? "renews" : "does not renew" } ?? "")
        }
        // Lanes: one per subscription (its periods), one per purchase.
        let nowMilliseconds = now.millisecondsSince1970
        let byOriginal = Dictionary(grouping: entries, by: \.transaction.originalTransactionID)
        var lanes: [(label: String, periods: [LedgerEntry], grace: Int64?, kept: Bool)] = []
        for subscription in customer.subscriptions {
            lanes.append(
                (
                    "\(subscription.productID) (\(subscription.status.rawValue))",
                    byOriginal[subscription.originalTransactionID] ?? [], subscription.gracePeriodExpiresAt, false
                ))
        }
        for purchase in customer.purchases {
            let entry = entries.first { $0.transaction.transactionID == purchase.transactionID }
            lanes.append((purchase.productID, entry.map { [$0] } ?? [], nil, purchase.kind == .nonConsumable))
        }
        let dates =
            entries.flatMap { entry in
                [entry.transaction.purchaseDate, entry.transaction.expiresDate, entry.transaction.revocationDate]
                    .compactMap { $0 }
            } + customer.subscriptions.compactMap(\.gracePeriodExpiresAt) + [nowMilliseconds]
        guard let first = dates.min(), let last = dates.max() else { return }
        let span = max(Double(last - first), 3_600_000) * 1.04
        let origin = Double(first) - span * 0.02
        let x: (Int64) -> Int = { Int(Double(margin) + (Double($0) - origin) / span * Double(width - margin)) }
        view.start = date(first)
        view.end = date(last)
        view.nowX = x(nowMilliseconds)
        view.height = lanes.count * laneHeight + 20
        for (index, lane) in lanes.enumerated() {
            let y = index * laneHeight + 4
            view.lanes.append(View.Lane(y: y + 14, label: lane.label))
            for period in lane.periods {
                let transaction = period.transaction
                let start = transaction.purchaseDate ?? period.firstSeenAt.millisecondsSince1970
                let end = transaction.expiresDate ?? (lane.kept ? nowMilliseconds : start)
                let refunded = transaction.revocationDate
                view.bars.append(
                    View.Bar(
                        x: x(start), y: y, width: max(3, x(refunded ?? end) - x(start)),
                        kind: refunded != nil ? "bar-refunded" : lane.kept ? "bar-kept" : "bar-period",
                        title: "\(transaction.transactionID): \(date(start)) to "
                            + (transaction.expiresDate == nil ? (lane.kept ? "for good" : "consumed") : date(end))))
                if let refunded {
                    view.marks.append(
                        View.Mark(x: x(refunded), y: y, kind: "mark-refund", title: "refunded \(date(refunded))"))
                }
            }
            if let grace = lane.grace, let expiry = lane.periods.compactMap(\.transaction.expiresDate).max() {
                view.bars.append(
                    View.Bar(
                        x: x(expiry), y: y, width: max(3, x(grace) - x(expiry)), kind: "bar-grace",
                        title: "grace period until \(date(grace))"))
            }
        }
    }
}
