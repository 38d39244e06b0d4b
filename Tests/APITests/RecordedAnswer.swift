import Foundation
import ReceiptCore

/// Apple's recorded `verifyReceipt` answer to the RevenueCat sandbox receipt of the fixtures, which local verification
/// must reproduce.
enum RecordedAnswer {
    /// The answer, as Apple sent it.
    static func revenueCat(_ fixtures: URL) throws -> JSONObject {
        let url = fixtures.appendingPathComponent("apple-responses/revenuecat_status0_unified_sandbox_2020.json")
        guard case .object(let answer) = try JSONParser.parse(Array(try Data(contentsOf: url))) else {
            throw SetupError("the recorded answer is not an object")
        }
        return answer
    }

    /// Its `latest_receipt_info` without `subscription_group_identifier`, which Apple alone knows (a receipt does not
    /// carry it): what local verification answers.
    static func latestReceiptInfoWithoutGroups(_ answer: JSONObject) -> [JSONValue]? {
        answer["latest_receipt_info"]?.arrayValue?.map { value -> JSONValue in
            guard case .object(var object) = value else { return value }
            object["subscription_group_identifier"] = nil
            return .object(object)
        }
    }
}
