import Foundation
import ReceiptService
import Testing

/// The Standard Webhooks signature, checked against vectors the PyPI `standardwebhooks` library computes (the CI's
/// recipes check real deliveries with the library itself).
struct StandardWebhooksTests {
    @Test func signaturesMatchTheLibrarysVectors() {
        // Standard Webhooks' own example (a base64 secret).
        #expect(
            WebhookSignature.standardSignature(
                secrets: [Array("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw".utf8)], id: "msg_p5jXN8AQM9LWM0D4loKWxJek",
                timestamp: 1_614_265_330, body: Array(#"{"test": 2432232314}"#.utf8))
                == "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=")
        // A secret made before issue 33 (`whsec_` and 64 hex digits), read as base64 by the library too.
        let hexSecret = Array(("whsec_" + String(repeating: "5f0c", count: 16)).utf8)
        #expect(
            WebhookSignature.standardSignature(
                secrets: [hexSecret], id: "evt_1", timestamp: 1_700_000_000, body: Array("{}".utf8))
                == "v1,+T99H+nxkHFhMBGxfSIhJ/GiUWPKn8n0j+3tHmpt374=")
    }

    @Test func everySecretSignsAndNewSecretsAreStandard() throws {
        let old = Array("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw".utf8)
        let new = Array(WebhookSignature.newSecret().utf8)
        let both = WebhookSignature.standardSignature(secrets: [old, new], id: "e", timestamp: 1, body: [1, 2])
        let parts = both.split(separator: " ")
        #expect(parts.count == 2 && parts.allSatisfy { $0.hasPrefix("v1,") })
        // A new secret: `whsec_` and 24 bytes of base64 (32 characters, no padding).
        let text = String(decoding: new, as: UTF8.self)
        #expect(text.hasPrefix("whsec_") && text.count == 38)
        #expect(try #require(WebhookSignature.standardKey(secret: new)).count == 24)
        #expect(WebhookSignature.standardKey(secret: Array("whsec_".utf8)) == nil)
    }
}
