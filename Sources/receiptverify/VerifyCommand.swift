import ArgumentParser
import Foundation
import ReceiptCore
import ReceiptService

/// `receiptverify verify`: checks one receipt or JWS offline and prints the answer `/api` would give.
struct VerifyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Verify one receipt or StoreKit 2 JWS offline and print the answer /api would give (exit 0 if valid)."
    )

    @OptionGroup var trust: TrustOptions

    @Flag(help: "Accept data signed by a non-Apple root in the anchor directory (Xcode StoreKit testing).")
    var allowTestData = false

    @Argument(help: "A file holding the base64 receipt or JWS as a device sends it, or - for standard input.")
    var file: String

    func run() async throws {
        let text = try await reportingErrors {
            let anchors = try trust.anchors()
            let data: Data?
            if file == "-" {
                data = FileHandle.standardInput.readDataToEndOfFile()
            } else {
                data = FileManager.default.contents(atPath: file)
            }
            guard let data else { throw CommandFailure("cannot read \(file)") }
            guard data.count <= ReceiptInput.maximumTextLength else {
                throw CommandFailure("\(file) is larger than \(ReceiptInput.maximumTextLength) bytes")
            }
            return (anchors, String(decoding: data, as: UTF8.self))
        }
        let verifier = ReceiptVerifier(anchors: text.0)
        var response: JSONObject
        var valid = false
        do {
            let input = try ReceiptInput.decode(text.1)
            response = try verifier.verify(input, allowTestData: allowTestData).response
            if let repairs = input.repairsValue { response.append("repairs", repairs) }
            valid = true
        } catch let error as ReceiptError {
            response = error.response
            FileHandle.standardError.write(Data("error: \(error.description)\n".utf8))
        }
        print(JSONValue.object(response).encodedString)
        if !valid { throw ExitCode(1) }
    }
}
