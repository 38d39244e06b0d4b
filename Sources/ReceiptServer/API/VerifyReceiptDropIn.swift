import Foundation
import ReceiptCore
import ReceiptService

/// `POST /verifyReceipt/{app token}`: Apple's `verifyReceipt` request and answer, so that an existing backend or
/// library moves here by changing one URL (docs/verifyreceipt-drop-in.md).
///
/// The request is Apple's JSON (`receipt-data`, `password`, `exclude-old-transactions`) with the API key as
/// `Authorization: Bearer KEY`, or as the user of HTTP Basic (`https://KEY:@host/verifyReceipt/TOKEN`, for libraries
/// that cannot set a header; without the colon Python's `requests` sends no credentials). The receipt is verified as `/api` verifies it (locally, enriched when the app says
/// so), and the answer is Apple's shape alone: `status`, `environment`, `receipt`, `latest_receipt_info`,
/// `latest_receipt`, `pending_renewal_info`, `is-retryable`, with HTTP 200 for every verdict, as Apple answered.
/// The drop-in is stateless, as Apple's endpoint was: it records no delivery in the ledger.
enum VerifyReceiptDropIn {
    /// Our members of an answer's body, which Apple's shape does not have.
    static let ourMembers: Set<String> = [
        "description", "retryable", "retry_after", "enrichment", "kind", "subscriptions",
    ]

    /// Apple's status for one of ours, and whether it is a verdict (HTTP 200) or a failure of the exchange itself
    /// (the key, the plan, our capacity), which keeps its HTTP status and our JSON.
    static func appleStatus(of outcome: VerificationOutcome) -> Int? {
        switch outcome.status {
        case 0, 21_000...21_199:
            return outcome.status
        case ResponseStatus.badRequest:
            // The body is not Apple's JSON: "the data in the receipt-data property was malformed".
            return VerificationStatus.malformed.rawValue
        case ResponseStatus.rejected:
            // An environment the app does not take is Apple's "sent to the wrong environment"; another app's or
            // product's receipt is one Apple "could not authorize": treat it as if no purchase was made.
            switch outcome.disallowedEnvironment {
            case .sandbox?, .xcode?: return 21_007
            case .production?: return 21_008
            case nil: return 21_010
            }
        case ResponseStatus.internalError:
            // Apple or we failed: "the receipt server was temporarily unable to provide the receipt".
            return 21_005
        case let status where outcome.source == .apple && !(400...599).contains(status):
            // A status Apple does not document: Apple failed, as far as a client can tell.
            return 21_005
        default:
            return nil
        }
    }

    /// A unified receipt's fields with `request_date` (the time of this request, in Apple's three forms) after
    /// `receipt_creation_date`, where Apple's answers had it.
    static func withRequestDate(_ receipt: JSONObject, now: Date) -> JSONObject {
        guard receipt["receipt_creation_date_pst"] != nil, receipt["request_date"] == nil else { return receipt }
        var dated = JSONObject(capacity: receipt.members.count + 3)
        for member in receipt.members {
            dated.append(member.key, member.value)
            if member.key == "receipt_creation_date_pst" {
                AppleDate.append(
                    AppleDate.Field("request_date"),
                    milliseconds: Int64((now.timeIntervalSince1970 * 1_000).rounded(.down)), to: &dated)
            }
        }
        return dated
    }

    /// Apple's answer for `outcome`, or nil when the exchange itself failed (answered in our shape).
    static func answer(_ outcome: VerificationOutcome, receiptText: String?, now: Date = Date()) -> JSONObject? {
        // `latest_receipt` is the receipt sent as standard base64 (as it was decoded: repaired, never echoed raw).
        let sent = receiptText.flatMap { try? ReceiptInput.decode($0) }.flatMap {
            $0.kind == .jws ? nil : Data($0.bytes).base64EncodedString()
        }
        guard let status = appleStatus(of: outcome) else { return nil }
        var answer = JSONObject(capacity: 8)
        answer.append("status", .integer(Int64(status)))
        if status == 0 {
            for member in outcome.body.members where member.key != "status" && !ourMembers.contains(member.key) {
                if member.key == "receipt", case .object(let receipt) = member.value {
                    answer.append("receipt", .object(withRequestDate(receipt, now: now)))
                } else {
                    answer.append(member.key, member.value)
                }
                // Apple gave the newest receipt beside the subscriptions; ours is the one sent, as Apple's was
                // before a renewal.
                if member.key == "latest_receipt_info", outcome.body["latest_receipt"] == nil, let sent {
                    answer.append("latest_receipt", .string(sent))
                }
            }
        } else if outcome.source == .apple, outcome.status == status {
            // Apple's own refusal passes through as Apple gave it.
            for member in outcome.body.members where member.key != "status" && !ourMembers.contains(member.key) {
                answer.append(member.key, member.value)
            }
        }
        if status == 21_005 || outcome.body["retryable"] == .bool(true), answer["is-retryable"] == nil,
            status != 0
        {
            answer.append("is-retryable", .bool(true))
        }
        return answer
    }
}
