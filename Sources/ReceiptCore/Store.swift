/// The store a purchase was made in: a dimension of the ledger's key beside the environment.
///
/// A transaction id is unique across stores by its form: Apple's are decimal digits, Google Play's are order ids
/// (`GPA.`, digits and dashes) or, for a purchase without an order id, `GPT.` and a digest of its token.
/// A look-up or confirmation by transaction id alone therefore names one store's transaction.
public enum Store: String, Sendable, Hashable, CaseIterable, Codable {
    /// Apple's App Store (every receipt format and signed transaction).
    case appStore = "app_store"
    /// Google Play (the Google Play Developer API's purchases).
    case googlePlay = "google_play"

    /// Creates a store from its name (`app_store`, `google_play`), ignoring case.
    public init?(name: String) {
        guard let match = Self.allCases.first(where: { $0.rawValue == name.lowercased() }) else { return nil }
        self = match
    }
}
