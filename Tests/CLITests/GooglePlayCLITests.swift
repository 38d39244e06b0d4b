import Crypto
import Foundation
import TestSupport
import Testing
import _CryptoExtras

/// An app's Google Play identity and credentials from the command line: package names and the service account's key
/// file set, shown without the key, stored sealed, refused clearly when wrong, and removed.
@Suite struct GooglePlayCLITests {
    struct AppJSON: Decodable {
        let token: String
        let packageNames: [String]
        let googleServiceAccount: String?

        enum CodingKeys: String, CodingKey {
            case token
            case packageNames = "package_names"
            case googleServiceAccount = "google_service_account"
        }
    }

    /// A key file as Google issues it, with `changes` applied to its fields.
    static func keyFile(pem: String, _ changes: [String: String] = [:]) throws -> String {
        var fields: [String: String] = [
            "type": "service_account", "project_id": "acme-play", "private_key_id": "0123456789abcdef0123",
            "private_key": pem, "client_email": "verifier@acme-play.iam.gserviceaccount.com",
            "client_id": "100000000000000000001", "token_uri": "https://oauth2.googleapis.com/token",
        ]
        fields.merge(changes) { _, new in new }
        return String(decoding: try JSONSerialization.data(withJSONObject: fields), as: UTF8.self)
    }

    @Test(arguments: StoreKind.available)
    func packageNamesAndTheServiceAccountKeyAreSetShownSealedAndRemoved(kind: StoreKind) async throws {
        let key = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        let pem = key.pkcs8PEMRepresentation
        try await withCLI(kind) { cli in
            try #require(try cli("account", "create", "--name", "Acme", "--email", "ops@acme.io").status == 0)
            let file = cli.directory.appendingPathComponent("play.json")
            try Self.keyFile(pem: pem).write(to: file, atomically: true, encoding: .utf8)
            let added = try cli(
                "app", "add", "--account", "ops@acme.io", "--bundle-id", "com.acme.one", "--package-name",
                "com.acme.android", "--package-name", "com.acme.android_beta", "--google-service-account-file",
                file.path, "--json")
            #expect(added.status == 0, "\(added.stderr)")
            let app = try added.json(AppJSON.self)
            #expect(app.packageNames == ["com.acme.android", "com.acme.android_beta"])
            #expect(app.googleServiceAccount == "verifier@acme-play.iam.gserviceaccount.com")
            #expect(!added.stdout.contains("PRIVATE KEY"))

            // The key is sealed: no line of its PEM body is in the database.
            let dump = try cli.databaseBytes(kind: kind)
            let bodyLine = try #require(pem.split(separator: "\n").dropFirst(3).first)
            #expect(!dump.contains(Array(bodyLine.utf8)), "the database holds the Google private key in clear")
            #expect(dump.contains(Array("com.acme.android_beta".utf8)))

            let failures: [([String], String)] = [
                (["--package-name", "1acme.android"], "malformed Android package name '1acme.android'"),
                (["--package-name", "acme"], "malformed Android package name 'acme'"),
                (
                    ["--package-name", "com.acme.x", "--package-name", "com.acme.x"],
                    "package name 'com.acme.x' is given twice"
                ),
                (
                    ["--google-service-account-file", "/nonexistent/key.json"],
                    "cannot read the Google service account key file"
                ),
            ]
            for (arguments, message) in failures {
                let outcome = try cli.run(["app", "update", app.token] + arguments)
                #expect(outcome.status != 0, "\(arguments) succeeded")
                #expect(outcome.stderr.split(separator: "\n").count == 1, "\(arguments): \(outcome.stderr)")
                #expect(outcome.stderr.contains(message), "\(arguments): \(outcome.stderr)")
            }
            let p256 = P256.Signing.PrivateKey().pemRepresentation
            let badKeys: [(String, String)] = [
                ("{not json", "is not JSON"),
                (try Self.keyFile(pem: pem, ["type": "authorized_user"]), "is not a service account's key"),
                (
                    try Self.keyFile(pem: pem, ["token_uri": "http://169.254.169.254/latest"]),
                    "names a token_uri that is not Google's"
                ),
                (try Self.keyFile(pem: p256), "is not an RSA private key in PEM"),
                (try Self.keyFile(pem: pem, ["private_key_id": "../x"]), "has no private_key_id"),
            ]
            for (text, message) in badKeys {
                try text.write(to: file, atomically: true, encoding: .utf8)
                let outcome = try cli.run(["app", "update", app.token, "--google-service-account-file", file.path])
                #expect(outcome.status != 0 && outcome.stderr.contains(message), "\(message): \(outcome.stderr)")
                #expect(!outcome.stderr.contains("PRIVATE KEY"))
            }
            // Nothing of the refused updates was written.
            let shown = try cli("app", "show", app.token, "--json").json(AppJSON.self)
            #expect(shown.packageNames == app.packageNames && shown.googleServiceAccount == app.googleServiceAccount)

            // Another app of the account may not hold the same package: it would deliver each purchase again.
            let twin = try cli.run([
                "app", "add", "--account", "ops@acme.io", "--bundle-id", "com.acme.two", "--package-name",
                "com.acme.android",
            ])
            #expect(twin.status != 0 && twin.stderr.contains("package name com.acme.android is already held"))
            let other = try cli("app", "add", "--account", "ops@acme.io", "--bundle-id", "com.acme.three", "--json")
                .json(AppJSON.self)
            let taken = try cli.run(["app", "update", other.token, "--package-name", "com.acme.android_beta"])
            #expect(taken.status != 0 && taken.stderr.contains("already held"), "\(taken.stderr)")

            let removed = try cli(
                "app", "update", app.token, "--remove-google-credentials", "--no-package-names", "--json")
            #expect(removed.status == 0, "\(removed.stderr)")
            let cleared = try removed.json(AppJSON.self)
            #expect(cleared.packageNames.isEmpty && cleared.googleServiceAccount == nil)
        }
    }

    /// The Pub/Sub push setting of Real-time Developer Notifications: set with both flags, shown, checked, removed.
    @Test(arguments: StoreKind.available)
    func thePubSubPushSettingIsSetCheckedAndRemoved(kind: StoreKind) async throws {
        struct PushJSON: Decodable {
            let token: String
            let audience: String?
            let serviceAccount: String?
            enum CodingKeys: String, CodingKey {
                case token
                case audience = "google_pubsub_audience"
                case serviceAccount = "google_pubsub_service_account"
            }
        }
        try await withCLI(kind) { cli in
            try #require(try cli("account", "create", "--name", "Acme", "--email", "ops@acme.io").status == 0)
            let app = try cli(
                "app", "add", "--account", "ops@acme.io", "--bundle-id", "com.acme.one", "--package-name",
                "com.acme.android", "--google-pubsub-audience", "https://rv.acme.io/rtdn",
                "--google-pubsub-service-account", "Push@Acme-Play.iam.gserviceaccount.com", "--json"
            ).json(PushJSON.self)
            #expect(app.audience == "https://rv.acme.io/rtdn")
            #expect(app.serviceAccount == "push@acme-play.iam.gserviceaccount.com")
            let failures: [([String], String)] = [
                (["--google-pubsub-audience", "https://x"], "given together"),
                (["--google-pubsub-service-account", "a@b.c"], "given together"),
                (
                    ["--google-pubsub-audience", "has space", "--google-pubsub-service-account", "a@b.c"],
                    "printable characters without spaces"
                ),
                (
                    ["--google-pubsub-audience", "aud", "--google-pubsub-service-account", "not-an-email"],
                    "must be an email"
                ),
                (
                    [
                        "--google-pubsub-audience", "aud", "--google-pubsub-service-account", "a@b.c",
                        "--no-google-pubsub",
                    ],
                    "cannot both set and remove"
                ),
            ]
            for (arguments, message) in failures {
                let outcome = try cli.run(["app", "update", app.token] + arguments)
                #expect(outcome.status != 0 && outcome.stderr.contains(message), "\(arguments): \(outcome.stderr)")
            }
            let kept = try cli("app", "show", app.token, "--json").json(PushJSON.self)
            #expect(kept.audience == app.audience && kept.serviceAccount == app.serviceAccount)
            let removed = try cli("app", "update", app.token, "--no-google-pubsub", "--json").json(PushJSON.self)
            #expect(removed.audience == nil && removed.serviceAccount == nil)
        }
    }
}
