/// Whether `/api` accepts a `transaction_id` or `app_transaction_id` alone, with no receipt, resolved through the
/// App Store Server API (`app add|update --id-lookups`).
///
/// An id alone does not prove that the caller owns the purchase: an app whose answers unlock content for whoever
/// asks should refuse such look-ups.
public enum IDLookups: String, Sendable, CaseIterable {
    /// An id alone is looked up when the request asks for it (`lookup=true`); apps made before look-ups were
    /// refused by default keep this.
    case allow
    /// Only a receipt is accepted; a request with an id alone is refused (the default of new apps).
    case refuse
}
