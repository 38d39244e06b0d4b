import ReceiptCore
import Testing

@testable import ReceiptService

/// `VerificationOutcome.encodedAnswer` writes the answer's bytes directly (issue 38): they must be exactly the bytes
/// of the answer built as an object and encoded, for every combination of our fields and bodies that already hold
/// some of them (an assigned field takes the body's member's place, as `JSONObject`'s subscript does).
@Suite struct AnswerWritingTests {
    /// Bodies: empty, Apple's shape, one holding some of our keys (one twice), one needing escapes.
    static let bodies: [JSONObject] = {
        var apple = JSONObject()
        apple.append("status", .integer(0))
        apple.append("environment", .string("Production"))
        apple.append(
            "receipt",
            .object([
                "bundle_id": .string("com.example.app"),
                "in_app": .array([.object(["transaction_id": .string("1"), "quantity": .string("1")])]),
            ]))
        apple.append("latest_receipt_info", .array([.object(["transaction_id": .string("1")])]))
        var clashing = JSONObject()
        clashing.append("nonce", .string("the body's"))
        clashing.append("status", .integer(0))
        clashing.append("transactions", .array([]))
        clashing.append("request_id", .null)
        clashing.append("nonce", .string("a second"))
        var escaped = JSONObject()
        escaped.append("status", .integer(21_002))
        escaped.append("description", .string("a \"quoted\" \\ line\nand a tab\t, é, \u{1}"))
        escaped.append("retryable", .bool(true))
        escaped.append("ratio", .double(0.5))
        return [JSONObject(), apple, clashing, escaped]
    }()

    @Test(arguments: 0..<128)
    func theBytesAreTheAnswersEncoded(fields: Int) {
        for (index, body) in Self.bodies.enumerated() {
            for status in [0, 403] {
                var outcome = VerificationOutcome(status: status, body: body, source: .local)
                if fields & 1 != 0 { outcome.assurance = .signedReceipt }
                if fields & 2 != 0 { outcome.repairs = .array([.string("padding")]) }
                if fields & 4 != 0 {
                    outcome.transactions = [.object(["transaction_id": .string("1"), "state": .string("new")])]
                }
                if fields & 8 != 0 { outcome.subscriptions = [] }
                if fields & 16 != 0 { outcome.customer = ["app_user_id": .string("u\u{7f}\"1")] }
                if fields & 32 != 0 { outcome.nonce = "n-\(fields)" }
                if fields & 64 != 0 { outcome.requestID = "r-\(fields)" }
                let expected = JSONValue.object(outcome.answer).encoded
                #expect(
                    outcome.encodedAnswer == expected,
                    "body \(index), status \(status): \(String(decoding: outcome.encodedAnswer, as: UTF8.self))")
            }
        }
    }

    @Test func theBytesParseBackToTheAnswer() throws {
        var outcome = VerificationOutcome(status: 0, body: Self.bodies[1], source: .local)
        outcome.assurance = .signedReceipt
        outcome.nonce = "n"
        outcome.requestID = "r"
        let parsed = try JSONParser.parse(outcome.encodedAnswer)
        #expect(parsed == .object(outcome.answer))
        #expect(parsed["nonce"] == .string("n"))
        let last = Array(#","request_id":"r"}"#.utf8)
        #expect(Array(outcome.encodedAnswer.suffix(last.count)) == last)
    }
}
