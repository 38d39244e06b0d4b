import Foundation
import ReceiptCore

/// The OIDC token Cloud Pub/Sub sends with an authenticated push (`Authorization: Bearer …`), checked as Google
/// documents: signed by one of Google's keys, issued by `accounts.google.com`, for the push subscription's audience,
/// to its service account with a verified email, and current.
/// [Authentication for push subscriptions](https://cloud.google.com/pubsub/docs/authenticate-push-subscriptions)
public enum PubSubPushToken {
    /// The issuers Google's tokens name.
    public static let issuers: Set<String> = ["https://accounts.google.com", "accounts.google.com"]
    /// The longest token read (Google's are about 1 KB).
    public static let maximumLength = 8 * 1_024

    /// Why a push is not taken as the app's subscription's.
    public struct Refusal: Error, Sendable, Equatable {
        /// What is wrong (for the log; never a secret).
        public let reason: String
        init(_ reason: String) { self.reason = reason }
    }

    /// Checks the `Authorization` header of a push against the app's setting.
    public static func verify(
        authorization: String?, keys: JSONWebKeySet, expected: GooglePubSubPush, now: Date
    ) throws {
        guard let authorization, authorization.utf8.count <= maximumLength + 7,
            authorization.prefix(7).lowercased() == "bearer "
        else { throw Refusal("the push has no bearer token (is the subscription's authentication on?)") }
        let token = String(authorization.dropFirst(7)).trimmingCharacters(in: .whitespaces)
        let payload: [UInt8]
        switch keys.verifiedPayload(of: token) {
        case .success(let bytes): payload = bytes
        case .failure(let refusal): throw Refusal("the push's token \(refusal.reason)")
        }
        guard case .object(let claims)? = try? JSONParser.parse(payload, maximumDepth: 4) else {
            throw Refusal("the push's token has unreadable claims")
        }
        guard let issuer = claims["iss"]?.stringValue, issuers.contains(issuer) else {
            throw Refusal("the push's token is not Google's (iss)")
        }
        let audiences: [String] =
            switch claims["aud"] {
            case .string(let one)?: [one]
            case .array(let many)?: many.compactMap(\.stringValue)
            default: []
            }
        guard audiences.contains(where: { ConstantTime.equals(Array($0.utf8), Array(expected.audience.utf8)) }) else {
            throw Refusal("the push's token is for another audience")
        }
        guard let email = claims["email"]?.stringValue,
            OpenIDToken.asciiLowercased(email) == expected.serviceAccount
        else { throw Refusal("the push's token is not the configured service account's") }
        let verified: Bool =
            switch claims["email_verified"] {
            case .bool(let flag)?: flag
            case .string(let text)?: text == "true"
            default: false
            }
        guard verified else { throw Refusal("the push's token's email is not verified") }
        guard let expires = number(claims["exp"]), let issued = number(claims["iat"]) else {
            throw Refusal("the push's token has no exp or iat")
        }
        guard Date(timeIntervalSince1970: expires) > now.addingTimeInterval(-OpenIDToken.clockSkew) else {
            throw Refusal("the push's token has expired")
        }
        guard Date(timeIntervalSince1970: issued) < now.addingTimeInterval(OpenIDToken.clockSkew) else {
            throw Refusal("the push's token was issued in the future")
        }
    }

    private static func number(_ value: JSONValue?) -> Double? {
        switch value {
        case .integer(let number)?: Double(number)
        case .double(let number)?: number
        default: nil
        }
    }
}
