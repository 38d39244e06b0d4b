import Foundation
import Testing

@testable import ReceiptCore

/// Where an Apple-signed item comes from, as it states it; one that states none is refused, never taken as
/// Production (an external purchase token states none, and its id tells, as in Apple's library).
@Suite struct JWSEnvironmentTests {
    static func object(_ json: String) throws -> JSONObject {
        guard case .object(let object) = try JSONParser.parse(Array(json.utf8)) else {
            throw ReceiptError(.malformedJWS)
        }
        return object
    }

    @Test(arguments: [
        (#"{"environment":"Sandbox"}"#, StoreEnvironment.sandbox),
        (#"{"data":{"environment":"Production"}}"#, .production),
        (#"{"appData":{"environment":"Sandbox"}}"#, .sandbox),
        (#"{"summary":{"environment":"Sandbox"}}"#, .sandbox),
        (#"{"receiptType":"Production"}"#, .production),
        (#"{"externalPurchaseToken":{"externalPurchaseId":"SANDBOX_1a2b"}}"#, .sandbox),
        (#"{"externalPurchaseToken":{"externalPurchaseId":"1a2b"}}"#, .production),
    ])
    func anItemSaysWhereItComesFrom(json: String, expected: StoreEnvironment) throws {
        #expect(try JWSVerifier.environment(of: try Self.object(json)) == expected)
    }

    @Test(arguments: [
        #"{}"#, #"{"notificationType":"EXTERNAL_PURCHASE_TOKEN"}"#, #"{"environment":"Staging"}"#,
        #"{"data":{"bundleId":"com.example.app"}}"#, #"{"environment":"Xcode"}"#, #"{"environment":7}"#,
    ])
    func anItemThatSaysNothingIsRefused(json: String) throws {
        #expect(throws: ReceiptError(.malformedJWS)) { try JWSVerifier.environment(of: try Self.object(json)) }
    }
}
