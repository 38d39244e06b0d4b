import Foundation
import ReceiptService
import Testing

@Suite struct APIKeyTests {
    @Test func generatedKeysAreRandomAndStoredOnlyAsAHash() {
        let account = UUID()
        let (clearText, key) = APIKey.generate(accountID: account, label: nil, at: Date(timeIntervalSince1970: 0))
        let (otherText, _) = APIKey.generate(accountID: account, label: nil, at: Date(timeIntervalSince1970: 0))
        #expect(clearText != otherText)
        #expect(clearText.count == 52)
        #expect(clearText.hasPrefix("rvk_"))
        #expect(clearText.dropFirst(4).allSatisfy { $0.isHexDigit && !$0.isUppercase })
        #expect(key.prefix == String(clearText.prefix(12)))
        #expect(key.hash.count == 32)
        #expect(!key.hash.elementsEqual(Array(clearText.utf8)))
        #expect(key.matches(clearText))
        #expect(!key.matches(otherText))
        #expect(!key.matches(""))
    }

    @Test(arguments: [
        ("", false), ("rvk_", false), ("rvk_" + String(repeating: "a", count: 48), true),
        ("rvk_" + String(repeating: "a", count: 47), false), ("xyz_" + String(repeating: "a", count: 48), false),
    ])
    func lookupPrefixesOnlyForWellFormedKeys(text: String, wellFormed: Bool) {
        #expect((APIKey.lookupPrefix(of: text) != nil) == wellFormed)
    }

    @Test func constantTimeEqualityComparesWholeValues() {
        #expect(ConstantTime.equals([1, 2, 3], [1, 2, 3]))
        #expect(!ConstantTime.equals([1, 2, 3], [1, 2, 4]))
        #expect(!ConstantTime.equals([1, 2, 3], [1, 2]))
        #expect(ConstantTime.equals([], []))
    }
}
