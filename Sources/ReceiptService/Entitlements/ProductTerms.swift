import Foundation

/// What kind of purchase a product is, as the app's catalog (or a StoreKit 2 transaction's `type`) says.
public enum ProductKind: Sendable, Hashable {
    /// Bought, used up, bought again; never grants an entitlement.
    case consumable
    /// Bought once, kept for good (until refunded).
    case nonConsumable
    /// A subscription Apple renews until the customer cancels.
    case autoRenewable
    /// A subscription that lasts its duration from the purchase and is not renewed.
    case nonRenewing(CatalogDuration?)

    /// The catalog's name: `consumable`, `non_consumable`, `auto_renewable`, `non_renewing`.
    public var name: String {
        switch self {
        case .consumable: "consumable"
        case .nonConsumable: "non_consumable"
        case .autoRenewable: "auto_renewable"
        case .nonRenewing: "non_renewing"
        }
    }

    /// The kind a StoreKit 2 transaction's `type` states
    /// ([type](https://developer.apple.com/documentation/appstoreserverapi/type)); nil for another value.
    public init?(storeKitType: String) {
        switch storeKitType {
        case "Consumable": self = .consumable
        case "Non-Consumable": self = .nonConsumable
        case "Auto-Renewable Subscription": self = .autoRenewable
        case "Non-Renewing Subscription": self = .nonRenewing(nil)
        default: return nil
        }
    }

    /// Whether it is a subscription of either kind.
    public var isSubscription: Bool {
        switch self {
        case .autoRenewable, .nonRenewing: true
        case .consumable, .nonConsumable: false
        }
    }
}

/// One product of an app's catalog with its terms: its kind and the named entitlements it grants (docs/api.md,
/// "Customers and entitlements"). Written `ID=TYPE[:ENTITLEMENT,…]`, TYPE one of `consumable`, `non_consumable`,
/// `auto_renewable`, `non_renewing/DURATION`; a bare `ID` is in the catalog and grants nothing.
public struct CatalogProduct: Sendable, Hashable, CustomStringConvertible {
    /// The product id.
    public var id: String
    /// Its kind; nil when the catalog names the product only.
    public var kind: ProductKind?
    /// The entitlements it grants, each once, in the order given.
    public var entitlements: [String]

    /// Creates a product.
    public init(id: String, kind: ProductKind? = nil, entitlements: [String] = []) {
        self.id = id
        self.kind = kind
        self.entitlements = entitlements
    }

    /// The written form, as it was parsed.
    public var description: String {
        guard let kind else { return id }
        var text = id + "=" + kind.name
        if case .nonRenewing(let duration?) = kind { text += "/" + duration.description }
        if !entitlements.isEmpty { text += ":" + entitlements.joined(separator: ",") }
        return text
    }

    /// Parses the written form; throws a message naming what is wrong.
    public init(parsing text: String) throws {
        let parts = text.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
        let id = String(parts[0])
        guard Self.isProductID(id) else {
            throw CatalogError(
                "malformed product id '\(Self.printable(id))': expected letters, digits, '.', '_', '-'")
        }
        guard parts.count == 2 else {
            self.init(id: id)
            return
        }
        let terms = parts[1].split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
        let kindText = terms[0].lowercased()
        let kind: ProductKind
        switch kindText {
        case "consumable": kind = .consumable
        case "non_consumable": kind = .nonConsumable
        case "auto_renewable": kind = .autoRenewable
        default:
            guard kindText.hasPrefix("non_renewing") else {
                throw CatalogError(
                    "product '\(id)': unknown type '\(Self.printable(String(terms[0])))': expected consumable, "
                        + "non_consumable, auto_renewable or non_renewing/DURATION")
            }
            let rest = kindText.dropFirst("non_renewing".count)
            guard rest.first == "/", let duration = CatalogDuration(String(rest.dropFirst())) else {
                throw CatalogError(
                    "product '\(id)': a non-renewing subscription needs its duration, ISO 8601 (non_renewing/P30D)")
            }
            kind = .nonRenewing(duration)
        }
        var entitlements: [String] = []
        if terms.count == 2 {
            for name in terms[1].split(separator: ",", omittingEmptySubsequences: false).map(String.init) {
                guard Self.isEntitlementName(name) else {
                    throw CatalogError(
                        "product '\(id)': malformed entitlement '\(Self.printable(name))': expected 1-64 lower-case "
                            + "letters, digits, '.', '_', '-'")
                }
                guard !entitlements.contains(name) else {
                    throw CatalogError("product '\(id)': entitlement '\(name)' is given twice")
                }
                entitlements.append(name)
            }
            guard entitlements.count <= Self.maximumEntitlements else {
                throw CatalogError("product '\(id)': more than \(Self.maximumEntitlements) entitlements")
            }
        }
        if kind == .consumable, !entitlements.isEmpty {
            throw CatalogError("product '\(id)': a consumable never grants an entitlement")
        }
        self.init(id: id, kind: kind, entitlements: entitlements)
    }

    /// The most entitlements one product grants.
    public static let maximumEntitlements = 32

    /// Apple's product ids: 1-255 letters, digits, `.`, `_` and `-`.
    public static func isProductID(_ text: String) -> Bool {
        (1...255).contains(text.utf8.count) && text.utf8.allSatisfy(isIDByte)
    }

    /// An entitlement's name: 1-64 lower-case letters, digits, `.`, `_` and `-`.
    public static func isEntitlementName(_ text: String) -> Bool {
        (1...64).contains(text.utf8.count)
            && text.utf8.allSatisfy { isIDByte($0) && !(UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0) }
    }

    private static func isIDByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "-"):
            true
        default: false
        }
    }

    private static func printable(_ text: String) -> String {
        String(
            text.unicodeScalars.prefix(80).map {
                $0.isASCII && $0.value >= 0x20 && $0.value < 0x7F ? Character($0) : "?"
            })
    }
}

/// A catalog entry that cannot be read.
public struct CatalogError: Error, Sendable, Equatable {
    /// What is wrong, naming the product.
    public let reason: String

    init(_ reason: String) { self.reason = reason }
}
