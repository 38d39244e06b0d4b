import Foundation
import ReceiptCore
import ReceiptService

/// How values the database cannot type natively are written and read back, the same in both stores.
enum StoredForm {
    /// Allowed environments as a sorted comma-separated list: `production,sandbox`.
    static func environments(_ environments: Set<StoreEnvironment>) -> String {
        environments.map(\.configurationName).sorted().joined(separator: ",")
    }

    static func environments(_ text: String) throws -> Set<StoreEnvironment> {
        Set(
            try text.split(separator: ",").map { name in
                guard let environment = StoreEnvironment(configurationName: String(name)) else {
                    throw corrupt("unknown environment '\(name)'")
                }
                return environment
            })
    }

    static func bundleID(_ text: String) throws -> BundleID {
        guard let id = BundleID(text) else { throw corrupt("stored bundle ID is malformed") }
        return id
    }

    /// The app's bundle IDs as one query aggregates them: in position order, separated by commas (a bundle ID holds
    /// letters, digits, `-` and `.` only); nil or empty for none.
    static func bundleIDs(_ text: String?) throws -> [BundleID] {
        guard let text, !text.isEmpty else { return [] }
        return try text.split(separator: ",").map { try bundleID(String($0)) }
    }

    /// A list of words without commas as stored: separated by commas (a product id holds letters, digits, `.`, `_`
    /// and `-` only, a test anchor's fingerprint hex digits); an empty list is the empty string.
    static func commaSeparated(_ words: [String]) -> String { words.joined(separator: ",") }

    /// The `product_terms` column: the written form of each catalog product that has terms, space-separated.
    static func productTerms(_ catalog: [CatalogProduct]?) -> String {
        (catalog ?? []).filter { $0.kind != nil }.map(\.description).joined(separator: " ")
    }

    /// An app's catalog from its `product_catalog` ids and `product_terms`.
    static func catalog(ids: String?, terms: String) throws -> [CatalogProduct]? {
        guard let ids else { return nil }
        var termsByID: [String: CatalogProduct] = [:]
        for written in terms.split(separator: " ") {
            do {
                let product = try CatalogProduct(parsing: String(written))
                termsByID[product.id] = product
            } catch let error as CatalogError {
                throw corrupt("product terms: \(error.reason)")
            }
        }
        return commaSeparated(ids).map { termsByID[$0] ?? CatalogProduct(id: $0) }
    }

    static func commaSeparated(_ text: String) -> [String] {
        text.split(separator: ",").map(String.init)
    }

    static func enumValue<T: RawRepresentable<String>>(_ text: String) throws -> T {
        guard let value = T(rawValue: text) else { throw corrupt("unknown \(T.self) '\(text)'") }
        return value
    }

    static func day(_ text: String) throws -> UsageDay {
        guard let day = UsageDay(text) else { throw corrupt("stored day '\(text)' is not YYYY-MM-DD") }
        return day
    }

    static func millis(_ date: Date) -> Int { Int(date.millisecondsSince1970) }
    static func date(millis: Int) -> Date { Date(millisecondsSince1970: Int64(millis)) }

    static func corrupt(_ reason: String) -> ServiceError {
        ServiceError(.storage, "unreadable stored data: \(reason)")
    }
}
