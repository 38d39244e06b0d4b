@testable import ReceiptCore
import Testing

@Suite struct JSONTests {
    @Test func parsingKeepsOrderTypesAndEscapes() throws {
        let text = #"{"b":1,"a":[true,false,null],"c":"x\"y\\z\u00e9\ud83d\ude00","d":-1.5e2,"e":{}}"#
        guard case .object(let object) = try JSONParser.parse(Array(text.utf8)) else {
            Issue.record("not an object")
            return
        }
        #expect(object.keys == ["b", "a", "c", "d", "e"])
        #expect(object["b"] == .integer(1))
        #expect(object["a"] == .array([.bool(true), .bool(false), .null]))
        #expect(object["c"] == .string("x\"y\\zé😀"))
        #expect(object["d"] == .double(-150))
        #expect(object["e"] == .object(JSONObject()))
    }

    /// The eight-bytes-at-a-time escape check finds a quote, a backslash or a control character at every position
    /// and length, beside multi-byte UTF-8, and the text round-trips.
    @Test func everyCharacterNeedingAnEscapeIsFoundAnywhere() throws {
        for length in 1...40 {
            for position in 0..<length {
                for special in ["\"", "\\", "\u{01}", "\n", "\u{1F}"] {
                    var characters: [Character] = Array(
                        (Array(repeating: "é", count: length / 3) + Array(repeating: "a", count: length)).prefix(length)
                    )
                    characters[position] = Character(special)
                    let text = String(characters)
                    let encoded = JSONValue.string(text).encoded
                    #expect(String(decoding: encoded, as: UTF8.self) != "\"\(text)\"", "\(length) \(position)")
                    #expect(try JSONParser.parse(encoded) == .string(text), "\(length) \(position)")
                }
            }
            let plain = String(repeating: "é~ ", count: length)
            #expect(String(decoding: JSONValue.string(plain).encoded, as: UTF8.self) == "\"\(plain)\"")
        }
    }

    @Test func encodingRoundTrips() throws {
        let value: JSONValue = .object([
            "status": .integer(0), "text": .string("line\nbreak \"quoted\" /slash\u{01}"),
            "list": .array([.bool(true), .null, .double(2.5)]),
        ])
        #expect(try JSONParser.parse(value.encoded) == value)
        #expect(JSONValue.string("a/b").encodedString == #""a/b""#)
    }

    @Test(arguments: [
        "", "{", "{\"a\":1,}", "[1,]", "{\"a\":1,\"a\":2}", "01", "1.", "\"\\x\"", "\"\u{01}\"", "nul", "[1] x",
        "\"\\ud800\"", String(repeating: "[", count: 100) + String(repeating: "]", count: 100),
    ])
    func malformedJSONIsRejected(text: String) {
        #expect(throws: JSONParser.Failure.self) { try JSONParser.parse(Array(text.utf8)) }
    }

    @Test func textPlistsReadOnlyApplesShape() {
        let members = TextPlist.dictionary(Array("{\n\t\"a-b\" = \"1\";\n\t\"c\" = \"x\\\"y\";\n}".utf8))
        #expect(members?.map(\.key) == ["a-b", "c"])
        #expect(members?.map(\.value) == ["1", "x\"y"])
        #expect(TextPlist.dictionary(Array("{ \"a\" = \"1\" }".utf8)) == nil)
        #expect(TextPlist.dictionary(Array("{ \"a\" = \"1\"; } trailing".utf8)) == nil)
    }

    @Test func theFuzzingSeamSurvivesHostileBytes() {
        var generator = SplitMix(seed: 7)
        for length in [0, 1, 2, 16, 300, 5_000] {
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            _ = ParserFuzzing.exercise(bytes)
        }
        // Deep BER nesting and an absurd length must be refused, not crash.
        _ = ParserFuzzing.exercise(Array(repeating: 0x30, count: 10_000) + [0x80])
        _ = ParserFuzzing.exercise([0x30, 0x84, 0x7F, 0xFF, 0xFF, 0xFF, 0x00])
    }
}

/// The parser's cost stays linear in its input: duplicate keys are found through a set in large objects.
@Suite struct JSONParserBoundsTests {
    @Test func aDuplicateKeyIsFoundInALargeObject() throws {
        var members = (0..<50_000).map { "\"k\($0)\":\($0)" }
        let unique = "{" + members.joined(separator: ",") + "}"
        guard case .object(let object) = try JSONParser.parse(Array(unique.utf8)) else {
            Issue.record("not an object")
            return
        }
        #expect(object.members.count == 50_000)
        #expect(object["k49999"] == .integer(49_999))
        members.append("\"k123\":0")
        #expect(throws: JSONParser.Failure.self) {
            try JSONParser.parse(Array(("{" + members.joined(separator: ",") + "}").utf8))
        }
        // Small objects too (searched, not hashed).
        #expect(throws: JSONParser.Failure.self) { try JSONParser.parse(Array(#"{"a":1,"b":2,"a":3}"#.utf8)) }
    }

    @Test func membersDepthAndNumbersAreBounded() throws {
        #expect(throws: JSONParser.Failure.self) {
            try JSONParser.parse(Array(#"{"a":1,"b":2,"c":3}"#.utf8), maximumMembers: 2)
        }
        // Depth counts every level, the innermost value included.
        #expect(throws: JSONParser.Failure.self) { try JSONParser.parse(Array("[[[1]]]".utf8), maximumDepth: 3) }
        #expect(try JSONParser.parse(Array("[[1]]".utf8), maximumDepth: 3) == .array([.array([.integer(1)])]))
        let long = String(repeating: "9", count: JSONParser.maximumNumberLength + 1)
        #expect(throws: JSONParser.Failure.self) { try JSONParser.parse(Array(long.utf8)) }
        #expect(try JSONParser.parse(Array("1697679936049.7297".utf8)) == .double(1_697_679_936_049.7297))
    }
}
