import Fakes
import Foundation
import HTTPTypes
import MoneyModel
import ReceiptCore
import ReceiptService

/// Plays histories against the service and checks the invariants after every step (docs/testing.md):
/// 1. every answer's `deliver` for the presented transaction is what the model says: `true` the first time a
///    transaction the service does not know to be refunded is presented, `false` ever after, and an entry says
///    `claimed_by_other_user` exactly when another user holds the purchase;
/// 2. every user's customer view (`POST /api/customers`), read from each of the two servers whichever recorded the
///    change, holds exactly the entitlements the model grants now, with the same end;
/// 3. a receiver that applies the app's `customer.entitlements_changed` and transaction events as docs/webhooks.md
///    ("Order") says, each delivered once or twice in any order, ends holding for each user what the model grants and
///    for each transaction the refund the service holds (checked at the end);
/// and every request is answered as the protocol says (200 and `status: 0` for a presentation, 200 for a
/// notification). A presentation the stalling server answers 503 (retryable) is sent again to the step's server, as a
/// client retries; the model hears of it only from the answer that is not a 503, which must say `deliver: true` if
/// the purchase is the customer's to deliver (a commit that landed behind the 503 would make it say `false`).
struct Simulator: Sendable {
    let service: SimulatedService
    /// How the stalling server answered the presentations sent to it first.
    let stalls = Stalls()
    /// How many Google renewals the histories played (``History/Step/renewGoogle(_:messageID:)``), and how many of
    /// them were pushed.
    let renewals = Renewals()
    let revocations = Revocations()
    /// Whether every request and answer is printed (`SIMULATION_TRACE=1`).
    var traces = ProcessInfo.processInfo.environment["SIMULATION_TRACE"] == "1"

    /// How many presentations met the stalling server, and how many of them it answered 503.
    actor Stalls {
        private(set) var presented = 0
        private(set) var unavailable = 0

        func count(_ answeredUnavailable: Bool) {
            presented += 1
            if answeredUnavailable { unavailable += 1 }
        }
    }

    actor Renewals {
        private(set) var stated = 0
        private(set) var pushed = 0

        func count(pushed: Bool) {
            stated += 1
            if pushed { self.pushed += 1 }
        }
    }

    /// How many Google subscriptions the histories revoked, how many their customers cancelled, and how many times
    /// an operator switched an app's delivery mode.
    actor Revocations {
        private(set) var count = 0
        private(set) var cancellations = 0
        private(set) var switches = 0
        func add() { count += 1 }
        func cancelled() { cancellations += 1 }
        func switched() { switches += 1 }
    }

    /// What Google states of each purchase token as a history goes, and what the service keeps of Google's answers:
    /// docs/google-play.md, a verification reuses Google's answer about a purchase for 30 s
    /// (`--google-play-cache-seconds`), and a notification reads the purchase anew (and keeps that answer). Between a
    /// renewal and the end of a kept answer's life, `/api` answers with the order kept; near that end with either.
    struct GoogleState {
        /// The order Google states now, by the token's first order: the first until a renewal step.
        var orders: [String: String] = [:]
        /// The answer kept about each token: the order it states, and the interval in which it was fetched.
        var kept: [String: (order: String, earliest: ContinuousClock.Instant, latest: ContinuousClock.Instant)] = [:]
        /// The Pub/Sub messages the service recorded: a redelivery is a duplicate that changes nothing.
        var messages: Set<String> = []
        /// `--google-play-cache-seconds`' default, which the simulated servers keep.
        static let lifetime: Duration = .seconds(30)

        /// The order Google states now of the purchase whose first order is `first`.
        func current(_ first: String) -> String { orders[first] ?? first }

        /// The orders a presentation of `token` sent at `sent` and answered at `answered` may state: the kept one
        /// while it is surely kept, Google's current one once it surely expired, either in between.
        func candidates(first: String, token: String, sent: ContinuousClock.Instant, answered: ContinuousClock.Instant)
            -> [String]
        {
            let current = current(first)
            guard let kept = kept[token], kept.order != current else { return [current] }
            if answered < kept.earliest + Self.lifetime { return [kept.order] }
            if sent > kept.latest + Self.lifetime { return [current] }
            return [current, kept.order]
        }

        /// A presentation of `token` sent at `sent` was answered at `answered` with `order`: what is kept now.
        mutating func presented(
            _ order: String, token: String, sent: ContinuousClock.Instant, answered: ContinuousClock.Instant
        ) {
            guard let held = kept[token] else {
                kept[token] = (order, sent, answered)
                return
            }
            if answered < held.earliest + Self.lifetime { return }
            if sent > held.latest + Self.lifetime || order != held.order {
                kept[token] = (order, sent, answered)
            } else {
                // The same order, kept or fetched again: kept from the earlier fetch or this one.
                kept[token] = (order, held.earliest, answered)
            }
        }

        /// A notification read `token` anew between `sent` and `answered`, and Google stated `order`.
        mutating func read(
            _ order: String, token: String, sent: ContinuousClock.Instant, answered: ContinuousClock.Instant
        ) {
            kept[token] = (order, sent, answered)
        }
    }

    /// A history that broke an invariant: where, and why.
    struct Failure: Error, CustomStringConvertible {
        let step: Int
        let message: String
        var description: String { "step \(step): \(message)" }
    }

    /// Plays `history` on a new app; nil if every invariant held after every step.
    func play(_ history: History) async throws -> Failure? {
        let tenant = try await service.newApp(confirms: history.confirms)
        service.setGooglePurchases(of: history, package: tenant.package)
        var model = history.model
        let products = model.products
        var google = GoogleState()
        // When the app was last switched to `confirm`: until every server's authentication cache has seen it, an
        // answer may still follow `once`.
        var switchedToConfirm: ContinuousClock.Instant?
        for (index, step) in history.steps.enumerated() {
            let answered: (String, JSONValue?)?
            let server = history.servers[index]
            switch try await perform(
                step, of: history, on: server, stalling: history.stalls[index], tenant: tenant, model: &model,
                google: &google, switchedToConfirm: &switchedToConfirm, products: products)
            {
            case .failed(let message): return Failure(step: index, message: message)
            case .answered(let user, let view): answered = (user, view)
            case .done: answered = nil
            }
            // A restart may lose nothing recorded: every view, from both servers.
            if case .restart = step {
                if let message = try await checkEveryCustomer(of: history, tenant: tenant, model: model) {
                    return Failure(step: index, message: message)
                }
                continue
            }
            // The views a step can change: its buyer's and the request's user's (who may hold the purchase), on the
            // step's store. A presentation's answer carries its user's view (`customer`), which is checked as it is.
            let store = model.purchases[step.transactionID]?.store ?? .appStore
            var users = Set([step.buyer(in: model), step.user].compactMap { $0 })
            if let (user, view) = answered {
                users.remove(user)
                if let message = compare(view, of: user, on: store, with: model) {
                    return Failure(step: index, message: message)
                }
            }
            // Each view is read from both servers: a change one server recorded is seen by the other at once.
            for user in users.sorted() {
                if let message = try await checkCustomer(user, on: store, tenant: tenant, model: model) {
                    return Failure(step: index, message: message)
                }
            }
        }
        // At the end, every user's view, and what a webhook receiver was told.
        if let message = try await checkEveryCustomer(of: history, tenant: tenant, model: model) {
            return Failure(step: history.steps.count, message: message)
        }
        if let message = try await checkReceiver(of: history, tenant: tenant, model: model) {
            return Failure(step: history.steps.count, message: message)
        }
        await noteGoogleDeliveries(of: history, tenant: tenant, model: model)
        return nil
    }

    /// Invariant 2 for every user of `history`, on each store the history sells on.
    private func checkEveryCustomer(of history: History, tenant: SimulatedService.Tenant, model: MoneyModel)
        async throws -> String?
    {
        let stores = MoneyModel.Store.allCases.filter { store in history.purchases.contains { $0.store == store } }
        for user in history.users {
            for store in stores {
                if let message = try await checkCustomer(user.id, on: store, tenant: tenant, model: model) {
                    return message
                }
            }
        }
        return nil
    }

    /// Invariant 3: the app's events, each delivered once or (a redelivery) twice, in an order drawn from the seed,
    /// applied by a receiver as docs/webhooks.md says ("Order"), leave every user with the model's entitlements and
    /// every transaction refunded exactly when the service holds its refund. Deliveries run in parallel with retries
    /// in production: any order can arrive.
    /// - `customer.entitlements_changed`: applied only when its `sequence` is higher than the last applied for the
    ///   user; its `after` is then the user's entitlements.
    /// - `transaction.created`, `transaction.revoked`, `transaction.revocation_reversed`: applied only when its
    ///   `revocation_as_of` is higher than the last applied for the transaction (a row never revoked has none, and
    ///   is applied only when nothing was); the row's `refunded_at` then says whether it is refunded.
    private func checkReceiver(of history: History, tenant: SimulatedService.Tenant, model: MoneyModel) async throws
        -> String?
    {
        var events = try await service.tenancy.webhookEvents(
            token: tenant.token, state: nil, since: nil, eventIDs: nil, limit: 10_000
        ).map(\.event)
        var random = SplitMix64(seed: history.seed ^ 0x7265_6365_6976_6572)
        events += events.filter { _ in Double.random(in: 0..<1, using: &random) < 0.3 }
        events.shuffle(using: &random)
        // A customer's events are each environment's (the simulator's App Store items are test data, kept in Xcode;
        // its Google Play purchases are Production's), ordered by their own sequence.
        var applied: [String: (sequence: Int64, after: JSONValue)] = [:]
        var rows: [String: (asOf: Int64, refunded: Bool)] = [:]
        for event in events where event.type.hasPrefix("transaction.") {
            guard let id = event.data["transaction_id"]?.stringValue else {
                return "a \(event.type) event without transaction_id: " + JSONValue.object(event.data).encodedString
            }
            let asOf: Int64 = if case .integer(let asOf) = event.data["revocation_as_of"] { asOf } else { -1 }
            if let last = rows[id], asOf <= last.asOf { continue }
            rows[id] = (asOf, event.data["refunded_at"].map { $0 != .null } ?? false)
        }
        let refunded = Set(rows.filter(\.value.refunded).keys)
        // A void of a purchase the ledger never saw is kept apart, with no row and so no transaction event.
        let held = Set(model.knowledge.revoked.keys).intersection(model.knowledge.recorded)
        guard refunded == held else {
            return "the webhook receiver holds refunded \(refunded.sorted()), the service holds refunds of "
                + "\(held.sorted()) (after \(events.count) deliveries)"
        }
        for event in events where event.type == "customer.entitlements_changed" {
            guard let user = event.data["app_user_id"]?.stringValue,
                case .integer(let sequence) = event.data["sequence"], let after = event.data["after"]
            else {
                return "a customer.entitlements_changed event without app_user_id, sequence or after: "
                    + JSONValue.object(event.data).encodedString
            }
            let key = "\(event.environment.rawValue)/\(user)"
            if sequence > applied[key]?.sequence ?? Int64.min { applied[key] = (sequence, after) }
        }
        for user in history.users {
            for store in MoneyModel.Store.allCases {
                let key = "\(Self.environment(of: store))/\(user.id)"
                var view = JSONObject(capacity: 1)
                view.append("entitlements", applied[key]?.after ?? .array([]))
                if let message = compare(.object(view), of: user.id, on: store, with: model) {
                    return "the webhook receiver's \(message) (after \(events.count) deliveries, the last applied "
                        + "sequence \(applied[key].map { String($0.sequence) } ?? "none"))"
                }
            }
        }
        return nil
    }

    /// Notes the Google Play purchases the service delivered (in `once` by the answer that said `deliver: true`, in
    /// `confirm` by the confirmation, at a switch to `once` by the switch): Google must see each acknowledged, or
    /// consumed if it is a consumable (invariant 5), unless Google states it acknowledged already (a subscription
    /// renewed in the history). One still unsettled (delivered or only offered) may be either.
    private func noteGoogleDeliveries(of history: History, tenant: SimulatedService.Tenant, model: MoneyModel) async {
        for (id, settled) in model.knowledge.delivered.map({ ($0, true) })
            + model.knowledge.unsettled.map({ ($0, false) })
        {
            guard let purchase = model.purchases[id], purchase.store == .googlePlay,
                let token = history.googleTokens[id], !history.googleAcknowledged.contains(token)
            else { continue }
            let kind = purchase.expiresAt == nil ? "products" : "subscriptions"
            await service.googleDeliveries.add(
                "\(tenant.package)/\(kind)/\(purchase.productID)/\(token)",
                consumes: model.products[purchase.productID]?.kind == .consumable, seed: history.seed,
                settled: settled)
        }
    }

    /// The environment the service keeps `store`'s purchases of the simulator in: the App Store items, signed by the
    /// simulator's own PKI, are test data (`Xcode`); Google's purchases are `Production`.
    static func environment(of store: MoneyModel.Store) -> String {
        store == .appStore ? "Xcode" : "Production"
    }

    /// What a step came to.
    enum Performed {
        /// An invariant broke.
        case failed(String)
        /// A request for `user` was answered with the user's view.
        case answered(user: String, view: JSONValue?)
        case done
    }

    /// Sends `step` (a presentation first to the stalling server, with `stalling`); returns what broke, if anything,
    /// or the view its answer carries. `google` holds what Google states of each purchase token and what the service
    /// keeps of it.
    private func perform(
        _ step: History.Step, of history: History, on server: Int, stalling: Bool, tenant: SimulatedService.Tenant,
        model: inout MoneyModel, google: inout GoogleState, switchedToConfirm: inout ContinuousClock.Instant?,
        products: [String: Product]
    ) async throws -> Performed {
        switch step {
        case .present(let id, let userID, let signed):
            guard let purchase = model.purchases[id] else { return .done }
            let signedAt =
                switch signed {
                case .fresh: purchase.purchasedAt.addingTimeInterval(60)
                case .refunded: (purchase.refundedAt ?? purchase.purchasedAt).addingTimeInterval(60)
                case .late: history.start.addingTimeInterval(-60)
                }
            let jws = try SimulatedService.transaction(
                purchase, of: history.user(purchase.buyer), products: products, signedAt: signedAt)
            var fields = [("apikey", tenant.apiKey), ("token", tenant.token), ("receipt", jws)]
            if let userID { fields.append(("app_user_id", userID)) }
            return try await present(
                step, ids: { _, _ in [id] }, fields: fields, on: server, stalling: stalling,
                switchedToConfirm: switchedToConfirm,
                expect: { id, answered, eitherMode in
                    model.presented(id, user: userID, signedAt: signedAt, eitherMode: eitherMode, answered: answered)
                }
            ).result
        case .presentGoogle(let first, let userID):
            // Google's answer states the order renewed last, or the service's kept answer an earlier one: the
            // answer's entry is that order's.
            guard let purchase = model.purchases[first], let token = history.googleTokens[first] else { return .done }
            var fields = [
                ("apikey", tenant.apiKey), ("token", tenant.token), ("store", "google_play"),
                ("package_name", tenant.package), ("product_id", purchase.productID), ("purchase_token", token),
            ]
            if let userID { fields.append(("app_user_id", userID)) }
            let state = google
            let performed = try await present(
                step,
                ids: { sent, answered in state.candidates(first: first, token: token, sent: sent, answered: answered) },
                fields: fields, on: server, stalling: stalling, switchedToConfirm: switchedToConfirm,
                expect: { id, answered, eitherMode in
                    model.presented(
                        id, user: userID, stating: .none, signedAt: Date(), eitherMode: eitherMode, answered: answered)
                })
            if let order = performed.id, let (sent, answered) = performed.span {
                google.presented(order, token: token, sent: sent, answered: answered)
            }
            return performed.result
        case .switchDelivery:
            let confirms = !model.confirmsDeliveries
            _ = try await service.tenancy.updateApp(
                token: tenant.token, settings: AppSettings(deliveryMode: confirms ? "confirm" : "once"))
            model.switchDelivery(confirms: confirms)
            if confirms { switchedToConfirm = .now }
            await revocations.switched()
            if traces { print("\(step): now \(confirms ? "confirm" : "once")") }
        case .confirmDeliveries:
            let ids = model.knowledge.offered.union(model.knowledge.unsettled).sorted()
            guard !ids.isEmpty else { return .done }
            let answer = try await service.post(
                "/api/transactions/delivered",
                form: [
                    ("apikey", tenant.apiKey), ("token", tenant.token),
                    ("transaction_ids", ids.joined(separator: ",")),
                ], server: server)
            if traces { print("\(step) on server \(server) -> \(JSONValue.object(answer.json).encodedString)") }
            guard answer.status == .ok, answer.json["status"] == .integer(0) else {
                return .failed("\(step): answered \(answer.status.code) \(JSONValue.object(answer.json).encodedString)")
            }
            var listed: [String: Bool] = [:]
            for entry in answer.json["transactions"]?.arrayValue ?? [] {
                guard let id = entry["transaction_id"]?.stringValue else { continue }
                listed[id] = entry["delivered_at"].map { $0 != .null } ?? false
            }
            // nil: either (a refunded transaction that a server in `once` may have delivered).
            let expected = model.confirmed(ids, answered: listed)
            let unknown = Set((answer.json["unknown_transaction_ids"]?.arrayValue ?? []).compactMap(\.stringValue))
            let agrees =
                Set(listed.keys) == Set(expected.keys)
                && expected.allSatisfy { id, delivered in
                    delivered.map { listed[id] == $0 } ?? true
                }
            guard agrees, unknown == Set(ids).subtracting(expected.keys) else {
                return .failed(
                    "\(step): confirming \(ids) was answered \(JSONValue.object(answer.json).encodedString); the model "
                        + "says delivered \(expected.filter { $0.value == true }.keys.sorted()), not delivered "
                        + "\(expected.filter { $0.value == false }.keys.sorted()), either "
                        + "\(expected.filter { $0.value == nil }.keys.sorted()), unknown "
                        + "\(Set(ids).subtracting(expected.keys).sorted())")
            }
        case .restart:
            try await service.servers.restart(server)
            if traces { print("\(step) server \(server)") }
        case .renewGoogle(let id, let messageID):
            guard let purchase = model.purchases[id], let token = history.googleTokens[id] else { return .done }
            let first = purchase.originalTransactionID
            // A renewal never goes back (a shrunk history may have lost the one between).
            if let current = model.purchases[google.current(first)], current.purchasedAt >= purchase.purchasedAt {
                return .done
            }
            google.orders[first] = id
            service.setGoogleSubscription(purchase, of: history, token: token, package: tenant.package)
            if traces { print("\(step): Google states \(id) for \(token)") }
            await renewals.count(pushed: messageID != nil)
            guard let messageID else { return .done }
            let now = Int64((Date().timeIntervalSince1970 * 1_000).rounded(.down))
            let notification = """
                {"version":"1.0","packageName":"\(tenant.package)","eventTimeMillis":"\(now)",\
                "subscriptionNotification":{"version":"1.0","notificationType":2,\
                "purchaseToken":"\(token)","subscriptionId":"\(purchase.productID)"}}
                """
            let sent = ContinuousClock.now
            let status = try await service.pushGoogleNotification(
                token: tenant.token, messageID: messageID, notification: notification, server: server)
            guard status == .ok else { return .failed("\(step): the push was answered \(status.code)") }
            google.read(id, token: token, sent: sent, answered: .now)
            google.messages.insert(messageID)
            model.notified(id, stating: .none, signedAt: Date())
        case .revokeGoogle(let first, let messageID):
            let id = google.current(first)
            guard let purchase = model.purchases[id], let token = history.googleTokens[id],
                let expires = purchase.expiresAt
            else { return .done }
            // Google's milliseconds.
            let revokedAt = Date(timeIntervalSince1970: (Date().timeIntervalSince1970 * 1_000).rounded(.down) / 1_000)
            // Google revokes a subscription in its period, once.
            guard expires > revokedAt, purchase.refundedAt == nil else { return .done }
            // The store's truth from now on: refunded at the revocation, and Google states the subscription ended then.
            model.refund(id, at: revokedAt)
            service.setGoogleSubscription(
                purchase, of: history, token: token, package: tenant.package, endingAt: revokedAt)
            if let refunded = model.purchases[id] {
                service.listGoogleVoid(refunded, token: token, package: tenant.package)
            }
            let millis = Int64((revokedAt.timeIntervalSince1970 * 1_000).rounded())
            let notification = """
                {"version":"1.0","packageName":"\(tenant.package)","eventTimeMillis":"\(millis)",\
                "subscriptionNotification":{"version":"1.0","notificationType":12,\
                "purchaseToken":"\(token)","subscriptionId":"\(purchase.productID)"}}
                """
            let sent = ContinuousClock.now
            let status = try await service.pushGoogleNotification(
                token: tenant.token, messageID: messageID, notification: notification, server: server)
            guard status == .ok else { return .failed("\(step): the push was answered \(status.code)") }
            if traces { print("\(step): Google revoked \(id) at \(millis)") }
            await revocations.add()
            google.read(id, token: token, sent: sent, answered: .now)
            google.messages.insert(messageID)
            model.notified(id, stating: .refunded, signedAt: revokedAt)
        case .cancelGoogle(let first, let messageID):
            let id = google.current(first)
            guard let purchase = model.purchases[id], let token = history.googleTokens[id],
                let expires = purchase.expiresAt, expires > Date(), purchase.refundedAt == nil
            else { return .done }
            service.setGoogleSubscription(purchase, of: history, token: token, package: tenant.package, cancelled: true)
            let now = Int64((Date().timeIntervalSince1970 * 1_000).rounded(.down))
            let notification = """
                {"version":"1.0","packageName":"\(tenant.package)","eventTimeMillis":"\(now)",\
                "subscriptionNotification":{"version":"1.0","notificationType":3,\
                "purchaseToken":"\(token)","subscriptionId":"\(purchase.productID)"}}
                """
            let sent = ContinuousClock.now
            let status = try await service.pushGoogleNotification(
                token: tenant.token, messageID: messageID, notification: notification, server: server)
            guard status == .ok else { return .failed("\(step): the push was answered \(status.code)") }
            if traces { print("\(step): Google states \(id) cancelled") }
            await revocations.cancelled()
            // Paid up to its expiry: the service is told of the order, and nothing ends.
            google.read(id, token: token, sent: sent, answered: .now)
            google.messages.insert(messageID)
            model.notified(id, stating: .none, signedAt: Date())
        case .notifyGooglePurchase(let first, let messageID), .notifyGoogleVoided(let first, let messageID):
            // Google's API states the order renewed last: the service reads that one.
            let id = google.current(first)
            guard let purchase = model.purchases[id], let token = history.googleTokens[id] else { return .done }
            let now = Int64((Date().timeIntervalSince1970 * 1_000).rounded(.down))
            let body: String
            if case .notifyGoogleVoided = step {
                service.listGoogleVoid(purchase, token: token, package: tenant.package)
                body = """
                    "voidedPurchaseNotification":{"purchaseToken":"\(token)","orderId":"\(id)",\
                    "productType":\(purchase.expiresAt == nil ? 2 : 1),"refundType":1}
                    """
            } else if purchase.expiresAt == nil {
                body = """
                    "oneTimeProductNotification":{"version":"1.0","notificationType":1,\
                    "purchaseToken":"\(token)","sku":"\(purchase.productID)"}
                    """
            } else {
                body = """
                    "subscriptionNotification":{"version":"1.0","notificationType":4,\
                    "purchaseToken":"\(token)","subscriptionId":"\(purchase.productID)"}
                    """
            }
            let notification =
                #"{"version":"1.0","packageName":"\#(tenant.package)","eventTimeMillis":"\#(now)",\#(body)}"#
            let sent = ContinuousClock.now
            let status = try await service.pushGoogleNotification(
                token: tenant.token, messageID: messageID, notification: notification, server: server)
            guard status == .ok else { return .failed("\(step): the push was answered \(status.code)") }
            // A message recorded before is a duplicate: nothing is read, nothing is told.
            guard google.messages.insert(messageID).inserted else { return .done }
            if case .notifyGoogleVoided = step {
                model.notified(
                    id, stating: .refunded, signedAt: purchase.refundedAt ?? history.start, recordsRow: false)
            } else {
                google.read(id, token: token, sent: sent, answered: .now)
                model.notified(id, stating: .none, signedAt: Date())
            }
        case .notifyPurchase(let id, let uuid), .notifyRefund(let id, let uuid), .notifyReversal(let id, let uuid):
            guard let purchase = model.purchases[id] else { return .done }
            let statement: MoneyModel.Statement
            let signedAt: Date
            switch step {
            case .notifyRefund:
                (statement, signedAt) = (.refunded, purchase.refundedAt ?? history.start)
            case .notifyReversal:
                (statement, signedAt) = (.reversed, purchase.reversedAt ?? history.start)
            default:
                (statement, signedAt) = (.none, purchase.purchasedAt.addingTimeInterval(1))
            }
            let transaction = try SimulatedService.transaction(
                purchase, of: history.user(purchase.buyer), products: products, signedAt: signedAt)
            let (type, subtype): (String, String?)
            if statement == .refunded {
                (type, subtype) = ("REFUND", nil)
            } else if statement == .reversed {
                (type, subtype) = ("REFUND_REVERSED", nil)
            } else if purchase.expiresAt == nil {
                (type, subtype) = ("ONE_TIME_CHARGE", nil)
            } else if purchase.transactionID == purchase.originalTransactionID {
                (type, subtype) = ("SUBSCRIBED", "INITIAL_BUY")
            } else {
                (type, subtype) = ("DID_RENEW", nil)
            }
            let signedPayload = try SimulatedService.notification(
                type: type, subtype: subtype, uuid: uuid, transaction: transaction, signedAt: signedAt)
            let status = try await service.postNotification(
                token: tenant.token, signedPayload: signedPayload, server: server)
            guard status == .ok else { return .failed("\(step): the notification was answered \(status.code)") }
            // A notification signed before the notification retention (90 days, less a day for the clocks) is a
            // duplicate that changes nothing (docs/notifications.md; security review S14): the service is not told.
            // Apple never sends one that late; a simulated history's late arrival can (found at seed 41300).
            guard signedAt >= Date().addingTimeInterval(-89 * 86_400) else { return .done }
            model.notified(id, stating: statement, signedAt: signedAt)
        }
        return .done
    }

    /// A presentation's outcome, and whether the answer delivered the purchase.
    struct Presented {
        enum Delivery { case delivered, notDelivered }
        let result: Performed
        let delivery: Delivery
        /// The transaction whose entry was checked, and when the presentation was sent and answered.
        var id: String?
        var span: (sent: ContinuousClock.Instant, answered: ContinuousClock.Instant)?
    }

    /// Posts a presentation (first to the stalling server, with `stalling`: on its 503, which must say retryable,
    /// again to `server`) and checks the answer against `expect`, the model's expectation, asked once an answer that
    /// is not a 503 came.
    private func present(
        _ step: History.Step, ids: (ContinuousClock.Instant, ContinuousClock.Instant) -> [String],
        fields: [(String, String)], on server: Int, stalling: Bool, switchedToConfirm: ContinuousClock.Instant?,
        expect: (_ id: String, _ answered: Bool, _ eitherMode: Bool) -> MoneyModel.Expectation
    ) async throws -> Presented {
        let sent = ContinuousClock.now
        // A server holds the app's delivery mode for its authentication cache's lifetime from its look-up (and a
        // little more: a look-up that read the old mode may finish after the switch on a busy machine).
        let eitherMode =
            switchedToConfirm.map { sent < $0 + SimulatedService.authenticationCacheTTL + .seconds(2) } ?? false
        /// The first of the transactions the answer may be about (``ids``) that it has an entry for.
        func checked(_ answer: SimulatedService.Answer, viewMayBeMissing: Bool) -> Presented {
            let answered = ContinuousClock.now
            let candidates = ids(sent, answered)
            let entries = Set(
                (answer.json["transactions"]?.arrayValue ?? []).compactMap { $0["transaction_id"]?.stringValue })
            let id = candidates.first(where: entries.contains) ?? candidates[0]
            let entry = answer.json["transactions"]?.arrayValue?.first { $0["transaction_id"] == .string(id) }
            let expected = expect(id, entry?["deliver"] == .bool(true), eitherMode)
            let result = check(answer, of: step, id: id, expected: expected, viewMayBeMissing: viewMayBeMissing)
            if case .failed = result { return Presented(result: result, delivery: .notDelivered) }
            return Presented(
                result: result, delivery: expected.deliver ? .delivered : .notDelivered, id: id,
                span: (sent, answered))
        }
        if stalling {
            let stalled = try await service.post("/api", form: fields, server: SimulatedService.stalling)
            if traces {
                print("\(step) on the stalling server -> \(JSONValue.object(stalled.json).encodedString)")
            }
            await stalls.count(stalled.status == .serviceUnavailable)
            if stalled.status != .serviceUnavailable {
                // A view the stalling database could not give in time is left out (docs/api.md, "customer"): the
                // user's view is then read from both servers.
                return checked(stalled, viewMayBeMissing: true)
            }
            guard stalled.json["retryable"] == .bool(true) else {
                return Presented(
                    result: .failed(
                        "\(step): the stalling server answered 503 without retryable: "
                            + JSONValue.object(stalled.json).encodedString), delivery: .notDelivered)
            }
        }
        let answer = try await service.post("/api", form: fields, server: server)
        if traces { print("\(step) on server \(server) -> \(JSONValue.object(answer.json).encodedString)") }
        return checked(answer, viewMayBeMissing: false)
    }

    /// Checks a presentation's answer, whose entry for the transaction `id` counts, against what the model says of
    /// it (invariant 1).
    private func check(
        _ answer: SimulatedService.Answer, of step: History.Step, id: String, expected: MoneyModel.Expectation,
        viewMayBeMissing: Bool = false
    ) -> Performed {
        guard answer.status == .ok, answer.json["status"] == .integer(0) else {
            return .failed("\(step): answered \(answer.status.code) \(JSONValue.object(answer.json).encodedString)")
        }
        guard
            let entry = answer.json["transactions"]?.arrayValue?.first(where: { $0["transaction_id"] == .string(id) })
        else {
            return .failed("\(step): no entry for \(id) in \(JSONValue.object(answer.json).encodedString)")
        }
        let deliver = entry["deliver"] == .bool(true)
        let claimedByOther = entry["state"] == .string("claimed_by_other_user")
        if deliver != expected.deliver || claimedByOther != expected.claimedByOther {
            return .failed(
                "\(step): answered deliver \(deliver), state \(entry["state"]?.stringValue ?? "-"); "
                    + "the model says deliver \(expected.deliver)"
                    + (expected.claimedByOther ? ", claimed by another user" : ""))
        }
        guard let user = step.user, answer.json["customer"] != nil || !viewMayBeMissing else { return .done }
        return .answered(user: user, view: answer.json["customer"])
    }

    /// Compares `user`'s customer view on `store` (its environment's: ``environment(of:)``) with the model's
    /// entitlements now.
    private func checkCustomer(
        _ user: String, on store: MoneyModel.Store, tenant: SimulatedService.Tenant, model: MoneyModel
    ) async throws -> String? {
        for server in 0..<service.servers.count {
            let answer = try await service.post(
                "/api/customers",
                form: [
                    ("apikey", tenant.apiKey), ("token", tenant.token), ("app_user_id", user),
                    ("environment", Self.environment(of: store)),
                ], server: server)
            guard answer.status == .ok else {
                return "customer \(user) on server \(server): answered \(answer.status.code) "
                    + JSONValue.object(answer.json).encodedString
            }
            if traces {
                print("customer \(user) on server \(server) -> \(JSONValue.object(answer.json).encodedString)")
            }
            if let message = compare(answer.json["customer"], of: user, on: store, with: model) {
                return "on server \(server): \(message)"
            }
        }
        return nil
    }

    /// Compares `view` (a `customer` object) with the model's entitlements of `user` on `store` now.
    private func compare(_ view: JSONValue?, of user: String, on store: MoneyModel.Store, with model: MoneyModel)
        -> String?
    {
        let now = Date()
        let expected = model.entitlements(of: user, at: now, on: store).map { entitlement in
            "\(entitlement.name) until \(entitlement.expiresAt.map(Self.rfc3339) ?? "ever")"
        }
        let active = (view?["entitlements"]?.arrayValue ?? []).filter { $0["active"] == .bool(true) }
        let actual = active.map { entitlement in
            "\(entitlement["name"]?.stringValue ?? "?") until \(entitlement["expires_at"]?.stringValue ?? "ever")"
        }.sorted()
        guard actual == expected else {
            return "customer \(user) (\(Self.environment(of: store))): active entitlements \(actual), "
                + "the model says \(expected)"
        }
        return nil
    }

    /// Invariant 5, once the run's histories are played: every Google Play purchase the service delivered is
    /// acknowledged with Google, or consumed if it is a consumable, and nothing it did not deliver is. Google refunds a
    /// purchase left unacknowledged three days after it; every simulated purchase is less than two and a half days
    /// old, and each server's acknowledger runs every second. Waits up to `patience` for the last ones; one still
    /// missing then must be pending in the ledger and due again within `due`: the stalling server's claims and
    /// records run out of its deadline, and a claim whose answer was lost holds its rows for the claim's lease (about
    /// four minutes), which Google's three days allow but a run does not wait for.
    func checkGoogleAcknowledgements(patience: Duration = .seconds(10), due: TimeInterval = 300) async throws
        -> String?
    {
        let delivered = await service.googleDeliveries.delivered
        let undetermined = await service.googleDeliveries.undetermined
        let waited = ContinuousClock.now
        while true {
            let acknowledged = Set(service.google.acknowledged)
            let consumed = Set(service.google.consumed)
            let missing = delivered.filter { key, expected in
                expected.consumes ? !consumed.contains(key) : !acknowledged.contains(key)
            }
            let stray = acknowledged.union(consumed).filter { key in
                guard let expected = delivered[key] else { return !undetermined.contains(key) }
                return expected.consumes ? acknowledged.contains(key) : consumed.contains(key)
            }
            if !stray.isEmpty {
                return
                    "Google was told of purchases the service did not deliver so (acknowledged \(acknowledged.count), "
                    + "consumed \(consumed.count)): \(stray.sorted().prefix(5))"
            }
            if missing.isEmpty { return nil }
            if ContinuousClock.now - waited > patience {
                // What the ledger holds pending and due within `due` (claimed here: the run is over).
                let pending = try await service.tenancy.store.claimGoogleAcknowledgements(
                    dueBy: Date().addingTimeInterval(due), lease: .seconds(3_600), limit: 100_000)
                let scheduled = Set(pending.map(\.purchaseToken))
                let lost = missing.filter { key, _ in !scheduled.contains(String(key.split(separator: "/").last ?? ""))
                }
                guard !lost.isEmpty else { return nil }
                let first = lost.sorted { $0.value.seed < $1.value.seed }.prefix(5)
                return "\(lost.count) of \(delivered.count) delivered Google Play purchases were not acknowledged or "
                    + "consumed in \(patience), nor pending and due within \(Int(due)) s: "
                    + first.map {
                        "\($0.key) (seed \($0.value.seed), \($0.value.consumes ? "consume" : "acknowledge"))"
                    }
                    .joined(separator: ", ")
            }
            try await Task.sleep(for: .milliseconds(200))
        }
    }

    static func rfc3339(_ date: Date) -> String {
        AppleDate.rfc3339(milliseconds: Int64((date.timeIntervalSince1970 * 1_000).rounded(.down)))
    }

    /// The shortest history found that still fails: steps removed one at a time while it fails, until no single
    /// removal does.
    func shrink(_ history: History) async throws -> (History, Failure)? {
        guard var failure = try await play(history) else { return nil }
        // Steps after the failing one never ran.
        var current = history.through(failure.step)
        var removedOne = true
        while removedOne {
            removedOne = false
            var index = current.steps.count - 1
            while index >= 0 {
                let candidate = current.removing(index)
                if let found = try await play(candidate) {
                    current = candidate.through(found.step)
                    failure = found
                    removedOne = true
                    index = min(index, current.steps.count)
                }
                index -= 1
            }
        }
        return (current, failure)
    }
}
