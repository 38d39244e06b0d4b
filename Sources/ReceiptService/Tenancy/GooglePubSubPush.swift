import Foundation

/// How an app's Real-time Developer Notifications reach `POST /notifications/google/{token}`: the Cloud Pub/Sub push
/// subscription's authentication, whose Google-signed OIDC token must carry this audience and be issued for this
/// service account (docs/google-play.md, "Real-time Developer Notifications"). Without it the route refuses every push:
/// anyone can make Pub/Sub push to a URL, and only the audience and the service account tell the app's subscription
/// from a stranger's.
public struct GooglePubSubPush: Sendable, Hashable {
    /// The push subscription's audience (`aud`), as set in its authentication.
    public var audience: String
    /// The service account the push subscription authenticates as (the token's `email`).
    public var serviceAccount: String

    /// Creates the setting; ``parse(audience:serviceAccount:)`` checks one given by a customer.
    public init(audience: String, serviceAccount: String) {
        self.audience = audience
        self.serviceAccount = serviceAccount
    }

    /// The stored form: the audience and the service account, separated by a space (neither has one).
    public var storedForm: String { "\(audience) \(serviceAccount)" }

    /// The setting from its stored form; nil when it is not one.
    public init?(storedForm: String) {
        let parts = storedForm.split(separator: " ", omittingEmptySubsequences: false)
        guard parts.count == 2 else { return nil }
        self.init(audience: String(parts[0]), serviceAccount: String(parts[1]))
    }

    /// The longest audience taken.
    public static let maximumAudienceLength = 512

    /// Checks a customer's audience and service account.
    static func parse(audience: String, serviceAccount: String) throws -> GooglePubSubPush {
        let audience = audience.trimmingCharacters(in: .whitespaces)
        let account = serviceAccount.trimmingCharacters(in: .whitespaces)
        guard !audience.isEmpty, audience.utf8.count <= maximumAudienceLength,
            audience.utf8.allSatisfy({ (0x21...0x7E).contains($0) })
        else {
            throw ServiceError(
                .invalidArgument,
                "the Pub/Sub audience must be 1-\(maximumAudienceLength) printable characters without spaces")
        }
        let halves = account.split(separator: "@", omittingEmptySubsequences: false)
        guard halves.count == 2, !halves[0].isEmpty, halves[1].contains("."), account.utf8.count <= 254,
            account.utf8.allSatisfy({ (0x21...0x7E).contains($0) })
        else {
            throw ServiceError(
                .invalidArgument,
                "the Pub/Sub service account must be an email like push@project.iam.gserviceaccount.com")
        }
        return GooglePubSubPush(audience: audience, serviceAccount: account.lowercased())
    }
}
