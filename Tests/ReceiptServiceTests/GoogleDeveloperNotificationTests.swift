import Crypto
import Foundation
import ReceiptCore
import ReceiptService
import Testing
import _CryptoExtras

/// Reading a Pub/Sub push of a Real-time Developer Notification, and the push's OIDC token checked as Google documents.
@Suite struct GoogleDeveloperNotificationTests {
    static func push(_ notification: String, messageID: String? = "42") -> [UInt8] {
        let data = Data(notification.utf8).base64EncodedString()
        let id = messageID.map { #","messageId":"\#($0)""# } ?? ""
        return Array(#"{"message":{"data":"\#(data)"\#(id)},"subscription":"projects/p/subscriptions/s"}"#.utf8)
    }

    @Test func eachKindIsReadWithItsTypeName() throws {
        let subscription = try GoogleDeveloperNotification.parse(
            pushBody: Self.push(
                #"{"version":"1.0","packageName":"com.acme.app","eventTimeMillis":"1790000000123","subscriptionNotification":{"version":"1.0","notificationType":"13","purchaseToken":"tok.1","subscriptionId":"pro"}}"#
            ))
        #expect(subscription.messageID == "42" && subscription.eventTime == 1_790_000_000_123)
        #expect(subscription.content == .subscription(type: 13, purchaseToken: "tok.1", subscriptionID: "pro"))
        #expect(subscription.typeName == "SUBSCRIPTION_EXPIRED")
        let product = try GoogleDeveloperNotification.parse(
            pushBody: Self.push(
                #"{"packageName":"com.acme.app","eventTimeMillis":1,"oneTimeProductNotification":{"notificationType":2,"purchaseToken":"t","sku":"coins"}}"#
            ))
        #expect(product.typeName == "ONE_TIME_PRODUCT_CANCELED" && product.purchaseToken == "t")
        let voided = try GoogleDeveloperNotification.parse(
            pushBody: Self.push(
                #"{"packageName":"com.acme.app","eventTimeMillis":"1","voidedPurchaseNotification":{"purchaseToken":"t","orderId":"GPA.1","productType":1,"refundType":2}}"#
            ))
        #expect(voided.content == .voidedPurchase(purchaseToken: "t", orderID: "GPA.1", productType: 1, refundType: 2))
        #expect(voided.eventData(outcome: "revoked")["order_id"] == .string("GPA.1"))
        let newType = try GoogleDeveloperNotification.parse(
            pushBody: Self.push(
                #"{"packageName":"com.acme.app","eventTimeMillis":"1","subscriptionNotification":{"notificationType":99,"purchaseToken":"t"}}"#
            ))
        #expect(newType.typeName == "SUBSCRIPTION_99")
        let test = try GoogleDeveloperNotification.parse(
            pushBody: Self.push(#"{"packageName":"com.acme.app","eventTimeMillis":"1","testNotification":{}}"#))
        #expect(test.content == .test && test.purchaseToken == nil)
    }

    @Test func whatIsNotANotificationIsRefusedWithItsReason() {
        let good = #"{"packageName":"com.acme.app","eventTimeMillis":"1","testNotification":{}}"#
        let cases: [([UInt8], String)] = [
            (Array("nope".utf8), "not JSON"),
            (Array(#"{"subscription":"s"}"#.utf8), "no message"),
            (Self.push(good, messageID: nil), "no messageId"),
            (Array(#"{"message":{"messageId":"1","data":"***"}}"#.utf8), "not base64"),
            (Self.push("[1]"), "not a developer notification"),
            (Self.push(#"{"eventTimeMillis":"1","testNotification":{}}"#), "no packageName"),
            (Self.push(#"{"packageName":"com.acme.app","eventTimeMillis":"soon"}"#), "not a time"),
            (
                Self.push(
                    #"{"packageName":"com.acme.app","eventTimeMillis":"1","subscriptionNotification":{"notificationType":4,"purchaseToken":"a b"}}"#
                ), "not a purchase token"
            ),
            (Array(repeating: 0x20, count: GoogleDeveloperNotification.maximumBodySize + 1), "over"),
        ]
        for (body, reason) in cases {
            #expect {
                try GoogleDeveloperNotification.parse(pushBody: body)
            } throws: { error in
                (error as? GoogleDeveloperNotification.Malformed)?.reason.contains(reason) == true
            }
        }
    }

    static let key = try! _RSA.Signing.PrivateKey(keySize: .bits2048)
    static let keys: JSONWebKeySet = {
        let primitives = try! key.publicKey.getKeyPrimitives()
        let document = """
            {"keys":[{"kty":"RSA","kid":"g1","alg":"RS256","n":"\(Base64URL.encode(primitives.modulus.drop { $0 == 0 }))",\
            "e":"\(Base64URL.encode(primitives.publicExponent))"}]}
            """
        return try! JSONWebKeySet(json: Array(document.utf8))
    }()

    static func token(_ claims: String) -> String {
        let signed =
            Base64URL.encode(Array(#"{"alg":"RS256","kid":"g1"}"#.utf8)) + "." + Base64URL.encode(Array(claims.utf8))
        let signature = try! key.signature(for: Data(signed.utf8), padding: .insecurePKCS1v1_5)
        return signed + "." + Base64URL.encode(Array(signature.rawRepresentation))
    }

    @Test func thePushTokenMustBeGooglesForTheAudienceAndServiceAccount() throws {
        let now = Date(timeIntervalSince1970: 1_790_000_000)
        let setting = GooglePubSubPush(audience: "https://rv/rtdn", serviceAccount: "push@p.iam.gserviceaccount.com")
        func claims(
            iss: String = "accounts.google.com", aud: String = #""https://rv/rtdn""#,
            email: String = "Push@P.iam.gserviceaccount.com", verified: String = "true",
            exp: Int = 1_790_003_600
        ) -> String {
            #"{"iss":"\#(iss)","aud":\#(aud),"email":"\#(email)","email_verified":\#(verified),"iat":1790000000,"exp":\#(exp)}"#
        }
        try PubSubPushToken.verify(
            authorization: "Bearer " + Self.token(claims()), keys: Self.keys, expected: setting, now: now)
        try PubSubPushToken.verify(
            authorization: "bearer " + Self.token(claims(aud: #"["x","https://rv/rtdn"]"#)), keys: Self.keys,
            expected: setting, now: now)
        let refused: [(String?, String)] = [
            (nil, "no bearer token"),
            ("Bearer " + Self.token(claims(iss: "https://evil")), "(iss)"),
            ("Bearer " + Self.token(claims(aud: #""https://rv/other""#)), "another audience"),
            ("Bearer " + Self.token(claims(email: "x@p.iam.gserviceaccount.com")), "service account"),
            ("Bearer " + Self.token(claims(verified: "false")), "not verified"),
            ("Bearer " + Self.token(claims(exp: 1_789_999_000)), "expired"),
            ("Bearer " + Self.token(claims()).dropLast(4) + "AAAA", "does not verify"),
        ]
        for (authorization, reason) in refused {
            #expect {
                try PubSubPushToken.verify(authorization: authorization, keys: Self.keys, expected: setting, now: now)
            } throws: { error in
                (error as? PubSubPushToken.Refusal)?.reason.contains(reason) == true
            }
        }
    }
}
