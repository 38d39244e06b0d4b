import ReceiptService
import Testing

@testable import ReceiptServer

/// Reading `/api` bodies: both encodings, Apple's spellings, and every way a body can be unreadable.
@Suite struct RequestBodyTests {
    @Test func formAndJSONReadTheSameFields() throws {
        let form = try RequestBody.decode(
            Array(
                "apikey=k&token=t&receipt=MI+ab%2Fc%3D&exclude_old_transactions=1&transaction_id=42&nonce=n%C3%A9".utf8),
            as: .form)
        #expect(form.apiKey == "k")
        #expect(form.receipt == "MI ab/c=")  // `+` is a space in form encoding; the receipt decoder repairs it
        let encodedPlus = try RequestBody.decode(Array("token=t&receipt=a%2Bb+c%2B%2B+".utf8), as: .form)
        #expect(encodedPlus.receipt == "a+b c++ ")
        #expect(form.excludeOldTransactions)
        #expect(form.transactionID == "42")
        #expect(form.nonce == "né")

        let json = try RequestBody.decode(
            Array(
                #"{"apikey":"k","token":"t","receipt-data":"MI","exclude-old-transactions":true,"transaction_id":42,"extra":{}}"#
                    .utf8),
            as: .json)
        #expect(json.apiKey == "k")
        #expect(json.receipt == "MI")
        #expect(json.excludeOldTransactions)
        #expect(json.transactionID == "42")

        // JSON does not tell 42 from 42.0: an encoder that writes whole numbers with a fraction is read the same.
        let doubles = try RequestBody.decode(
            Array(#"{"token":"t","nonce":12345.0,"transaction_id":4.2e1,"exclude_old_transactions":1.0}"#.utf8),
            as: .json)
        #expect(doubles.nonce == "12345" && doubles.transactionID == "42" && doubles.excludeOldTransactions)
    }

    @Test(arguments: [
        ("{", RequestBody.Format.json), ("[]", .json), (#"{"token":1.5}"#, .json),
        (#"{"token":"a","token":"b"}"#, .json),
        (#"{"exclude_old_transactions":"maybe"}"#, .json), ("token=%4", .form), ("token=%ZZ", .form),
        ("token=a&token=b", .form), ("nonce=" + String(repeating: "x", count: 300), .form), ("token=%FF", .form),
        // An integer beyond 2^53 is not one every JSON parser reads exactly (the documented bound).
        (#"{"app_user_id":-9007199254740992}"#, .json), (#"{"transaction_id":9007199254740993}"#, .json),
    ])
    func unreadableBodiesAreRefused(body: String, format: RequestBody.Format) {
        #expect(throws: RequestBody.Unreadable.self) { try RequestBody.decode(Array(body.utf8), as: format) }
    }

    @Test func mediaTypesAreMatchedWithoutParametersButOnlyInUTF8() {
        #expect(RequestBody.format(contentType: "application/json; charset=utf-8") == .json)
        #expect(RequestBody.format(contentType: "application/json;charset=\"UTF-8\"") == .json)
        #expect(RequestBody.format(contentType: "Application/X-WWW-Form-Urlencoded") == .form)
        #expect(RequestBody.format(contentType: "application/x-www-form-urlencoded; charset=us-ascii") == .form)
        #expect(RequestBody.format(contentType: "application/json; charset=utf-16") == nil)
        #expect(RequestBody.format(contentType: "application/json; charset=iso-8859-1") == nil)
        #expect(RequestBody.format(contentType: "text/plain") == nil)
        #expect(RequestBody.format(contentType: nil) == nil)
    }

    /// Bodies of the largest size the server accepts, built to be expensive: refused for their shape (too many
    /// fields, too deep), or read once, linearly, when within bounds.
    @Test func hostileBodiesAreBoundedByShape() throws {
        let manyKeys = "{" + (0..<150_000).map { "\"k\($0)\":1" }.joined(separator: ",") + "}"
        #expect(manyKeys.utf8.count > 1_500_000)
        #expect(throws: RequestBody.Unreadable.self) { try RequestBody.decode(Array(manyKeys.utf8), as: .json) }
        let manyFields = (0..<150_000).map { "k\($0)=1" }.joined(separator: "&")
        #expect(throws: RequestBody.Unreadable.self) { try RequestBody.decode(Array(manyFields.utf8), as: .form) }
        let deep = String(repeating: #"{"a":"#, count: 20) + "1" + String(repeating: "}", count: 20)
        #expect(throws: RequestBody.Unreadable.self) { try RequestBody.decode(Array(deep.utf8), as: .json) }
        let longNumber = #"{"token":1"# + String(repeating: "0", count: 100_000) + "}"
        #expect(throws: RequestBody.Unreadable.self) { try RequestBody.decode(Array(longNumber.utf8), as: .json) }

        // Sixty-four fields, unknown ones nesting a little, are fine.
        let fields = (0..<60).map { #""x\#($0)":{"y":[1,2,{"z":null}]}"# }.joined(separator: ",")
        let allowed = try RequestBody.decode(Array(#"{"token":"t",\#(fields)}"#.utf8), as: .json)
        #expect(allowed.token == "t")
    }
}
