/// Whether `/api` answers are enriched with the App Store Server API (`app add|update --enrichment`): the transaction
/// history becomes `latest_receipt_info`, the subscription statuses `pending_renewal_info`.
///
/// It needs the app's App Store Server API credentials: ``TenancyService`` refuses `on` without them.
public enum Enrichment: String, Sendable, CaseIterable {
    /// Answers carry what the receipt itself says (the default).
    case off
    /// Answers also carry what the App Store Server API says about the receipt's purchases.
    case on
}
