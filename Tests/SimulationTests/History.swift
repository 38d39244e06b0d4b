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

        /// When a presented JWS was signed.
        enum Signed: String, Sendable, Equatable {
            /// A minute after the purchase.
            case fresh
            /// A minute after the refund (a device that kept the item since; before a reversal, if one came).
            case refunded
            /// A minute before the history's start (a restore, a late client).
            case late
        }

        /// The transaction the step is about.
        var transactionID: String {
            switch self {
            case .present(let id, _, _), .notifyPurchase(let id, _), .notifyRefund(let id, _),
                .notifyReversal(let id, _):
                id
            }
        }

        /// The user a request names, if any.
        var user: String? {
            if case .present(_, let user, _) = self { user } else { nil }
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
            }
        }
    }

    /// A user of the app: the backend's id, and the `appAccountToken` the app sets on purchases (a UUID, which is not
    /// the backend's id), if it sets one.
    struct User: Sendable {
        let id: String
        let appAccountToken: String?
    }

    static let bundleID = "com.example.app"
    static let catalog = [
        Product(id: "com.example.app.coins", kind: .consumable, entitlements: []),
        Product(id: "com.example.app.lifetime", kind: .nonConsumable, entitlements: ["lifetime"]),
        Product(id: "com.example.app.monthly", kind: .autoRenewable(days: 30), entitlements: ["pro"]),
    ]
    static let day: TimeInterval = 86_400

    let seed: UInt64
    /// The time the history is told around: purchases and refunds are before it, subscription periods may end after.
    let start: Date
    let users: [User]
    let purchases: [Purchase]
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
        var lines = ["seed \(seed): \(users.count) users, \(purchases.count) transactions, \(steps.count) steps"]
        for purchase in purchases {
            let refund =
                (purchase.refundedAt.map { " refunded \(Self.offset($0, from: start))" } ?? "")
                + (purchase.reversedAt.map { " reversed \(Self.offset($0, from: start))" } ?? "")
            lines.append(
                "  \(purchase.transactionID) (\(purchase.originalTransactionID)) \(purchase.productID) "
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
        var model = MoneyModel(products: Self.catalog)
        for purchase in purchases { model.add(purchase) }
        return model
    }

    func user(_ id: String) -> User? { users.first { $0.id == id } }

    /// Generates the history of `seed`, told around `start`.
    init(seed: UInt64, start: Date) {
        self.seed = seed
        // Whole seconds: the stores' dates are milliseconds, and a boundary is never within hours of `start`.
        self.start = Date(timeIntervalSince1970: start.timeIntervalSince1970.rounded(.down))
        var random = SplitMix64(seed: seed)
        let start = self.start
        users = (1...Int.random(in: 1...2, using: &random)).map { index in
            User(
                id: "user-\(index)",
                appAccountToken: Bool.random(using: &random) ? UUID.random(using: &random).uuidString.lowercased() : nil
            )
        }
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
        self.purchases = purchases

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
        self.steps = steps
        // The server of each step, from a generator of its own: the histories of seeds found before two servers
        // played them are unchanged.
        var routing = SplitMix64(seed: seed ^ 0x7365_7276_6572_7321)
        servers = steps.map { _ in Int.random(in: 0...1, using: &routing) }
        // The stalls, from a generator of their own too: one presentation in five meets the stalling database first.
        var stalling = SplitMix64(seed: seed ^ 0x7374_616c_6c73_2121)
        stalls = steps.map { step in
            let stalls = Double.random(in: 0..<1, using: &stalling) < 0.2
            if case .present = step { return stalls }
            return false
        }
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
