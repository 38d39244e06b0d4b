import Foundation
import MoneyModel

/// A seeded random history: the store's truth (users, purchases, renewals, refunds, dated around the start of the
/// run) and the messages the service receives about it, in the order the history plays them (clients presenting with
/// or without their user, presenting twice, presenting late; notifications before the client, late, twice, out of
/// order). Everything follows from the seed.
struct History: Sendable, CustomStringConvertible {
    /// One message to the service.
    enum Step: Sendable, Equatable, CustomStringConvertible {
        /// The client presents the transaction's JWS for `user` (nil: the request names no user), signed when
        /// `signed` says; it carries the refund if the store held the transaction refunded then.
        case present(String, user: String?, signed: Signed)
        /// Apple notifies the purchase or renewal (`SUBSCRIBED`, `DID_RENEW`, `ONE_TIME_CHARGE`); `uuid` is the
        /// notification's id (the same for Apple's retries).
        case notifyPurchase(String, uuid: String)
        /// Apple notifies the refund (`REFUND`).
        case notifyRefund(String, uuid: String)
        /// Apple notifies the refund's reversal (`REFUND_REVERSED`).
        case notifyReversal(String, uuid: String)
        /// The client presents the Google Play purchase of the transaction (its package, product and purchase token)
        /// for `user`; Google's API states the purchase as it is now, and no refund.
        case presentGoogle(String, user: String?)
        /// Pub/Sub pushes Google's notification of the purchase (`ONE_TIME_PRODUCT_PURCHASED`,
        /// `SUBSCRIPTION_PURCHASED`); `messageID` is the same for Pub/Sub's redeliveries.
        case notifyGooglePurchase(String, messageID: String)
        /// Pub/Sub pushes Google's `voidedPurchaseNotification` of the order (a refund), listed by then in Google's
        /// voided purchases.
        case notifyGoogleVoided(String, messageID: String)
        /// Google renews the subscription: its purchase token's `SubscriptionPurchaseV2` states the renewal's order
        /// (`transactionID`, `GPA.…..N`) from now on, and Pub/Sub pushes `SUBSCRIPTION_RENEWED` under `messageID`
        /// (nil: the push is not part of the history, and the service learns of the renewal from the client alone).
        /// Google tells a renewal by notification only: its API is read, never told.
        case renewGoogle(String, messageID: String?)
        /// Google revokes the subscription whose first order is the transaction (the customer was refunded and lost it
        /// at once): its resource states it expired now, its current order is listed among the voided purchases, and
        /// Pub/Sub pushes `SUBSCRIPTION_REVOKED` under `messageID`. Only a subscription still in its period is revoked.
        case revokeGoogle(String, messageID: String)
        /// The customer cancels the subscription whose first order is the transaction: it renews no more, and stays
        /// paid up to its expiry (`SUBSCRIPTION_STATE_CANCELED`, `SUBSCRIPTION_CANCELED` pushed under `messageID`).
        /// Only a subscription still in its period is cancelled.
        case cancelGoogle(String, messageID: String)
        /// The backend confirms the deliveries it was offered so far and has not confirmed yet
        /// (`POST /api/transactions/delivered`; an app in `confirm` delivery).
        case confirmDeliveries
        /// The operator switches the app's delivery mode, `confirm` to `once` or back (`app update --delivery`).
        case switchDelivery
        /// The step's server restarts (``SimulatedService/ServerPool``): a new process with empty caches takes its
        /// requests, and the old one stops once it answered those it held. Every recorded fact must outlive it.
        case restart

        /// When a presented JWS was signed.
        enum Signed: String, Sendable, Equatable {
            /// A minute after the purchase.
            case fresh
            /// A minute after the refund (a device that kept the item since; before a reversal, if one came).
            case refunded
            /// A minute before the history's start (a restore, a late client).
            case late
        }

        /// The transaction the step is about (none: a confirmation of every delivery offered).
        var transactionID: String {
            switch self {
            case .present(let id, _, _), .notifyPurchase(let id, _), .notifyRefund(let id, _),
                .notifyReversal(let id, _), .presentGoogle(let id, _), .notifyGooglePurchase(let id, _),
                .notifyGoogleVoided(let id, _), .renewGoogle(let id, _), .revokeGoogle(let id, _),
                .cancelGoogle(let id, _):
                id
            case .confirmDeliveries, .restart, .switchDelivery: ""
            }
        }

        /// The user a request names, if any.
        var user: String? {
            switch self {
            case .present(_, let user, _), .presentGoogle(_, let user): user
            default: nil
            }
        }

        /// Whether the step presents a purchase (a client's request to `/api`).
        var isPresentation: Bool {
            switch self {
            case .present, .presentGoogle: true
            default: false
            }
        }

        /// Who paid for the step's transaction.
        func buyer(in model: MoneyModel) -> String? { model.purchases[transactionID]?.buyer }

        var description: String {
            switch self {
            case .present(let id, let user, let signed):
                "present \(id) user=\(user ?? "-") signed \(signed.rawValue)"
            case .notifyPurchase(let id, let uuid): "notify purchase \(id) [\(uuid.prefix(8))]"
            case .notifyRefund(let id, let uuid): "notify refund \(id) [\(uuid.prefix(8))]"
            case .notifyReversal(let id, let uuid): "notify reversal \(id) [\(uuid.prefix(8))]"
            case .presentGoogle(let id, let user): "present google \(id) user=\(user ?? "-")"
            case .notifyGooglePurchase(let id, let message): "notify google purchase \(id) [\(message)]"
            case .notifyGoogleVoided(let id, let message): "notify google voided \(id) [\(message)]"
            case .renewGoogle(let id, let message): "google renews to \(id) [\(message ?? "no push")]"
            case .revokeGoogle(let id, let message): "google revokes \(id)'s subscription [\(message)]"
            case .cancelGoogle(let id, let message): "the customer cancels \(id)'s subscription [\(message)]"
            case .confirmDeliveries: "confirm the deliveries offered"
            case .restart: "restart"
            case .switchDelivery: "the operator switches the delivery mode"
            }
        }
    }

    /// A user of the app: the backend's id, the `appAccountToken` the app sets on Apple purchases (a UUID, which is
    /// not the backend's id), if it sets one, and whether the app sets Google's `obfuscatedExternalAccountId` (a hash
    /// of the backend's id, as Google advises: never the id itself).
    struct User: Sendable {
        let id: String
        let appAccountToken: String?
        var setsGoogleAccountID = false

        /// The `obfuscatedExternalAccountId` the app sets for this user on Google Play, if it sets one.
        var googleAccountID: String? {
            guard setsGoogleAccountID else { return nil }
            // FNV-1a of the id, as hex: a one-way stand-in for the app's hash (its form does not matter to Google).
            var hash: UInt64 = 0xcbf2_9ce4_8422_2325
            for byte in id.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
            return String(hash, radix: 16)
        }
    }

    static let bundleID = "com.example.app"
    static let catalog = [
        Product(id: "com.example.app.coins", kind: .consumable, entitlements: []),
        Product(id: "com.example.app.lifetime", kind: .nonConsumable, entitlements: ["lifetime"]),
        Product(id: "com.example.app.monthly", kind: .autoRenewable(days: 30), entitlements: ["pro"]),
    ]
    static let day: TimeInterval = 86_400

    let seed: UInt64
    /// Whether the app delivers in `confirm` mode (`deliver: true` until the backend confirms) rather than `once`.
    let confirms: Bool
    /// The time the history is told around: purchases and refunds are before it, subscription periods may end after.
    let start: Date
    let users: [User]
    let purchases: [Purchase]
    /// Each Google Play purchase's token, by transaction (order) id (a subscription's renewals share its token).
    let googleTokens: [String: String]
    /// The Google Play purchase tokens Google states acknowledged before the history (a subscription renewed in it
    /// was bought a month or two before: its first order was acknowledged then, or Google would have refunded it).
    let googleAcknowledged: Set<String>
    /// The messages, in the order they are played.
    private(set) var steps: [Step]
    /// Which of the two servers each step goes to (``steps``' indices).
    private(set) var servers: [Int]
    /// Which presentations go first to the server whose database stalls (``steps``' indices): answered 503, the
    /// client sends the request again to the step's server.
    private(set) var stalls: [Bool]

    /// The history without step `index`.
    func removing(_ index: Int) -> History {
        var shorter = self
        shorter.steps.remove(at: index)
        shorter.servers.remove(at: index)
        shorter.stalls.remove(at: index)
        return shorter
    }

    /// The history up to step `index`, included.
    func through(_ index: Int) -> History {
        var shorter = self
        shorter.steps = Array(steps.prefix(index + 1))
        shorter.servers = Array(servers.prefix(index + 1))
        shorter.stalls = Array(stalls.prefix(index + 1))
        return shorter
    }

    var description: String {
        var lines = [
            "seed \(seed): \(users.count) users, \(purchases.count) transactions, \(steps.count) steps, "
                + "\(confirms ? "confirm" : "once") delivery"
        ]
        for user in users {
            lines.append(
                "  \(user.id): appAccountToken \(user.appAccountToken ?? "-"), "
                    + "obfuscatedExternalAccountId \(user.googleAccountID ?? "-")")
        }
        for purchase in purchases {
            let refund =
                (purchase.refundedAt.map { " refunded \(Self.offset($0, from: start))" } ?? "")
                + (purchase.reversedAt.map { " reversed \(Self.offset($0, from: start))" } ?? "")
            lines.append(
                "  \(purchase.store == .googlePlay ? "google " : "")"
                    + "\(purchase.transactionID) (\(purchase.originalTransactionID)) \(purchase.productID) "
                    + "by \(purchase.buyer) at \(Self.offset(purchase.purchasedAt, from: start))"
                    + (purchase.expiresAt.map { " until \(Self.offset($0, from: start))" } ?? "") + refund)
        }
        for (index, step) in steps.enumerated() {
            lines.append(
                "  \(index): \(step) (\(stalls[index] ? "stalling server, then " : "")server \(servers[index]))")
        }
        return lines.joined(separator: "\n")
    }

    static func offset(_ date: Date, from start: Date) -> String {
        String(format: "%+.2fd", date.timeIntervalSince(start) / day)
    }

    /// The model of this history's truth, before the service has been told anything.
    var model: MoneyModel {
        var model = MoneyModel(products: Self.catalog, confirmsDeliveries: confirms)
        for purchase in purchases { model.add(purchase) }
        return model
    }

    func user(_ id: String) -> User? { users.first { $0.id == id } }

    /// Generates the history of `seed`, told around `start`; `restarts` is the share of histories that restart a
    /// server, `switches` the share of those whose app switches between `once` and `confirm`.
    init(
        seed: UInt64, start: Date, confirms drawnConfirms: Bool? = nil, restarts: Double = 0.02, switches: Double = 0.1
    ) {
        self.seed = seed
        // Whole seconds: the stores' dates are milliseconds, and a boundary is never within hours of `start`.
        self.start = Date(timeIntervalSince1970: start.timeIntervalSince1970.rounded(.down))
        var random = SplitMix64(seed: seed)
        let start = self.start
        var users = (1...Int.random(in: 1...2, using: &random)).map { index in
            User(
                id: "user-\(index)",
                appAccountToken: Bool.random(using: &random) ? UUID.random(using: &random).uuidString.lowercased() : nil
            )
        }
        // Google Play's part of the history is drawn from a generator of its own, so that the App Store's part of a
        // seed is the one it was before Google joined the simulator (the regression seeds keep their histories).
        var google = SplitMix64(seed: seed ^ 0x676f_6f67_6c65_2121)
        for index in users.indices {
            users[index].setsGoogleAccountID = Double.random(in: 0..<1, using: &google) < 0.7
        }
        // A third of the histories sell on Google Play too (its steps double a history's cost, and CI's run is
        // bounded by time: more histories with fewer Google ones find more than fewer with Google in each).
        let sellsOnGoogle = Double.random(in: 0..<1, using: &google) < 1 / 3
        self.users = users
        var purchases: [Purchase] = []
        var nextID = 1_000
        func newID() -> String {
            nextID += Int.random(in: 1...3, using: &random)
            return String(nextID)
        }
        /// A date `days` ago, off any whole hour so no boundary sits on `start`.
        func ago(_ days: Double) -> Date { start.addingTimeInterval(-(days * Self.day).rounded(.down)) }
        for user in users {
            for _ in 0..<Int.random(in: 0...2, using: &random) {
                let id = newID()
                purchases.append(
                    Purchase(
                        transactionID: id, originalTransactionID: id, productID: "com.example.app.coins",
                        buyer: user.id, purchasedAt: ago(Double.random(in: 0.2...60, using: &random)), expiresAt: nil))
            }
            if Double.random(in: 0..<1, using: &random) < 0.4 {
                let id = newID()
                purchases.append(
                    Purchase(
                        transactionID: id, originalTransactionID: id, productID: "com.example.app.lifetime",
                        buyer: user.id, purchasedAt: ago(Double.random(in: 0.2...60, using: &random)), expiresAt: nil))
            }
            if Double.random(in: 0..<1, using: &random) < 0.7 {
                // Periods of 30 days from a start up to 100 days ago; renewed until now, or stopped earlier.
                var begins = ago(Double.random(in: 0.3...100, using: &random))
                let original = newID()
                var id = original
                let stops = Double.random(in: 0..<1, using: &random) < 0.3
                while true {
                    let ends = begins.addingTimeInterval(30 * Self.day)
                    purchases.append(
                        Purchase(
                            transactionID: id, originalTransactionID: original, productID: "com.example.app.monthly",
                            buyer: user.id, purchasedAt: begins, expiresAt: ends))
                    if ends > start || (stops && Bool.random(using: &random)) { break }
                    begins = ends
                    id = newID()
                }
            }
        }
        // Refunds: some transactions, at a time between the purchase and the earlier of its end and the start.
        for index in purchases.indices where Double.random(in: 0..<1, using: &random) < 0.15 {
            let purchase = purchases[index]
            let latest = min(purchase.expiresAt ?? start, start).timeIntervalSince(purchase.purchasedAt)
            guard latest > 7_200 else { continue }
            let refunded = purchase.purchasedAt.addingTimeInterval(
                Double.random(in: 3_600...(latest - 3_600), using: &random).rounded(.down))
            purchases[index].refundedAt = refunded
            // Some refunds are reversed (Apple's REFUND_REVERSED), later, before the start.
            let room = start.timeIntervalSince(refunded)
            if room > 7_200, Double.random(in: 0..<1, using: &random) < 0.3 {
                purchases[index].reversedAt = refunded.addingTimeInterval(
                    Double.random(in: 3_600...(room - 600), using: &random).rounded(.down))
            }
        }
        // Google's renewals are drawn from a generator of their own too: a history without them is the one it was.
        var renewing = SplitMix64(seed: seed ^ 0x7265_6e65_7761_6c21)
        var revoking = SplitMix64(seed: seed ^ 0x7265_766f_6b65_2121)
        var cancelling = SplitMix64(seed: seed ^ 0x6361_6e63_656c_2121)
        let sales =
            sellsOnGoogle
            ? Self.googlePlay(
                users: users, seed: seed, start: start, random: &google, renewing: &renewing, revoking: &revoking,
                cancelling: &cancelling)
            : GooglePlaySales()
        self.purchases = purchases + sales.purchases
        self.googleTokens = sales.tokens
        self.googleAcknowledged = sales.acknowledged

        // The messages: each transaction presented at least once by its buyer's client, some twice, some without a
        // user; some notified (some twice); refunds notified mostly. Then all shuffled.
        var steps: [Step] = []
        for purchase in purchases {
            for _ in 0..<(Double.random(in: 0..<1, using: &random) < 0.25 ? 2 : 1) {
                let named = Double.random(in: 0..<1, using: &random) < 0.75
                let draw = Double.random(in: 0..<1, using: &random)
                let signed: Step.Signed =
                    draw < 0.6 ? .fresh : (draw < 0.8 && purchase.refundedAt != nil) ? .refunded : .late
                steps.append(.present(purchase.transactionID, user: named ? purchase.buyer : nil, signed: signed))
            }
            if Double.random(in: 0..<1, using: &random) < 0.6 {
                let uuid = UUID.random(using: &random).uuidString.lowercased()
                steps.append(.notifyPurchase(purchase.transactionID, uuid: uuid))
                if Double.random(in: 0..<1, using: &random) < 0.2 {
                    steps.append(.notifyPurchase(purchase.transactionID, uuid: uuid))
                }
            }
            if purchase.refundedAt != nil, Double.random(in: 0..<1, using: &random) < 0.8 {
                let uuid = UUID.random(using: &random).uuidString.lowercased()
                steps.append(.notifyRefund(purchase.transactionID, uuid: uuid))
                if Double.random(in: 0..<1, using: &random) < 0.2 {
                    steps.append(.notifyRefund(purchase.transactionID, uuid: uuid))
                }
            }
            if purchase.reversedAt != nil, Double.random(in: 0..<1, using: &random) < 0.8 {
                steps.append(
                    .notifyReversal(purchase.transactionID, uuid: UUID.random(using: &random).uuidString.lowercased()))
            }
        }
        steps.shuffle(using: &random)
        // Google's steps go in at places drawn from Google's generator; the App Store's keep their order.
        for step in sales.steps { steps.insert(step, at: Int.random(in: 0...steps.count, using: &google)) }
        // A quarter of the apps deliver in `confirm` mode: their backends confirm what they were offered, one to
        // three times, at places drawn from a generator of its own (a history in `once` mode is the one it was).
        var confirming = SplitMix64(seed: seed ^ 0x636f_6e66_6972_6d21)
        confirms = drawnConfirms ?? (Double.random(in: 0..<1, using: &confirming) < 0.25)
        if confirms {
            for _ in 0..<Int.random(in: 1...3, using: &confirming) {
                steps.insert(.confirmDeliveries, at: Int.random(in: 0...steps.count, using: &confirming))
            }
        }
        self.steps = steps
        // The server of each step, from a generator of its own: the histories of seeds found before two servers
        // played them are unchanged.
        var routing = SplitMix64(seed: seed ^ 0x7365_7276_6572_7321)
        servers = steps.map { _ in Int.random(in: 0...1, using: &routing) }
        // The stalls, from a generator of their own too: one presentation in five meets the stalling database first.
        var stalling = SplitMix64(seed: seed ^ 0x7374_616c_6c73_2121)
        stalls = steps.map { step in
            let stalls = Double.random(in: 0..<1, using: &stalling) < 0.2
            return step.isPresentation && stalls
        }
        // Google's renewals and revocations go in after the other steps have their servers and stalls, in their order
        // (a renewal does not go back, a revoked subscription renews no more), each with a server drawn from the
        // renewals' generator.
        var places = sales.changes.map { _ in Int.random(in: 0...self.steps.count, using: &renewing) }.sorted()
        for (offset, renewal) in sales.changes.enumerated() {
            places[offset] += offset
            self.steps.insert(renewal, at: places[offset])
            servers.insert(Int.random(in: 0...1, using: &renewing), at: places[offset])
            stalls.insert(false, at: places[offset])
        }
        // One history in fifty (`restarts`) restarts a server once or twice, anywhere (restarts are dear: 100
        // histories on PostgreSQL took 64 s with 31 restarts and 53 s without); the restarts go in last, with their
        // server, so that every other step keeps its server and its stall.
        var restarting = SplitMix64(seed: seed ^ 0x7265_7374_6172_7421)
        if Double.random(in: 0..<1, using: &restarting) < restarts {
            for _ in 0..<Int.random(in: 1...2, using: &restarting) {
                let index = Int.random(in: 0...self.steps.count, using: &restarting)
                self.steps.insert(.restart, at: index)
                servers.insert(Int.random(in: 0...1, using: &restarting), at: index)
                stalls.insert(false, at: index)
            }
        }
        // One history in ten (`switches`) has its app switched between `once` and `confirm` once or twice, anywhere
        // (the operator's update goes to the database, not to a server); last of all, from a generator of its own.
        var switching = SplitMix64(seed: seed ^ 0x7377_6974_6368_2121)
        if Double.random(in: 0..<1, using: &switching) < switches {
            for _ in 0..<Int.random(in: 1...2, using: &switching) {
                let index = Int.random(in: 0...self.steps.count, using: &switching)
                self.steps.insert(.switchDelivery, at: index)
                servers.insert(0, at: index)
                stalls.insert(false, at: index)
            }
        }
    }

    /// The Google Play part of a history.
    struct GooglePlaySales {
        var purchases: [Purchase] = []
        /// Each purchase's token, by order id.
        var tokens: [String: String] = [:]
        /// The tokens Google states acknowledged before the history.
        var acknowledged: Set<String> = []
        /// The messages, but the changes.
        var steps: [Step] = []
        /// Google's changes of its subscriptions (renewals, revocations), in their order.
        var changes: [Step] = []
    }

    /// The Google Play part of a history: each user's recent purchases (Google refunds a purchase not acknowledged
    /// within three days, so the ones a client presents are bought less than three days before the start): a
    /// consumable or two, the non-consumable, a monthly subscription in its first period; some refunded (voided) by
    /// Google before the start. A third of the subscriptions (drawn from `renewing`) began a month or two earlier and
    /// renew once or twice in the history: their token was acknowledged in their first month, and Google's API states
    /// the first period until a renewal step states the next. Then the messages: each purchase presented by its buyer's
    /// client once or twice, with or without the user; notified by Pub/Sub (some twice under one message id); voids
    /// notified mostly; most renewals pushed (`SUBSCRIPTION_RENEWED`). After their renewals, a quarter of the
    /// subscriptions (drawn from `cancelling`) are cancelled by the customer (`SUBSCRIPTION_CANCELED`), and a fifth
    /// (from `revoking`) revoked by Google (`SUBSCRIPTION_REVOKED`).
    static func googlePlay(
        users: [User], seed: UInt64, start: Date, random: inout SplitMix64, renewing: inout SplitMix64,
        revoking: inout SplitMix64, cancelling: inout SplitMix64
    ) -> GooglePlaySales {
        var sales = GooglePlaySales()
        var serial = 0
        func add(_ user: User, _ product: String, expires: Bool) {
            serial += 1
            let purchased = start.addingTimeInterval(
                -(Double.random(in: 0.01...2.5, using: &random) * day).rounded(.down))
            // Google's order id form (`GPA.dddd-dddd-dddd-ddddd`), unique to the seed.
            let digits = String(format: "%016llu", seed % 10_000_000_000_000_000)
            let order =
                "GPA.\(digits.dropFirst(4).prefix(4))-\(digits.dropFirst(8).prefix(4))-\(digits.dropFirst(12))-"
                + String(format: "%05d", serial)
            let renewals =
                expires && Double.random(in: 0..<1, using: &renewing) < 1 / 3
                ? Int.random(in: 1...2, using: &renewing) : 0
            // A renewed subscription's first period began `renewals` months before the current one.
            let began = purchased.addingTimeInterval(-Double(renewals) * 30 * day)
            var purchase = Purchase(
                store: .googlePlay, transactionID: order, originalTransactionID: order, productID: product,
                buyer: user.id, purchasedAt: began,
                expiresAt: expires ? began.addingTimeInterval(30 * day) : nil)
            let room = start.timeIntervalSince(purchased)
            if !expires, room > 7_200, Double.random(in: 0..<1, using: &random) < 0.2 {
                purchase.refundedAt = purchased.addingTimeInterval(
                    Double.random(in: 3_600...(room - 600), using: &random).rounded(.down))
            }
            sales.purchases.append(purchase)
            let token = "sim\(seed).\(serial).\(UInt32.random(in: 0...UInt32.max, using: &random))"
            sales.tokens[order] = token
            defer {
                if expires, Double.random(in: 0..<1, using: &cancelling) < 0.25 {
                    let message = String(UInt64.random(in: 1...UInt64(1e15), using: &cancelling))
                    sales.changes.append(.cancelGoogle(order, messageID: message))
                }
                if expires, Double.random(in: 0..<1, using: &revoking) < 0.2 {
                    let message = String(UInt64.random(in: 1...UInt64(1e15), using: &revoking))
                    sales.changes.append(.revokeGoogle(order, messageID: message))
                }
            }
            guard renewals > 0 else { return }
            sales.acknowledged.insert(token)
            // Google's renewal orders: the first order's id and `..0`, `..1`, …
            for renewal in 0..<renewals {
                let begins = began.addingTimeInterval(Double(renewal + 1) * 30 * day)
                let id = "\(order)..\(renewal)"
                sales.purchases.append(
                    Purchase(
                        store: .googlePlay, transactionID: id, originalTransactionID: order, productID: product,
                        buyer: user.id, purchasedAt: begins, expiresAt: begins.addingTimeInterval(30 * day)))
                sales.tokens[id] = token
                let pushed = Double.random(in: 0..<1, using: &renewing) < 0.8
                let message = String(UInt64.random(in: 1...UInt64(1e15), using: &renewing))
                sales.changes.append(.renewGoogle(id, messageID: pushed ? message : nil))
            }
        }
        for user in users {
            for _ in 0..<Int.random(in: 0...1, using: &random) { add(user, "com.example.app.coins", expires: false) }
            if Double.random(in: 0..<1, using: &random) < 0.3 { add(user, "com.example.app.lifetime", expires: false) }
            if Double.random(in: 0..<1, using: &random) < 0.4 { add(user, "com.example.app.monthly", expires: true) }
        }
        // The client and the purchase notification name the purchase token (by its first order here): what Google
        // states of it is what was renewed last.
        for purchase in sales.purchases where purchase.transactionID == purchase.originalTransactionID {
            for _ in 0..<(Double.random(in: 0..<1, using: &random) < 0.25 ? 2 : 1) {
                let named = Double.random(in: 0..<1, using: &random) < 0.75
                sales.steps.append(.presentGoogle(purchase.transactionID, user: named ? purchase.buyer : nil))
            }
            if Double.random(in: 0..<1, using: &random) < 0.6 {
                let message = String(UInt64.random(in: 1...UInt64(1e15), using: &random))
                sales.steps.append(.notifyGooglePurchase(purchase.transactionID, messageID: message))
                if Double.random(in: 0..<1, using: &random) < 0.2 {
                    sales.steps.append(.notifyGooglePurchase(purchase.transactionID, messageID: message))
                }
            }
            if purchase.refundedAt != nil, Double.random(in: 0..<1, using: &random) < 0.8 {
                let message = String(UInt64.random(in: 1...UInt64(1e15), using: &random))
                sales.steps.append(.notifyGoogleVoided(purchase.transactionID, messageID: message))
            }
        }
        return sales
    }
}

/// SplitMix64: a small, fast, seedable generator (the same sequence for a seed on every machine).
struct SplitMix64: RandomNumberGenerator, Sendable {
    private var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

extension UUID {
    /// A version-4 UUID drawn from `random`.
    static func random(using random: inout some RandomNumberGenerator) -> UUID {
        var bytes = (0..<16).map { _ in UInt8.random(in: 0...255, using: &random) }
        bytes[6] = (bytes[6] & 0x0F) | 0x40
        bytes[8] = (bytes[8] & 0x3F) | 0x80
        return UUID(
            uuid: (
                bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7], bytes[8], bytes[9],
                bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]
            ))
    }
}
