import Foundation
@testable import ReceiptCore
import Testing

/// Real Apple receipts decode to what Apple's `verifyReceipt` answers, field for field.
@Suite struct ReceiptPayloadFixtureTests {
    static let unified = [
        "revenuecat_sandbox_ios_2020", "tp_production_ios_g5_2024", "mbaasy_sandbox_ios_2015_08",
        "tp_sandbox_macos_pdfify_2020", "xcode_applelib_with_transaction_2023",
    ]

    @Test(arguments: unified)
    func payloadDecodesToTheExpectedJSON(name: String) throws {
        guard let directory = Fixtures.directory else { return }
        let receipts = directory.appendingPathComponent("receipts")
        let text = try String(contentsOf: receipts.appendingPathComponent("\(name).b64"), encoding: .utf8)
        let container = try SignedData(ber: try ReceiptInput.decode(text).bytes)
        let payload = try ReceiptPayload(der: container.content)
        let ours = try Fixtures.foundationJSON(JSONValue.object(payload.json).encoded)
        let expected = Fixtures.withoutPrivateKeys(
            try Fixtures.foundationJSON(Data(contentsOf: receipts.appendingPathComponent("\(name).expected.json"))))
        #expect(ours == expected)
        if !(ours == expected) {
            Fixtures.explainDifference(ours, expected, path: name)
        }

        let appleAnswer = receipts.appendingPathComponent("\(name).apple-response.json")
        if FileManager.default.fileExists(atPath: appleAnswer.path) {
            let apple = try Fixtures.foundationJSON(Data(contentsOf: appleAnswer)) as? [String: Any]
            var appleReceipt = try #require(apple?["receipt"] as? [String: Any])
            for key in ["request_date", "request_date_ms", "request_date_pst"] { appleReceipt[key] = nil }
            var mine = try #require(ours as? [String: Any])
            if name == "mbaasy_sandbox_ios_2015_08" {
                // Apple's 2015 answer predates `is_in_intro_offer_period`; compare without it.
                mine["in_app"] = (mine["in_app"] as? [[String: Any]])?.map {
                    $0.filter { $0.key != "is_in_intro_offer_period" }
                }
            }
            #expect(NSDictionary(dictionary: mine) == NSDictionary(dictionary: appleReceipt))
        }
    }
}
