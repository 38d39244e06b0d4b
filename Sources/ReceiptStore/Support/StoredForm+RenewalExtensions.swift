import Foundation
import ReceiptCore
import ReceiptService

extension StoredForm {
    /// A renewal-date extension from `renewal_extensions`' columns.
    static func renewalExtension(_ row: some StoredRow) throws -> RenewalExtensionRecord {
        let reasonCode = try row.int("reason")
        guard let reason = RenewalExtension.Reason(rawValue: reasonCode) else {
            throw corrupt("unknown extension reason \(reasonCode)")
        }
        let storefronts = try row.text("storefronts")
        return RenewalExtensionRecord(
            appID: try row.uuid("app_id"), requestIdentifier: try row.text("request_identifier"),
            environment: try enumValue(try row.text("environment")),
            originalTransactionID: try row.optionalText("original_transaction_id"),
            productID: try row.optionalText("product_id"),
            storefronts: storefronts.isEmpty ? [] : storefronts.split(separator: ",").map(String.init),
            days: try row.int("days"), reason: reason, state: try enumValue(try row.text("state")),
            effectiveDate: try row.optionalInt("effective_date").map(Int64.init),
            succeeded: try row.optionalInt("succeeded_count"), failed: try row.optionalInt("failed_count"),
            completeDate: try row.optionalInt("complete_date").map(Int64.init), error: try row.optionalText("error"),
            actor: try row.text("actor"), createdAt: try row.date("created_at"), updatedAt: try row.date("updated_at"),
            nextPollAt: try row.optionalDate("next_poll_at"),
            expiresBefore: try row.optionalInt("expires_before").map(Int64.init))
    }
}
