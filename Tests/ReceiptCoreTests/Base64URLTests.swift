import Foundation
import ReceiptCore
import Testing

/// base64url without padding: the encoder agrees with Foundation's base64 in the URL alphabet, and the decoder reads
/// back every length, refusing padding, the standard alphabet's `+` and `/`, and lengths no encoding has.
@Suite struct Base64URLTests {
    @Test func everyLengthRoundTripsAndMatchesFoundation() {
        for count in 0...40 {
            let bytes = (0..<count).map { UInt8(truncatingIfNeeded: $0 * 37 + 251) }
            let encoded = Base64URL.encode(bytes)
            let foundation = Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-")
                .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
            #expect(encoded == foundation, "\(count) bytes")
            #expect(Base64URL.decode(encoded) == bytes, "\(count) bytes")
        }
    }

    @Test(arguments: ["+/8", "_-8=", "AAAAA", "QQ==", "a b"])
    func whatIsNotBase64URLIsRefused(_ text: String) {
        #expect(Base64URL.decode(text) == nil)
    }
}
