import Foundation
import Testing

@testable import ReceiptService

/// The file `receiptverify customers import --file` reads: `ORIGINAL_TRANSACTION_ID[,APP_USER_ID]` per line.
@Suite struct CustomerImportItemTests {
    @Test func linesAreReadWithTheirUsers() throws {
        let items = try CustomerImport.Item.parse("# header\n1000, alice\n\n  2000\n3000,\n")
        #expect(
            items == [
                .init(originalTransactionID: "1000", user: "alice"), .init(originalTransactionID: "2000", user: nil),
                .init(originalTransactionID: "3000", user: nil),
            ])
    }

    @Test(arguments: ["abc,alice", ",alice", "1000 2000", String(repeating: "1", count: 65)])
    func aMalformedLineIsNamed(line: String) {
        #expect(throws: ServiceError(.invalidArgument)) { try CustomerImport.Item.parse("1\n" + line) }
    }

    @Test func aUserOver256BytesIsRefused() {
        #expect(throws: ServiceError(.invalidArgument)) {
            try CustomerImport.Item.parse("1," + String(repeating: "u", count: 257))
        }
    }
}
