import Crypto
import Foundation
import ReceiptCore

/// The operator-chosen settings of an app, as given on the command line; every field is validated by ``parse``.
///
/// A nil field means "not given": on creation it takes its default, on update it keeps the current value.
public struct AppSettings: Sendable {
    /// A display name.
    public var name: String?
    /// Bundle IDs, each `com.example.app`-like.
    public var bundleIDs: [String]?
    /// Environment names: `production`, `sandbox`.
    public var allowedEnvironments: [String]?
    /// `local`, `apple` or `local-then-apple`.
    public var verificationMode: String?
    /// Apple's app-specific shared secret; the empty string removes it.
    public var sharedSecret: String?
    /// App Store Server API issuer ID; with ``appleKeyID`` and ``applePrivateKeyPEM``.
    public var appleIssuerID: String?
    /// App Store Server API key ID.
    public var appleKeyID: String?
    /// App Store Server API private key, PEM.
    public var applePrivateKeyPEM: String?
    /// Removes the App Store Server API credentials.
    public var removeAppleCredentials: Bool
    /// Android package names (`com.example.app`); the empty list removes them.
    public var packageNames: [String]?
    /// The Google Play Developer API credentials: the JSON key file Google issues for a service account.
    public var googleServiceAccountJSON: String?
    /// Removes the Google Play Developer API credentials.
    public var removeGoogleCredentials = false
    /// The Pub/Sub push subscription's audience for Real-time Developer Notifications; with
    /// ``googlePubSubServiceAccount``.
    public var googlePubSubAudience: String?
    /// The service account the push subscription authenticates as.
    public var googlePubSubServiceAccount: String?
    /// Removes the Pub/Sub push setting (the route then refuses the app's notifications).
    public var removeGooglePubSub = false
    /// The Play licensing public key (Play Console's base64 RSA key); the empty string removes it.
    public var googleLicenseKey: String?
    /// `aes-256-cbc` or `aes-256-gcm`.
    public var resultCipher: String?
    /// Whether test-signed data is accepted (under the bound ``testAnchors`` only).
    public var allowsTestData: Bool?
    /// The SHA-256 fingerprints of the test roots bound to the app (hex; colons and spaces ignored); the empty list
    /// removes them. The operator's setting: a customer's settings never carry it.
    public var testAnchors: [String]?
    /// Whether the app is enabled.
    public var isEnabled: Bool?
    /// `off`, `flag`, `refuse` or `transfer`.
    public var claimsPolicy: String?
    /// `once` or `confirm`.
    public var deliveryMode: String?
    /// The product catalog: product ids; the empty list removes the catalog (any product).
    public var productCatalog: [String]?
    /// `off` or `on`: whether `/api` answers are enriched with the App Store Server API.
    public var enrichment: String?
    /// `allow` or `refuse`: whether `/api` accepts a transaction id alone, with no receipt.
    public var idLookups: String?
    /// Whether `/api` requires a user while claims are checked.
    public var requiresUser: Bool?
    /// Whether the stores' own user ids (Apple's `appAccountToken`, Google's `obfuscatedExternalAccountId`) are the
    /// backend's `app_user_id`, so that a request without `app_user_id` claims for them (off by default).
    public var storeUserIDs: Bool?
    /// The app's Apple ID (digits); empty removes it.
    public var appleAppID: String?
    /// How refund requests are answered: `off`, `inform`, `decline`, `grant_full`, `grant_prorated` or `rules`.
    public var refundPolicy: String?
    /// Whether the app's customers consented to share consumption data with Apple.
    public var consumptionConsent: Bool?
    /// Whether the app provides a sample of its content before purchase.
    public var sampleContentProvided: Bool?
    /// Lets the app hold a bundle ID another app of its account holds (each app then delivers that bundle's
    /// purchases once: for an operator's staging variants, never a customer's default). Not stored.
    public var sharesBundleIDs = false

    /// Creates settings; every field defaults to "not given".
    public init(
        name: String? = nil, bundleIDs: [String]? = nil, allowedEnvironments: [String]? = nil,
        verificationMode: String? = nil, sharedSecret: String? = nil, appleIssuerID: String? = nil,
        appleKeyID: String? = nil, applePrivateKeyPEM: String? = nil, removeAppleCredentials: Bool = false,
        resultCipher: String? = nil, allowsTestData: Bool? = nil, isEnabled: Bool? = nil,
        claimsPolicy: String? = nil, deliveryMode: String? = nil, productCatalog: [String]? = nil,
        enrichment: String? = nil, idLookups: String? = nil, requiresUser: Bool? = nil, appleAppID: String? = nil
    ) {
        self.name = name
        self.bundleIDs = bundleIDs
        self.allowedEnvironments = allowedEnvironments
        self.verificationMode = verificationMode
        self.sharedSecret = sharedSecret
        self.appleIssuerID = appleIssuerID
        self.appleKeyID = appleKeyID
        self.applePrivateKeyPEM = applePrivateKeyPEM
        self.removeAppleCredentials = removeAppleCredentials
        self.resultCipher = resultCipher
        self.allowsTestData = allowsTestData
        self.isEnabled = isEnabled
        self.claimsPolicy = claimsPolicy
        self.deliveryMode = deliveryMode
        self.productCatalog = productCatalog
        self.enrichment = enrichment
        self.idLookups = idLookups
        self.requiresUser = requiresUser
        self.appleAppID = appleAppID
    }

    /// Settings checked and converted; secrets still in clear.
    struct Parsed {
        var name: String?
        var bundleIDs: [BundleID]?
        var allowedEnvironments: Set<StoreEnvironment>?
        var verificationMode: VerificationMode?
        /// `.some(nil)` removes the secret.
        var sharedSecret: String??
        var appleCredentials: (issuerID: String, keyID: String, privateKeyPEM: String)??
        var packageNames: [String]?
        /// `.some(nil)` removes them.
        var googleCredentials: GoogleServiceAccountKey??
        /// `.some(nil)` removes it.
        var googlePubSub: GooglePubSubPush??
        /// `.some(nil)` removes it.
        var googleLicenseKey: String??
        var resultCipher: ResultCipher?
        var allowsTestData: Bool?
        var testAnchors: [String]?
        var isEnabled: Bool?
        var claimsPolicy: ClaimsPolicy?
        var deliveryMode: DeliveryMode?
        /// `.some(nil)` removes the catalog.
        var productCatalog: [CatalogProduct]??
        var enrichment: Enrichment?
        var idLookups: IDLookups?
        var requiresUser: Bool?
        var storeUserIDs: Bool?
        /// `.some(nil)` removes it.
        var appleAppID: Int64??
        var refundPolicy: RefundAnswers.Policy?
        var consumptionConsent: Bool?
        var sampleContentProvided: Bool?
    }

    /// Checks every given field; throws ``ServiceError/Code/invalidArgument`` naming the first bad one.
    func parse() throws -> Parsed {
        var parsed = Parsed()
        if let name { parsed.name = try Validation.displayName(name, what: "app name") }
        if let bundleIDs {
            guard !bundleIDs.isEmpty else {
                throw ServiceError(.invalidArgument, "an app needs at least one bundle ID")
            }
            var seen = Set<BundleID>()
            parsed.bundleIDs = try bundleIDs.map { text in
                guard let id = BundleID(text) else {
                    throw ServiceError(
                        .invalidArgument,
                        "malformed bundle ID '\(Validation.printable(text))': expected reverse-DNS like com.example.app"
                    )
                }
                guard seen.insert(id).inserted else {
                    throw ServiceError(.invalidArgument, "bundle ID '\(text)' is given twice")
                }
                return id
            }
        }
        if let allowedEnvironments {
            guard !allowedEnvironments.isEmpty else {
                throw ServiceError(.invalidArgument, "an app needs at least one allowed environment")
            }
            parsed.allowedEnvironments = Set(
                try allowedEnvironments.map { text in
                    guard let environment = StoreEnvironment(configurationName: text), environment != .xcode else {
                        throw ServiceError(
                            .invalidArgument,
                            "unknown environment '\(Validation.printable(text))': expected production or sandbox")
                    }
                    return environment
                })
        }
        if let verificationMode {
            parsed.verificationMode = try Self.choice(
                verificationMode, "verification mode",
                expected: VerificationMode.allCases.map(\.rawValue).joined(separator: ", "))
        }
        if let sharedSecret {
            if sharedSecret.isEmpty {
                parsed.sharedSecret = .some(nil)
            } else {
                guard (8...128).contains(sharedSecret.utf8.count),
                    sharedSecret.utf8.allSatisfy({ Validation.isASCIIAlphanumeric($0) })
                else {
                    throw ServiceError(.invalidArgument, "shared secret must be 8-128 letters and digits")
                }
                parsed.sharedSecret = .some(sharedSecret)
            }
        }
        let appleFields = [appleIssuerID, appleKeyID, applePrivateKeyPEM]
        if removeAppleCredentials {
            guard appleFields.allSatisfy({ $0 == nil }) else {
                throw ServiceError(.invalidArgument, "cannot both set and remove App Store Server API credentials")
            }
            parsed.appleCredentials = .some(nil)
        } else if appleFields.contains(where: { $0 != nil }) {
            guard let appleIssuerID, let appleKeyID, let applePrivateKeyPEM else {
                throw ServiceError(
                    .invalidArgument, "App Store Server API credentials need the issuer ID, key ID and private key")
            }
            guard UUID(uuidString: appleIssuerID) != nil else {
                throw ServiceError(.invalidArgument, "Apple issuer ID must be a UUID")
            }
            guard (1...64).contains(appleKeyID.utf8.count),
                appleKeyID.utf8.allSatisfy({ Validation.isASCIIAlphanumeric($0) })
            else {
                throw ServiceError(.invalidArgument, "Apple key ID must be 1-64 letters and digits")
            }
            do {
                _ = try P256.Signing.PrivateKey(pemRepresentation: applePrivateKeyPEM)
            } catch {
                throw ServiceError(.invalidArgument, "Apple private key is not a P-256 private key in PEM")
            }
            parsed.appleCredentials = .some((appleIssuerID.lowercased(), appleKeyID, applePrivateKeyPEM))
        }
        if let packageNames {
            var seen = Set<String>()
            parsed.packageNames = try packageNames.map { text in
                guard GoogleServiceAccountKey.isPackageName(text) else {
                    throw ServiceError(
                        .invalidArgument,
                        "malformed Android package name '\(Validation.printable(text))': expected one like com.example.app"
                    )
                }
                guard seen.insert(text).inserted else {
                    throw ServiceError(.invalidArgument, "package name '\(text)' is given twice")
                }
                return text
            }
        }
        if removeGoogleCredentials {
            guard googleServiceAccountJSON == nil else {
                throw ServiceError(.invalidArgument, "cannot both set and remove the Google service account key")
            }
            parsed.googleCredentials = .some(nil)
        } else if let googleServiceAccountJSON {
            parsed.googleCredentials = .some(try GoogleServiceAccountKey(json: googleServiceAccountJSON))
        }
        if removeGooglePubSub {
            guard googlePubSubAudience == nil, googlePubSubServiceAccount == nil else {
                throw ServiceError(.invalidArgument, "cannot both set and remove the Pub/Sub push setting")
            }
            parsed.googlePubSub = .some(nil)
        } else if googlePubSubAudience != nil || googlePubSubServiceAccount != nil {
            guard let audience = googlePubSubAudience, let account = googlePubSubServiceAccount else {
                throw ServiceError(
                    .invalidArgument, "the Pub/Sub audience and service account are given together")
            }
            parsed.googlePubSub = .some(try GooglePubSubPush.parse(audience: audience, serviceAccount: account))
        }
        if let googleLicenseKey {
            let text = googleLicenseKey.filter { !$0.isWhitespace }
            parsed.googleLicenseKey = text.isEmpty ? .some(nil) : .some(try GoogleLicenseKey.check(text))
        }
        if let resultCipher {
            parsed.resultCipher = try Self.choice(resultCipher, "result cipher", expected: "aes-256-cbc or aes-256-gcm")
        }
        parsed.allowsTestData = allowsTestData
        if let testAnchors { parsed.testAnchors = try Self.fingerprints(testAnchors) }
        parsed.isEnabled = isEnabled
        parsed.requiresUser = requiresUser
        parsed.storeUserIDs = storeUserIDs
        if let appleAppID {
            let text = appleAppID.trimmingCharacters(in: .whitespaces)
            if text.isEmpty {
                parsed.appleAppID = .some(nil)
            } else {
                guard text.utf8.allSatisfy({ (0x30...0x39).contains($0) }), let id = Int64(text), id > 0 else {
                    throw ServiceError(.invalidArgument, "Apple app id must be App Store Connect's numeric app id")
                }
                parsed.appleAppID = .some(id)
            }
        }
        if let claimsPolicy {
            parsed.claimsPolicy = try Self.choice(
                claimsPolicy, "claims policy", expected: "off, flag, refuse or transfer")
        }
        if let deliveryMode {
            parsed.deliveryMode = try Self.choice(deliveryMode, "delivery mode", expected: "once or confirm")
        }
        if let productCatalog {
            var seen = Set<String>()
            let products = try productCatalog.map { entry in
                let product: CatalogProduct
                do {
                    product = try CatalogProduct(parsing: entry)
                } catch let error as CatalogError {
                    throw ServiceError(.invalidArgument, error.reason)
                }
                guard seen.insert(product.id).inserted else {
                    throw ServiceError(.invalidArgument, "product id '\(product.id)' is given twice")
                }
                return product
            }
            parsed.productCatalog = .some(products.isEmpty ? nil : products)
        }
        if let enrichment {
            parsed.enrichment = try Self.choice(enrichment, "enrichment", expected: "off or on")
        }
        if let idLookups {
            parsed.idLookups = try Self.choice(idLookups, "id look-ups", expected: "allow or refuse")
        }
        if let refundPolicy {
            parsed.refundPolicy = try Self.choice(
                refundPolicy, "refund policy", expected: "off, inform, decline, grant_full, grant_prorated or rules")
        }
        parsed.consumptionConsent = consumptionConsent
        parsed.sampleContentProvided = sampleContentProvided
        return parsed
    }

    /// `text` as one of a setting's named values; refused as "unknown WHAT 'text': expected EXPECTED".
    private static func choice<Value: RawRepresentable<String>>(_ text: String, _ what: String, expected: String)
        throws -> Value
    {
        guard let value = Value(rawValue: text) else {
            throw ServiceError(
                .invalidArgument, "unknown \(what) '\(Validation.printable(text))': expected \(expected)")
        }
        return value
    }

    /// Test anchor fingerprints checked and normalized: 64 hex digits each (colons and spaces ignored), uppercase,
    /// none of Apple's roots (their data is never test data), each once, sorted.
    static func fingerprints(_ texts: [String]) throws -> [String] {
        var seen = Set<String>()
        for text in texts {
            let hex = text.filter { $0 != ":" && !$0.isWhitespace }.uppercased()
            guard hex.utf8.count == 64, hex.utf8.allSatisfy({ Hex.isDigit($0) }) else {
                throw ServiceError(
                    .invalidArgument,
                    "malformed test anchor '\(Validation.printable(text))': expected a certificate's SHA-256 fingerprint (64 hex digits)"
                )
            }
            if let name = TrustAnchors.appleFingerprints[hex] {
                throw ServiceError(.invalidArgument, "\(name) is one of Apple's roots, not a test anchor")
            }
            seen.insert(hex)
        }
        return seen.sorted()
    }
}
