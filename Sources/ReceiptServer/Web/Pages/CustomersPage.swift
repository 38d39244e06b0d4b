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
        var actions: Actions
    }

    /// One renewal-date extension of the app, as listed.
    struct ExtensionRow: Sendable {
        var request: String
        var subscription: String
        var days: Int
        var state: String
        var detail: String
        var by: String
        var at: String
    }

    /// A choice of a form's select.
    struct Choice: Sendable {
        var value: String
        var label: String
    }

    /// What the page adds for Apple's actions on the customer.
    struct Actions: Sendable {
        /// Whether the app can ask Apple (its credentials set, and this server reaching Apple).
        var available: Bool
        var subscriptions: [Choice] = [] { didSet { hasSubscriptions = !subscriptions.isEmpty } }
        var originals: [Choice] = [] { didSet { hasOriginals = !originals.isEmpty } }
        var transactions: [Choice] = [] { didSet { hasTransactions = !transactions.isEmpty } }
        /// Whether each list has a choice (the templates see stored values only).
        var hasSubscriptions = false
        var hasOriginals = false
        var hasTransactions = false
        var reasons: [Choice]
        /// The extend form's request identifier, new with each page.
        var requestIdentifier = UUID().uuidString.lowercased()
        var extensions: [ExtensionRow]
        var appTransaction: String?
        var message: String?
        var error: String?
    }

    /// The customer asked for: the app, user, original transaction and environment of the query (or of a form's
    /// hidden fields).
    struct Asked: Sendable {
        var app: UUID?
        var user: String
        var original: String
        var environment: String

        init(_ field: (String) -> String?) {
            app = field("app").flatMap { UUID(uuidString: $0) }
            user = field("user").map { String($0.prefix(255)).trimmingCharacters(in: .whitespaces) } ?? ""
            original =
                field("original_transaction_id").map { String($0.prefix(64)).trimmingCharacters(in: .whitespaces) }
                ?? ""
            environment = field("environment").map { String($0.prefix(16)) } ?? ""
        }
    }

    static func register(on router: Router<ServerContext>, site: WebSite) {
        router.get("/account/customers") { request, context in
            await site.signedInPage(request, context: context) { signedIn, scope in
                let query = request.uri.queryParameters
                let asked = Asked { query[Substring($0)].map(String.init) }
                return site.page(
                    "customers", try await view(signedIn: signedIn, scope: scope, asked: asked, site: site))
            }
        }
        // Apple's actions wait for Apple (up to --storekit-timeout), not the database deadline.
        for action in ["extend", "app-account-token", "app-transaction"] {
            router.post("/account/customers/\(action)") { request, context in
                await site.signedInForm(request, context: context, withinDeadline: false) { signedIn, scope, form in
                    let asked = Asked { form.text($0) }
                    guard let appID = asked.app else { throw ServiceError(.invalidArgument, "choose an app") }
                    var message: String?
                    var error: String?
                    var appTransaction: String?
                    do {
                        let (actions, app) = try await scope.appleActions(appID: appID)
                        let environment = StoreEnvironment(configurationName: asked.environment)
                        let original = form.text("subscription") ?? ""
                        switch action {
                        case "extend":
                            guard let reason = RenewalExtension.Reason(text: form.text("reason") ?? "") else {
                                throw ServiceError(.invalidArgument, "choose a reason")
                            }
                            // The form's own identifier: a form sent twice (a double click, a reload) extends once.
                            let identifier = form.text("request_identifier").flatMap { $0.isEmpty ? nil : $0 }
                            let request = try RenewalExtension(
                                days: Int(form.text("days") ?? "") ?? 0, reason: reason,
                                requestIdentifier: identifier ?? UUID().uuidString.lowercased())
                            let record = try await actions.extendRenewalDate(
                                app: app, originalTransactionID: original, request, environment: environment)
                            switch record.state {
                            case .extended:
                                message =
                                    "Apple extended \(original) by \(record.days) days"
                                    + (record.effectiveDate.map {
                                        ": it now renews \(Format.time(Date(millisecondsSince1970: $0)))"
                                    } ?? ".")
                            case .sending:
                                message = "This extension is being sent; its outcome shows below in a moment."
                            default:
                                error = "Apple did not extend \(original): \(record.error ?? record.state.rawValue)."
                            }
                        case "app-account-token":
                            guard let token = UUID(uuidString: form.text("app_account_token") ?? "") else {
                                throw ServiceError(.invalidArgument, "the app account token must be a UUID")
                            }
                            let done = try await actions.setAppAccountToken(
                                app: app, originalTransactionID: original, token: token, environment: environment)
                            message =
                                "Apple put \(token.uuidString.lowercased()) on \(original)"
                                + (done.claimed ? "; the purchase is claimed by it." : ".")
                        default:
                            let signed = try await actions.appTransaction(
                                app: app, transactionID: form.text("transaction_id") ?? "", environment: environment)
                            appTransaction = JSONValue.object(signed.receipt).encodedString
                            message =
                                "Apple's app transaction of the customer, verified (\(signed.environment.rawValue))."
                        }
                    } catch let refusal as AppleActionError {
                        error = "Apple refused: \(refusal.reason)."
                    } catch let failure as ServiceError
                        where failure.code == .invalidArgument || failure.code == .tooManyAttempts
                    {
                        error = failure.reason
                    }
                    var page = try await view(signedIn: signedIn, scope: scope, asked: asked, site: site)
                    page.actions.message = message
                    page.actions.error = error
                    page.actions.appTransaction = appTransaction
                    return site.page("customers", page, status: error == nil ? .ok : .unprocessableContent)
                }
            }
        }
    }

    /// The page's values for the customer asked for.
    static func view(signedIn: SignedIn, scope: CustomerScope, asked: Asked, site: WebSite) async throws -> View {
        let apps = try await scope.apps()
        var view = View(
            layout: LayoutView(title: "Customers", signedIn: signedIn),
            apps: apps.map {
                AppForm.Option(value: $0.id.uuidString.lowercased(), label: $0.name, selected: $0.id == asked.app)
            },
            user: asked.user, originalTransactionID: asked.original, environment: asked.environment, searched: false,
            customer: "", shownEnvironment: "", entitlements: [], lanes: [], bars: [], marks: [], height: 0,
            start: "", end: "", nowX: 0, unknownProducts: "",
            actions: Actions(
                available: false,
                reasons: RenewalExtension.Reason.allCases.map {
                    Choice(value: $0.name, label: $0.name.replacingOccurrences(of: "_", with: " "))
                }, extensions: []))
        guard let chosen = asked.app, !asked.user.isEmpty || !asked.original.isEmpty else { return view }
        let environment = StoreEnvironment(configurationName: asked.environment)
        // Another account's app id is unknown here (404).
        let found = try await scope.customer(
            appID: chosen, user: asked.user.isEmpty ? nil : asked.user,
            originalTransactionID: asked.original.isEmpty ? nil : asked.original, environment: environment)
        fill(&view, with: found.view, entries: found.rows, now: Date())
        let app = try await scope.app(id: chosen)
        view.actions.available = app.appStoreServerCredentials != nil && site.customers.notificationSetup != nil
        view.actions.subscriptions = found.view.subscriptions.map {
            Choice(value: $0.originalTransactionID, label: "\($0.originalTransactionID) (\($0.productID))")
        }
        var seen = Set<String>()
        view.actions.originals = found.rows.map(\.transaction).filter { seen.insert($0.originalTransactionID).inserted }
            .map { Choice(value: $0.originalTransactionID, label: "\($0.originalTransactionID) (\($0.productID))") }
        view.actions.transactions = found.rows.map {
            Choice(
                value: $0.transaction.transactionID,
                label: "\($0.transaction.transactionID) (\($0.transaction.productID))")
        }
        view.actions.extensions = try await scope.renewalExtensions(appID: chosen, limit: 20).map { record in
            var detail = record.effectiveDate.map { "renews \(Format.time(Date(millisecondsSince1970: $0)))" } ?? ""
            if let succeeded = record.succeeded { detail += "\(succeeded) extended, \(record.failed ?? 0) failed" }
            if let error = record.error { detail += detail.isEmpty ? error : " (\(error))" }
            return ExtensionRow(
                request: record.requestIdentifier,
                subscription: record.originalTransactionID ?? "all subscribers of \(record.productID ?? "-")",
                days: record.days, state: record.state.rawValue, detail: detail, by: record.actor,
                at: Format.time(record.createdAt))
        }
        return view
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
