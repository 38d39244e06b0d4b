import Foundation
import ReceiptCore
import Testing

@Suite struct ReceiptInputTests {
    /// A few bytes shaped like a PKCS#7 ContentInfo (a SEQUENCE), whose base64 has `+`, `/` and no padding.
    static let der: [UInt8] = [0x30, 0x82, 0x01, 0xFB, 0xEF, 0xBF, 0xFF, 0x3E, 0x00, 0x01, 0x02]
    static var clean: String { Data(der).base64EncodedString() }

    @Test func cleanBase64NeedsNoRepair() throws {
        let input = try ReceiptInput.decode(Self.clean)
        #expect(input.kind == .unifiedReceipt)
        #expect(input.bytes == Self.der)
        #expect(input.repairs.isEmpty)
    }

    @Test func whatClientsBreakIsRepairedAndReported() throws {
        #expect(Self.clean.contains("+") && Self.clean.contains("/") && Self.clean.hasSuffix("="))
        let cases: [(String, [ReceiptInput.Repair])] = [
            (Self.clean.replacingOccurrences(of: "+", with: " "), [.spacesToPlus]),
            ("  " + Self.clean.prefix(8) + "\r\n" + Self.clean.dropFirst(8) + "\n", [.removedLineBreaks]),
            (
                Self.clean.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_"),
                [.urlSafeAlphabet]
            ),
            (Self.clean.replacingOccurrences(of: "=", with: ""), [.addedPadding]),
            (Data(Self.clean.utf8).base64EncodedString(), [.doubleBase64]),
        ]
        for (text, repairs) in cases {
            let input = try ReceiptInput.decode(text)
            #expect(input.bytes == Self.der, "\(text)")
            #expect(input.repairs == repairs, "\(text)")
        }
    }

    @Test func aJWSIsRecognisedAsIs() throws {
        let jws = "eyJhbGciOiJFUzI1NiJ9.eyJhIjoxfQ.c2lnbmF0dXJl"
        #expect(try ReceiptInput.decode(jws) == ReceiptInput(kind: .jws, bytes: Array(jws.utf8), repairs: []))
        let doubled = try ReceiptInput.decode(Data(jws.utf8).base64EncodedString())
        #expect(doubled.kind == .jws && doubled.repairs == [.doubleBase64])
    }

    @Test func anIOS6ReceiptIsAPlist() throws {
        let input = try ReceiptInput.decode(Data("{\n\t\"signature\" = \"AA==\";\n}".utf8).base64EncodedString())
        #expect(input.kind == .transactionReceipt)
    }

    @Test(arguments: [
        ("", ReceiptError.Code.malformedBase64), ("   ", .malformedBase64), ("not base64!", .malformedBase64),
        ("QUJD=", .malformedBase64), ("A", .malformedBase64), ("aGVsbG8gd29ybGQ=", .unknownFormat),
    ])
    func unreadableInputIsRejectedPrecisely(text: String, code: ReceiptError.Code) {
        #expect(throws: ReceiptError(code)) { try ReceiptInput.decode(text) }
        #expect(ReceiptError(code).isMalformed)
    }

    /// The fast decoder agrees with Foundation on every length and tail (0, 1 or 2 padding characters), and a stray
    /// character anywhere, in a whole quantum or the last one, is refused.
    @Test func base64DecodingMatchesFoundationAndRefusesStrayCharacters() throws {
        var generator = SystemRandomNumberGenerator()
        for length in 1...300 {
            let bytes = [0x30] + (1..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let text = Data(bytes).base64EncodedString()
            let input = try ReceiptInput.decode(text)
            #expect(input.bytes == bytes && input.repairs.isEmpty, "length \(length)")
            for position in [0, text.count / 2, text.count - 1] where text.dropFirst(position).first != "=" {
                var broken = Array(text.utf8)
                broken[position] = UInt8(ascii: "!")
                #expect(throws: ReceiptError(.malformedBase64), "length \(length), position \(position)") {
                    try ReceiptInput.decode(String(decoding: broken, as: UTF8.self))
                }
            }
        }
    }

    @Test func oversizedInputIsRejectedBeforeDecoding() {
        let huge = String(repeating: "A", count: ReceiptInput.maximumTextLength + 4)
        #expect(throws: ReceiptError(.malformedBase64)) { try ReceiptInput.decode(huge) }
    }

    @Test func everyFixtureReceiptIsRecognised() throws {
        guard let directory = Fixtures.directory else { return }
        let receipts = directory.appendingPathComponent("receipts")
        for name in try FileManager.default.contentsOfDirectory(atPath: receipts.path) where name.hasSuffix(".b64") {
            let text = try String(contentsOf: receipts.appendingPathComponent(name), encoding: .utf8)
            let input = try ReceiptInput.decode(text)
            #expect(input.kind == (name.hasPrefix("ios6") ? .transactionReceipt : .unifiedReceipt), "\(name)")
        }
    }
}
