/// Per-field checking of ``AppSettings``, for forms: the same ``AppSettings/parse`` the CLI's settings go through,
/// one field at a time, so a page can show each bad field's error beside it.
extension AppSettings {
    /// A field of the settings, by its form name.
    public enum Field: String, Sendable, CaseIterable {
        case name, bundleIDs = "bundle_ids", environments, mode, sharedSecret = "shared_secret"
        case appleCredentials = "apple_credentials", cipher, claims, delivery, products, enrichment
        case idLookups = "id_lookups"
        case appleAppID = "apple_app_id"
        case refunds = "refund_policy"
        case packageNames = "package_names"
        case googleCredentials = "google_credentials"
        case googlePubSub = "google_pubsub"
        case googleLicenseKey = "google_license_key"
    }

    /// Each given field that does not parse, with its error; empty when every given field is good.
    public func problems() -> [Field: String] {
        var problems: [Field: String] = [:]
        for field in Field.allCases {
            do {
                _ = try only(field).parse()
            } catch let error as ServiceError {
                problems[field] = error.reason
            } catch {
                problems[field] = "\(error)"
            }
        }
        return problems
    }

    /// The names of the given fields, for the audit log (never their values: a secret may be among them).
    public var givenFields: [String] {
        Field.allCases.filter(isGiven).map(\.rawValue) + (allowsTestData != nil ? ["allows_test_data"] : [])
            + (testAnchors != nil ? ["test_anchors"] : [])
            + (isEnabled != nil ? ["enabled"] : []) + (requiresUser != nil ? ["requires_user"] : [])
            + (storeUserIDs != nil ? ["store_user_ids"] : [])
    }

    /// Whether `field` is given.
    private func isGiven(_ field: Field) -> Bool {
        switch field {
        case .name: name != nil
        case .bundleIDs: bundleIDs != nil
        case .environments: allowedEnvironments != nil
        case .mode: verificationMode != nil
        case .sharedSecret: sharedSecret != nil
        case .appleCredentials:
            appleIssuerID != nil || appleKeyID != nil || applePrivateKeyPEM != nil || removeAppleCredentials
        case .cipher: resultCipher != nil
        case .claims: claimsPolicy != nil
        case .delivery: deliveryMode != nil
        case .products: productCatalog != nil
        case .enrichment: enrichment != nil
        case .idLookups: idLookups != nil
        case .appleAppID: appleAppID != nil
        case .refunds: refundPolicy != nil || consumptionConsent != nil || sampleContentProvided != nil
        case .packageNames: packageNames != nil
        case .googleCredentials: googleServiceAccountJSON != nil || removeGoogleCredentials
        case .googlePubSub: googlePubSubAudience != nil || googlePubSubServiceAccount != nil || removeGooglePubSub
        case .googleLicenseKey: googleLicenseKey != nil
        }
    }

    /// These settings with only `field` given.
    private func only(_ field: Field) -> AppSettings {
        switch field {
        case .name: AppSettings(name: name)
        case .bundleIDs: AppSettings(bundleIDs: bundleIDs)
        case .environments: AppSettings(allowedEnvironments: allowedEnvironments)
        case .mode: AppSettings(verificationMode: verificationMode)
        case .sharedSecret: AppSettings(sharedSecret: sharedSecret)
        case .appleCredentials:
            AppSettings(
                appleIssuerID: appleIssuerID, appleKeyID: appleKeyID, applePrivateKeyPEM: applePrivateKeyPEM,
                removeAppleCredentials: removeAppleCredentials)
        case .cipher: AppSettings(resultCipher: resultCipher)
        case .claims: AppSettings(claimsPolicy: claimsPolicy)
        case .delivery: AppSettings(deliveryMode: deliveryMode)
        case .products: AppSettings(productCatalog: productCatalog)
        case .enrichment: AppSettings(enrichment: enrichment)
        case .idLookups: AppSettings(idLookups: idLookups)
        case .appleAppID: AppSettings(appleAppID: appleAppID)
        case .refunds:
            {
                var settings = AppSettings()
                settings.refundPolicy = refundPolicy
                settings.consumptionConsent = consumptionConsent
                settings.sampleContentProvided = sampleContentProvided
                return settings
            }()
        case .packageNames:
            {
                var settings = AppSettings()
                settings.packageNames = packageNames
                return settings
            }()
        case .googleCredentials:
            {
                var settings = AppSettings()
                settings.googleServiceAccountJSON = googleServiceAccountJSON
                settings.removeGoogleCredentials = removeGoogleCredentials
                return settings
            }()
        case .googlePubSub:
            {
                var settings = AppSettings()
                settings.googlePubSubAudience = googlePubSubAudience
                settings.googlePubSubServiceAccount = googlePubSubServiceAccount
                settings.removeGooglePubSub = removeGooglePubSub
                return settings
            }()
        case .googleLicenseKey:
            {
                var settings = AppSettings()
                settings.googleLicenseKey = googleLicenseKey
                return settings
            }()
        }
    }
}
