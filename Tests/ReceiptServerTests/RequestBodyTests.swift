import ReceiptService
import Testing

@testable import ReceiptServer

/// Reading `/api` bodies: both encodings, Apple's spellings, and every way a body can be unreadable.
@Suite struct RequestBodyTests {
    @Test func formAndJSONReadTheSameFields() throws {
        let form = try RequestBody.decode(
            Array("apikey=k&token=t&receipt=MI+ab%2Fc%3D&exclude_old_transactions=1&transaction_id=42&nonce=n%C3%A9".utf8),
            as: .form)
        #expect(form.apiKey == "k")
        #expect(form.receipt == "MI ab/c=")  // `+` is a space in form encoding; the receipt decoder repairs it
        #expect(form.excludeOldTransactions)
        #expect(form.transactionID == "42")
        #expect(form.nonce == "né")

        let json = try RequestBody.decode(
            Array(#"{"apikey":"k","token":"t","receipt-data":"MI","exclude-old-transactions":true,"transaction_id":42,"extra":{}}"#.utf8),
            as: .json)
        #expect(json.apiKey == "k")
        #expect(json.receipt == "MI")
        #expect(json.excludeOldTransactions)
        #expect(json.transactionID == "42")
    }

    @Test(arguments: [
        ("{", RequestBody.Format.json), ("[]", .json), (#"{"token":1.5}"#, .json), (#"{"token":"a","token":"b"}"#, .json),
        (#"{"exclude_old_transactions":"maybe"}"#, .json), ("token=%4", .form), ("token=%ZZ", .form),
        ("token=a&token=b", .form), ("nonce=" + String(repeating: "x", count: 300), .form), ("token=%FF", .form),
    ])
    func unreadableBodiesAreRefused(body: String, format: RequestBody.Format) {
        #expect(throws: RequestBody.Unreadable.self) { try RequestBody.decode(Array(body.utf8), as: format) }
    }

    @Test func mediaTypesAreMatchedWithoutParameters() {
        #expect(RequestBody.format(contentType: "application/json; charset=utf-8") == .json)
        #expect(RequestBody.format(contentType: "Application/X-WWW-Form-Urlencoded") == .form)
        #expect(RequestBody.format(contentType: "text/plain") == nil)
        #expect(RequestBody.format(contentType: nil) == nil)
    }
}
