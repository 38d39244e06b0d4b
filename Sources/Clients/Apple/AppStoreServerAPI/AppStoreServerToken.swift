import Crypto
import Foundation
import ReceiptCore
import ReceiptService
import Synchronization

/// The ES256 JWTs that authorize App Store Server API requests, one per app's credentials, reused until five minutes
/// before they expire.
/// [Apple's documentation](https://developer.apple.com/documentation/appstoreserverapi/generating-json-web-tokens-for-api-requests)
final class AppStoreServerTokens: Sendable {
    private struct Issued {
        var token: String
        var expiresAt: Date
    }

    let lifetime: TimeInterval
    private let issued = Mutex([AppStoreServerAPICredentials: Issued]())

    init(lifetime: Duration) {
        self.lifetime = min(3_600, Double(lifetime.components.seconds))
    }

    /// A token for `credentials` good at `now` for at least five more minutes.
    func token(for credentials: AppStoreServerAPICredentials, now: Date) throws -> String {
        if let issued = issued.withLock({ $0[credentials] }), issued.expiresAt.timeIntervalSince(now) > 300 {
            return issued.token
        }
        let key: P256.Signing.PrivateKey
        do {
            key = try P256.Signing.PrivateKey(pemRepresentation: credentials.privateKeyPEM)
        } catch {
            throw AppStoreServerAPIError(.credentials, "the app's private key is not a P-256 key in PEM")
        }
        let issuedAt = Int(now.timeIntervalSince1970)
        let header = #"{"alg":"ES256","kid":"\#(Self.escaped(credentials.keyID))","typ":"JWT"}"#
        let payload =
            #"{"iss":"\#(Self.escaped(credentials.issuerID))","iat":\#(issuedAt),"exp":\#(issuedAt + Int(lifetime)),"#
            + #""aud":"appstoreconnect-v1","bid":"\#(Self.escaped(credentials.bundleID))"}"#
        let input = Base64URL.encode(Array(header.utf8)) + "." + Base64URL.encode(Array(payload.utf8))
        let signature = try key.signature(for: Data(input.utf8))
        let token = input + "." + Base64URL.encode(signature.rawRepresentation)
        let expiresAt = Date(timeIntervalSince1970: Double(issuedAt) + lifetime)
        issued.withLock {
            // A handful of apps per server: the table is small, but never unbounded.
            if $0.count >= 10_000 { $0.removeAll() }
            $0[credentials] = Issued(token: token, expiresAt: expiresAt)
        }
        return token
    }

    /// JSON string content: the ids are letters, digits and `-`, `.`; anything else is escaped away.
    private static func escaped(_ text: String) -> String {
        String(text.unicodeScalars.filter { $0.isASCII && $0 != "\"" && $0 != "\\" && $0.value >= 0x20 })
    }
}
