import ArgumentParser
import Foundation
import ReceiptCore
import ReceiptService

/// `receiptverify app …`
struct AppCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "app", abstract: "Add and manage an account's apps.",
        subcommands: [
            Add.self, List.self, Show.self, Update.self, Lock.self, Unlock.self, RotateToken.self, RotateKey.self,
            Remove.self,
        ])

    /// The settings `app add` and `app update` share.
    struct SettingOptions: ParsableArguments {
        @Option(help: "Display name (default: the first bundle ID).") var name: String?
        @Option(name: .customLong("bundle-id"), help: "A bundle ID receipts may carry; repeat for several.")
        var bundleIDs: [String] = []
        @Option(name: .customLong("environment"), help: "An allowed environment: production, sandbox; repeat.")
        var environments: [String] = []
        @Option(help: "Verification mode: local, apple, local-then-apple.") var mode: String?
        @Option(help: "Apple's app-specific shared secret (prefer --shared-secret-file).") var sharedSecret: String?
        @Option(help: "File holding Apple's app-specific shared secret.") var sharedSecretFile: String?
        @Option(help: "App Store Server API issuer ID.") var appleIssuerID: String?
        @Option(help: "App Store Server API key ID.") var appleKeyID: String?
        @Option(help: "App Store Server API private key file (.p8, PEM).") var applePrivateKeyFile: String?
        @Option(
            name: .customLong("package-name"),
            help:
                "An Android package name whose Google Play purchases are the app's; repeat for several (replaces the list)."
        )
        var packageNames: [String] = []
        @Option(
            help:
                "The JSON key file Google issues for a service account with access to the app in Play Console (the Google Play Developer API's credentials)."
        )
        var googleServiceAccountFile: String?
        @Option(
            help:
                "The audience of the app's Pub/Sub push subscription (its authentication), for Real-time Developer Notifications at /notifications/google/{token}; with --google-pubsub-service-account."
        )
        var googlePubsubAudience: String?
        @Option(
            help:
                "The service account the app's Pub/Sub push subscription authenticates as (the push token's email)."
        )
        var googlePubsubServiceAccount: String?
        @Option(
            help:
                "The app's Play licensing key (Play Console's base64 RSA public key): a purchase sent as JSON must come with its signature; \"\" removes it."
        )
        var googleLicenseKey: String?
        @Option(help: "Cipher of /apiencrypted results: aes-256-cbc, aes-256-gcm.") var cipher: String?
        @Flag(
            inversion: .prefixedNo,
            help: "Accept data signed by a test root bound to the app with --test-anchor (Xcode StoreKit testing).")
        var allowTestData: Bool?
        @Option(
            name: .customLong("test-anchor"),
            help:
                "Bind a test root to the app: its SHA-256 fingerprint, a certificate file, or a directory of them; repeat (replaces the list). Only the roots bound to an app sign its test data."
        )
        var testAnchors: [String] = []
        @Flag(help: "Unbind every test root from the app.") var noTestAnchors = false
        @Flag(
            inversion: .prefixedNo,
            help:
                "Refuse (400) an /api request without app_user_id (or a StoreKit 2 appAccountToken) while claims are checked (default off)."
        )
        var requireUser: Bool?
        @Flag(
            name: .customLong("store-user-ids"), inversion: .prefixedNo,
            help:
                "Take the stores' own user ids (Apple's appAccountToken, Google's obfuscatedExternalAccountId) for the backend's app_user_id, so that a request without app_user_id claims for them (default off: only app_user_id claims)."
        )
        var storeUserIDs: Bool?
        @Option(
            help:
                "The app's Apple ID (App Store Connect's numeric app id): Production notifications must state it; \"\" removes it."
        )
        var appleAppID: String?
        @Flag(
            help:
                "Let the app hold a bundle ID another app of the account holds (each app then delivers its purchases once: staging variants only)."
        )
        var shareBundleID = false
        @Option(help: "When another user presents a claimed purchase: off, flag, refuse, transfer (default flag).")
        var claims: String?
        @Option(help: "Deliver a transaction once, or until confirmed: once, confirm (default once).")
        var delivery: String?
        @Option(
            name: .customLong("product"),
            help: ArgumentHelp(
                "A product receipts may hold, ID or ID=TYPE[:ENTITLEMENT,…]; repeat (default: any).",
                discussion:
                    "TYPE: consumable, non_consumable, auto_renewable, non_renewing/DURATION (ISO 8601, P30D); the "
                    + "entitlements are the ones the product grants (a consumable grants none).",
                valueName: "product"))
        var products: [String] = []
        @Flag(help: "Remove the product catalog: any product is accepted.") var anyProduct = false
        @Option(help: "Enrich /api answers from the App Store Server API, with its credentials: off, on (default off).")
        var enrichment: String?
        @Option(
            help:
                "Whether /api looks up a transaction or app transaction id alone (asked with lookup=true): allow, refuse (default refuse)."
        )
        var idLookups: String?
        @Option(
            help: ArgumentHelp(
                "How Apple's refund requests are answered: off, inform, decline, grant_full, grant_prorated, rules (default off).",
                discussion:
                    "Any policy but off answers each CONSUMPTION_REQUEST with Send Consumption Information; it needs "
                    + "the App Store Server API credentials and --consumption-consent true."))
        var refundPolicy: String?
        @Option(help: "Whether the app's customers consented to share consumption data with Apple: true, false.")
        var consumptionConsent: Bool?
        @Option(help: "Whether the app provides a free sample or trial of its content before purchase: true, false.")
        var sampleContentProvided: Bool?

        func settings() throws -> AppSettings {
            if sharedSecret != nil && sharedSecretFile != nil {
                throw CommandFailure("give --shared-secret or --shared-secret-file, not both")
            }
            if anyProduct && !products.isEmpty { throw CommandFailure("give --product or --any-product, not both") }
            if noTestAnchors && !testAnchors.isEmpty {
                throw CommandFailure("give --test-anchor or --no-test-anchors, not both")
            }
            var settings = AppSettings(
                name: name, bundleIDs: bundleIDs.isEmpty ? nil : bundleIDs,
                allowedEnvironments: environments.isEmpty ? nil : environments, verificationMode: mode,
                sharedSecret: try sharedSecret ?? sharedSecretFile.map { try readSecret($0, what: "shared secret") },
                appleIssuerID: appleIssuerID, appleKeyID: appleKeyID,
                applePrivateKeyPEM: try applePrivateKeyFile.map { try readSecret($0, what: "Apple private key") },
                resultCipher: cipher, allowsTestData: allowTestData, claimsPolicy: claims, deliveryMode: delivery,
                productCatalog: anyProduct ? [] : products.isEmpty ? nil : products, enrichment: enrichment,
                idLookups: idLookups, requiresUser: requireUser, appleAppID: appleAppID)
            settings.sharesBundleIDs = shareBundleID
            settings.storeUserIDs = storeUserIDs
            if !packageNames.isEmpty { settings.packageNames = packageNames }
            settings.googleServiceAccountJSON = try googleServiceAccountFile.map {
                try readSecret($0, what: "Google service account key")
            }
            settings.googlePubSubAudience = googlePubsubAudience
            settings.googlePubSubServiceAccount = googlePubsubServiceAccount
            settings.googleLicenseKey = googleLicenseKey
            settings.refundPolicy = refundPolicy
            settings.consumptionConsent = consumptionConsent
            settings.sampleContentProvided = sampleContentProvided
            if noTestAnchors { settings.testAnchors = [] }
            if !testAnchors.isEmpty { settings.testAnchors = try testAnchors.flatMap(Self.fingerprints) }
            return settings
        }

        /// The fingerprints `--test-anchor` names: the text itself, or those of the certificates in the file or
        /// directory it names.
        private static func fingerprints(_ text: String) throws -> [String] {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: text, isDirectory: &isDirectory) else { return [text] }
            let anchors: TrustAnchors
            if isDirectory.boolValue {
                anchors = try TrustAnchorDirectory.load(text)
            } else {
                guard let data = FileManager.default.contents(atPath: text) else {
                    throw CommandFailure("cannot read the test anchor file \(text)")
                }
                do {
                    anchors = try TrustAnchors(encoded: [Array(data)])
                } catch {
                    throw CommandFailure("the test anchor file \(text) is not a certificate (DER or PEM)")
                }
            }
            let fingerprints = anchors.anchors.filter { !$0.isApple }.map(\.fingerprint)
            guard !fingerprints.isEmpty else { throw CommandFailure("\(text) holds no test root, only Apple's") }
            return fingerprints
        }

        private func readSecret(_ path: String, what: String) throws -> String {
            guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
                throw CommandFailure("cannot read the \(what) file \(path)")
            }
            return text.trimmingCharacters(in: .whitespacesAndNewlines)
        }
    }

    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Add an app; it gets a fresh token and a random 256-bit result key.")
        @Option(help: "Account id or email.") var account: String
        @OptionGroup var settings: SettingOptions
        @OptionGroup var options: GlobalOptions

        func run() async throws {
            let app = try await options.withTenancy { [account, settings] in
                try await $0.addApp(account: account, settings: try settings.settings())
            }
            try Output.show(AppView(app), json: options.json)
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List apps, of one account or all.")
        @Option(help: "Account id or email.") var account: String?
        @OptionGroup var options: GlobalOptions

        func run() async throws {
            let apps = try await options.withTenancy { [account] in try await $0.apps(account: account) }
            try Output.list(
                apps.map { AppView($0) }, json: options.json,
                columns: [
                    ("TOKEN", \.token), ("ACCOUNT", \.accountID), ("MODE", \.verificationMode),
                    ("ENABLED", { $0.enabled ? "yes" : "no" }), ("BUNDLE IDS", { $0.bundleIDs.joined(separator: ",") }),
                    ("NAME", \.name),
                ])
        }
    }

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Show an app; --reveal-key prints its result key.")
        @Argument(help: "App token.") var token: String
        @Flag(help: "Print the result key (base64); the only way to read it back.") var revealKey = false
        @OptionGroup var options: GlobalOptions

        func run() async throws {
            let view = try await options.withTenancy { [token, revealKey] tenancy in
                let app = try await tenancy.app(token: token)
                return AppView(app, revealedKey: revealKey ? try tenancy.resultKey(of: app) : nil)
            }
            try Output.show(view, json: options.json)
        }
    }

    struct Update: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Change an app's settings; options not given keep their value (--bundle-id replaces the list).")
        @Argument(help: "App token.") var token: String
        @OptionGroup var settings: SettingOptions
        @Flag(help: "Remove the shared secret.") var removeSharedSecret = false
        @Flag(help: "Remove the App Store Server API credentials.") var removeAppleCredentials = false
        @Flag(help: "Remove the Google Play Developer API credentials.") var removeGoogleCredentials = false
        @Flag(help: "Remove every Android package name.") var noPackageNames = false
        @Flag(help: "Remove the Pub/Sub push setting (Real-time Developer Notifications are then refused).")
        var noGooglePubsub = false
        @Flag(help: "Enable or disable the app (a disabled app gets 401).")
        var availability: Availability?
        @OptionGroup var options: GlobalOptions

        func run() async throws {
            let app = try await options.withTenancy {
                [
                    token, settings, removeSharedSecret, removeAppleCredentials, removeGoogleCredentials,
                    noPackageNames, noGooglePubsub,
                    availability
                ] in
                var changes = try settings.settings()
                if removeSharedSecret {
                    guard changes.sharedSecret == nil else {
                        throw CommandFailure("cannot both set and remove the shared secret")
                    }
                    changes.sharedSecret = ""
                }
                changes.removeAppleCredentials = removeAppleCredentials
                changes.removeGoogleCredentials = removeGoogleCredentials
                changes.removeGooglePubSub = noGooglePubsub
                if noPackageNames {
                    guard changes.packageNames == nil else {
                        throw CommandFailure("give --package-name or --no-package-names, not both")
                    }
                    changes.packageNames = []
                }
                changes.isEnabled = availability.map { $0 == .enable }
                return try await $0.updateApp(token: token, settings: changes)
            }
            try Output.show(AppView(app), json: options.json)
        }
    }

    struct Lock: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Disable an app so that its account cannot enable it again (its notifications get 401, nothing runs for it in the background)."
        )
        @Argument(help: "App token.") var token: String
        @OptionGroup var options: GlobalOptions

        func run() async throws {
            let app = try await options.withTenancy { [token] in try await $0.setLocked(token: token, true) }
            try Output.show(AppView(app), json: options.json)
        }
    }

    struct Unlock: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Unlock a locked app; it stays disabled until enabled again (app update --enable).")
        @Argument(help: "App token.") var token: String
        @OptionGroup var options: GlobalOptions

        func run() async throws {
            let app = try await options.withTenancy { [token] in try await $0.setLocked(token: token, false) }
            try Output.show(AppView(app), json: options.json)
        }
    }

    struct RotateToken: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "rotate-token", abstract: "Give an app a new token; the old one stops working at once.")
        @Argument(help: "App token.") var token: String
        @OptionGroup var options: GlobalOptions

        func run() async throws {
            let app = try await options.withTenancy { [token] in try await $0.rotateToken(token: token) }
            try Output.show(AppView(app), json: options.json)
        }
    }

    struct RotateKey: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "rotate-key", abstract: "Give an app a new result key (see it with app show --reveal-key).")
        @Argument(help: "App token.") var token: String
        @OptionGroup var options: GlobalOptions

        func run() async throws {
            let app = try await options.withTenancy { [token] in try await $0.rotateResultKey(token: token) }
            try Output.show(AppView(app), json: options.json)
        }
    }

    struct Remove: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Remove an app and its settings.")
        @Argument(help: "App token.") var token: String
        @Flag(
            help:
                "Remove it even though its ledger holds transactions: they are forgotten, and an app added again for its bundle IDs delivers them again."
        )
        var forgetLedger = false
        @OptionGroup var options: GlobalOptions

        func run() async throws {
            let app = try await options.withTenancy { [token, forgetLedger] in
                try await $0.removeApp(token: token, forgettingLedger: forgetLedger)
            }
            try Output.show(AppView(app), json: options.json)
        }
    }
}

/// `--enable` or `--disable`.
enum Availability: String, EnumerableFlag {
    case enable
    case disable
}
