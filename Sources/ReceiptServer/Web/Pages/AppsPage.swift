import Foundation
import Hummingbird
import ReceiptCore
import ReceiptService

/// `/account/apps`: the account's apps; adding and editing one (every setting the CLI has); its token; revealing and
/// rotating its result key and rotating its token; disabling and removing it. Every change goes through the same
/// ``TenancyService`` function as the CLI's, and a bad field answers the form again with that field's error.
enum AppsPage {
    struct ListView: PageView {
        struct Row: Sendable {
            var id: String
            var name: String
            var bundleIDs: String
            var mode: String
            var status: String
        }

        var layout: LayoutView
        var apps: [Row]
    }

    static func register(on router: Router<ServerContext>, site: WebSite) {
        router.get("/account/apps") { request, context in
            await site.signedInPage(request, context: context) { signedIn, scope in
                site.page(
                    "apps",
                    ListView(
                        layout: LayoutView(title: "Apps", signedIn: signedIn),
                        apps: try await scope.apps().map { app in
                            ListView.Row(
                                id: app.id.uuidString.lowercased(), name: app.name,
                                bundleIDs: app.bundleIDs.map(\.value).joined(separator: ", "),
                                mode: app.verificationMode.rawValue, status: app.isEnabled ? "enabled" : "disabled")
                        }))
            }
        }

        router.get("/account/apps/new") { request, context in
            await site.signedInPage(request, context: context) { signedIn, _ in
                site.page("app_form", AppForm(signedIn: signedIn, app: nil))
            }
        }

        router.post("/account/apps") { request, context in
            await site.signedInForm(request, context: context) { signedIn, scope, form in
                try await save(form, editing: nil, signedIn: signedIn, site: site) { try await scope.addApp($0) }
            }
        }

        router.get("/account/apps/:id") { request, context in
            await site.signedInPage(request, context: context) { signedIn, scope in
                let app = try await scope.app(id: try appID(context))
                return site.page("app", AppView(signedIn: signedIn, app: app))
            }
        }

        router.get("/account/apps/:id/edit") { request, context in
            await site.signedInPage(request, context: context) { signedIn, scope in
                let app = try await scope.app(id: try appID(context))
                return site.page("app_form", AppForm(signedIn: signedIn, app: app))
            }
        }

        router.post("/account/apps/:id") { request, context in
            await site.signedInForm(request, context: context) { signedIn, scope, form in
                let app = try await scope.app(id: try appID(context))
                return try await save(form, editing: app, signedIn: signedIn, site: site) {
                    try await scope.updateApp(id: app.id, $0)
                }
            }
        }

        router.post("/account/apps/:id/rotate-token") { request, context in
            await site.signedInForm(request, context: context) { signedIn, scope, _ in
                let app = try await scope.rotateToken(appID: try appID(context))
                var view = AppView(signedIn: signedIn, app: app)
                view.message = "The token was rotated: the old one no longer works."
                return site.page("app", view)
            }
        }

        router.post("/account/apps/:id/reveal-result-key") { request, context in
            await site.signedInForm(request, context: context) { signedIn, scope, form in
                let app = try await scope.app(id: try appID(context))
                if let refusal = unconfirmed(form, app: app, signedIn: signedIn, site: site) { return refusal }
                var view = AppView(signedIn: signedIn, app: app)
                view.resultKey = try await scope.revealResultKey(appID: app.id)
                return site.page("app", view)
            }
        }

        router.post("/account/apps/:id/rotate-result-key") { request, context in
            await site.signedInForm(request, context: context) { signedIn, scope, form in
                let app = try await scope.app(id: try appID(context))
                if let refusal = unconfirmed(form, app: app, signedIn: signedIn, site: site) { return refusal }
                var view = AppView(signedIn: signedIn, app: try await scope.rotateResultKey(appID: app.id))
                view.message = "The result key was rotated."
                return site.page("app", view)
            }
        }

        router.post("/account/apps/:id/enabled") { request, context in
            await site.signedInForm(request, context: context) { _, scope, form in
                let id = try appID(context)
                _ = try await scope.updateApp(id: id, AppSettings(isEnabled: form["enabled"] == "1"))
                return site.redirect(to: "/account/apps/\(id.uuidString.lowercased())")
            }
        }

        router.post("/account/apps/:id/remove") { request, context in
            await site.signedInForm(request, context: context) { signedIn, scope, form in
                let app = try await scope.app(id: try appID(context))
                if let refusal = unconfirmed(form, app: app, signedIn: signedIn, site: site) { return refusal }
                _ = try await scope.removeApp(id: app.id)
                return site.redirect(to: "/account/apps")
            }
        }
    }

    /// Saves an app form through `change` (add or update): a bad field answers the form again with each field's
    /// error and what was typed, and nothing is written; else the browser goes to the app's page.
    static func save(
        _ form: WebForm, editing app: App?, signedIn: SignedIn, site: WebSite,
        _ change: (AppSettings) async throws -> App
    ) async throws -> Response {
        let settings = AppForm.settings(from: form, editing: app)
        var view = AppForm(signedIn: signedIn, app: app, form: form, problems: settings.problems())
        if view.errors.isEmpty {
            do {
                let saved = try await change(settings)
                return site.redirect(to: "/account/apps/\(saved.id.uuidString.lowercased())")
            } catch let error as ServiceError where error.code == .invalidArgument {
                view.formError = error.reason
            }
        }
        return site.page("app_form", view, status: .unprocessableContent)
    }

    /// The app's page again with an error when a destructive form's confirmation box was not ticked; nil when it was.
    static func unconfirmed(_ form: WebForm, app: App, signedIn: SignedIn, site: WebSite) -> Response? {
        guard !form.isChecked("confirm") else { return nil }
        var view = AppView(signedIn: signedIn, app: app)
        view.error = "Tick the box to confirm first."
        return site.page("app", view, status: .unprocessableContent)
    }

    /// The app id of the path; a malformed one is an unknown app (404).
    static func appID(_ context: ServerContext) throws -> UUID {
        guard let id = context.parameters.get("id").flatMap(UUID.init(uuidString:)) else {
            throw ServiceError(.unknownApp)
        }
        return id
    }
}

/// An app's page: its settings as words, its token, and the result key when just revealed.
struct AppView: PageView {
    var layout: LayoutView
    var id: String
    var name: String
    var token: String
    var bundleIDs: String
    var environments: String
    var mode: String
    var sharedSecret: String
    var credentials: String
    var packageNames: String
    var googleCredentials: String
    var googlePubSub: String
    var cipher: String
    var testData: String
    var claims: String
    var delivery: String
    var products: String
    var enrichment: String
    var idLookups: String
    var refunds: String
    var requiresUser: String
    var storeUserIDs: String
    var appleAppID: String
    var status: String
    var locked: Bool
    var toggleValue: String
    var toggleLabel: String
    var resultKey: String?
    var message: String?
    var error: String?

    init(signedIn: SignedIn, app: App) {
        layout = LayoutView(title: app.name, signedIn: signedIn)
        id = app.id.uuidString.lowercased()
        name = app.name
        token = app.token
        bundleIDs = app.bundleIDs.map(\.value).joined(separator: ", ")
        environments = app.allowedEnvironments.map(\.configurationName).sorted().joined(separator: ", ")
        mode = app.verificationMode.rawValue
        sharedSecret = app.sharedSecret == nil ? "none" : "set"
        credentials = app.appStoreServerCredentials.map { "key \($0.keyID)" } ?? "none"
        packageNames = app.packageNames.isEmpty ? "none" : app.packageNames.joined(separator: ", ")
        googleCredentials = app.googlePlayCredentials.map { "service account \($0.clientEmail)" } ?? "none"
        googlePubSub =
            app.googlePubSub.map {
                "pushed to /notifications/google/\(app.token) by \($0.serviceAccount), audience \($0.audience)"
            } ?? "off"
        cipher = app.resultCipher.rawValue
        testData =
            !app.allowsTestData
            ? "refused"
            : app.testAnchors.isEmpty
                ? "refused: no test root is bound to the app (the operator binds one)"
                : "accepted under the test root\(app.testAnchors.count == 1 ? "" : "s") the operator bound: "
                    + app.testAnchors.map { String($0.prefix(16)) + "…" }.joined(separator: ", ")
        claims = app.claimsPolicy.rawValue
        delivery = app.deliveryMode.rawValue
        products = app.catalog?.map(\.description).joined(separator: ", ") ?? "any product"
        enrichment = app.enrichment.rawValue
        idLookups =
            switch app.idLookups {
            case .allow:
                "allow: a request with lookup=true and a transaction_id or app_transaction_id but no receipt is "
                    + "answered from Apple (an id alone does not prove the caller holds the purchase)"
            case .refuse: "refuse: every answer is from a receipt or signed transaction"
            }
        let answers = app.refundAnswers
        refunds =
            answers.policy == .off
            ? "off: recorded and passed on (consumption.requested), not answered"
            : "\(answers.policy.rawValue): answered with the customers' consent"
                + (answers.sampleContentProvided ? ", a sample provided" : "")
        requiresUser =
            app.requiresUser
            ? "required: /api answers 400 without app_user_id (or a StoreKit 2 appAccountToken) while claims are checked"
            : "optional: a request without a user is answered, its purchases neither claimed nor checked"
        storeUserIDs =
            app.storeUserIDs
            ? "the backend's: a request without app_user_id claims for the purchase's appAccountToken or obfuscatedExternalAccountId"
            : "not the backend's: only a request's app_user_id claims"
        appleAppID =
            app.appleAppID.map { "\($0): Production notifications must state it" }
            ?? "not bound: notifications are taken by bundle ID alone"
        status = app.isLocked ? "locked by the operator" : app.isEnabled ? "enabled" : "disabled"
        locked = app.isLocked
        toggleValue = app.isEnabled ? "0" : "1"
        toggleLabel = app.isEnabled ? "Disable the app" : "Enable the app"
    }
}

/// The add and edit form of an app: its values (from the app, or as the browser sent them after an error), the
/// choices of each select, and each field's error.
struct AppForm: PageView {
    struct Option: Sendable {
        var value: String
        var label: String
        var selected: Bool
    }

    var layout: LayoutView
    var heading: String
    var action: String
    var editing: Bool
    var name: String
    var bundleIDs: String
    var production: Bool
    var sandbox: Bool
    var modes: [Option]
    var ciphers: [Option]
    var claims: [Option]
    var deliveries: [Option]
    var enrichments: [Option]
    var idLookups: [Option]
    var refundPolicies: [Option]
    var consumptionConsent: Bool
    var sampleContentProvided: Bool
    var allowsTestData: Bool
    /// Whether a test root is bound to the app, so the customer may switch test data (else it is the operator's).
    var testDataBound: Bool
    var requiresUser: Bool
    var storeUserIDs: Bool
    var enabled: Bool
    var products: String
    var hasSharedSecret: Bool
    var hasCredentials: Bool
    var appleIssuerID: String
    var appleKeyID: String
    var appleAppID: String
    var packageNames: String
    var hasGoogleCredentials: Bool
    var googleServiceAccount: String
    var googlePubSubAudience: String
    var googlePubSubServiceAccount: String
    var googleLicenseKey: String
    var errors: [String: String]
    var formError: String?

    init(signedIn: SignedIn, app: App?, form: WebForm? = nil, problems: [AppSettings.Field: String] = [:]) {
        let editing = app != nil
        layout = LayoutView(title: editing ? "Edit \(app?.name ?? "")" : "Add an app", signedIn: signedIn)
        heading = editing ? "Edit \(app?.name ?? "")" : "Add an app"
        action = app.map { "/account/apps/\($0.id.uuidString.lowercased())" } ?? "/account/apps"
        self.editing = editing
        let environments =
            form.map { Set($0.values("environments")) }
            ?? Set((app?.allowedEnvironments ?? AppDefaults.allowedEnvironments).map(\.configurationName))
        name = form?["name"] ?? app?.name ?? ""
        bundleIDs = form?["bundle_ids"] ?? app?.bundleIDs.map(\.value).joined(separator: "\n") ?? ""
        production = environments.contains("production")
        sandbox = environments.contains("sandbox")
        func options(_ values: [String], selected: String) -> [Option] {
            values.map { Option(value: $0, label: $0, selected: $0 == selected) }
        }
        modes = options(
            VerificationMode.allCases.map(\.rawValue),
            selected: form?["mode"] ?? app?.verificationMode.rawValue ?? AppDefaults.verificationMode.rawValue)
        ciphers = options(
            ResultCipher.allCases.map(\.rawValue),
            selected: form?["cipher"] ?? app?.resultCipher.rawValue ?? AppDefaults.resultCipher.rawValue)
        claims = options(
            ClaimsPolicy.allCases.map(\.rawValue),
            selected: form?["claims"] ?? app?.claimsPolicy.rawValue ?? AppDefaults.claimsPolicy.rawValue)
        deliveries = options(
            DeliveryMode.allCases.map(\.rawValue),
            selected: form?["delivery"] ?? app?.deliveryMode.rawValue ?? AppDefaults.deliveryMode.rawValue)
        enrichments = options(
            Enrichment.allCases.map(\.rawValue),
            selected: form?["enrichment"] ?? app?.enrichment.rawValue ?? AppDefaults.enrichment.rawValue)
        idLookups = options(
            IDLookups.allCases.map(\.rawValue),
            selected: form?["id_lookups"] ?? app?.idLookups.rawValue ?? AppDefaults.idLookups.rawValue)
        refundPolicies = options(
            RefundAnswers.Policy.allCases.map(\.rawValue),
            selected: form?["refund_policy"] ?? app?.refundAnswers.policy.rawValue ?? "off")
        consumptionConsent =
            form.map { $0.isChecked("consumption_consent") } ?? app?.refundAnswers.customerConsented ?? false
        sampleContentProvided =
            form.map { $0.isChecked("sample_content_provided") } ?? app?.refundAnswers.sampleContentProvided ?? false
        allowsTestData =
            form.map { $0.isChecked("allows_test_data") } ?? app?.allowsTestData ?? AppDefaults.allowsTestData
        testDataBound = app?.testAnchors.isEmpty == false
        if !testDataBound { allowsTestData = app?.allowsTestData ?? AppDefaults.allowsTestData }
        requiresUser = form.map { $0.isChecked("requires_user") } ?? app?.requiresUser ?? AppDefaults.requiresUser
        storeUserIDs = form.map { $0.isChecked("store_user_ids") } ?? app?.storeUserIDs ?? AppDefaults.storeUserIDs
        enabled = form.map { $0.isChecked("enabled") } ?? app?.isEnabled ?? true
        products = form?["products"] ?? app?.catalog?.map(\.description).joined(separator: "\n") ?? ""
        hasSharedSecret = app?.sharedSecret != nil
        hasCredentials = app?.appStoreServerCredentials != nil
        appleIssuerID = form?["apple_issuer_id"] ?? app?.appStoreServerCredentials?.issuerID ?? ""
        appleKeyID = form?["apple_key_id"] ?? app?.appStoreServerCredentials?.keyID ?? ""
        appleAppID = form?["apple_app_id"] ?? app?.appleAppID.map(String.init) ?? ""
        packageNames = form?["package_names"] ?? app?.packageNames.joined(separator: "\n") ?? ""
        hasGoogleCredentials = app?.googlePlayCredentials != nil
        googleServiceAccount = app?.googlePlayCredentials?.clientEmail ?? ""
        googlePubSubAudience = form?["google_pubsub_audience"] ?? app?.googlePubSub?.audience ?? ""
        googlePubSubServiceAccount = form?["google_pubsub_service_account"] ?? app?.googlePubSub?.serviceAccount ?? ""
        googleLicenseKey = form?["google_license_key"] ?? app?.googleLicenseKey ?? ""
        errors = Dictionary(uniqueKeysWithValues: problems.map { ($0.key.rawValue, $0.value) })
    }

    /// The settings a form gives: every field of the form (the CLI's defaults on creation); blank secrets keep the
    /// current ones when editing.
    static func settings(from form: WebForm, editing app: App?) -> AppSettings {
        // A product with terms keeps its commas (`ID=TYPE:ENTITLEMENT,…`); bare ids may still be comma-separated.
        func products(_ text: String?) -> [String] {
            (text ?? "").split(whereSeparator: { $0 == "\n" || $0 == "\r" || $0 == " " }).flatMap { entry in
                entry.contains("=") ? [String(entry)] : entry.split(separator: ",").map(String.init)
            }
        }
        func lines(_ name: String) -> [String] {
            (form[name] ?? "").split(whereSeparator: { $0 == "\n" || $0 == "\r" || $0 == "," || $0 == " " })
                .map(String.init)
        }
        let issuer = form.text("apple_issuer_id")
        let keyID = form.text("apple_key_id")
        let privateKey = form.text("apple_private_key")
        // Credentials are replaced only when the key is given: the form shows the issuer and key ids, not the key.
        let replacesCredentials =
            privateKey != nil || (app?.appStoreServerCredentials == nil && (issuer ?? keyID) != nil)
        var settings = AppSettings(
            name: form.text("name"), bundleIDs: lines("bundle_ids"), allowedEnvironments: form.values("environments"),
            verificationMode: form["mode"],
            sharedSecret: form.isChecked("remove_shared_secret") ? "" : form.text("shared_secret"),
            appleIssuerID: replacesCredentials ? issuer : nil, appleKeyID: replacesCredentials ? keyID : nil,
            applePrivateKeyPEM: replacesCredentials ? privateKey : nil,
            removeAppleCredentials: form.isChecked("remove_apple_credentials"), resultCipher: form["cipher"],
            // Without a bound test root the switch is the operator's (its box is disabled, so a browser sends nothing):
            // kept as it is unless the form asks to accept test data, which the customer's scope refuses.
            allowsTestData: app?.testAnchors.isEmpty == false || form.isChecked("allows_test_data")
                ? form.isChecked("allows_test_data") : nil,
            isEnabled: app == nil ? nil : form.isChecked("enabled"),
            claimsPolicy: form["claims"], deliveryMode: form["delivery"], productCatalog: products(form["products"]),
            enrichment: form["enrichment"], idLookups: form["id_lookups"],
            requiresUser: form.isChecked("requires_user"),
            appleAppID: form["apple_app_id"]
        )
        settings.storeUserIDs = form.isChecked("store_user_ids")
        settings.refundPolicy = form["refund_policy"]
        settings.consumptionConsent = form.isChecked("consumption_consent")
        settings.sampleContentProvided = form.isChecked("sample_content_provided")
        settings.packageNames = lines("package_names")
        // The key is replaced only when one is given: the form shows the service account, not its key.
        settings.googleServiceAccountJSON = form.text("google_service_account_key")
        settings.removeGoogleCredentials = form.isChecked("remove_google_credentials")
        // The licensing key is public and shown: the field's text is the key, blank removes it.
        settings.googleLicenseKey = form["google_license_key"] ?? (app == nil ? nil : "")
        // Real-time Developer Notifications: both fields set them, both blank remove them (one alone is refused).
        let audience = form.text("google_pubsub_audience")
        let pushAccount = form.text("google_pubsub_service_account")
        if audience == nil && pushAccount == nil {
            settings.removeGooglePubSub = app?.googlePubSub != nil
        } else {
            settings.googlePubSubAudience = audience
            settings.googlePubSubServiceAccount = pushAccount
        }
        return settings
    }
}
