import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import ReceiptService
import TestSupport
import Testing

/// An app made on the account screen with the new-app form left as it is gets exactly the settings `app add` gives
/// when none is named: every select's preselected option and every checkbox's state, submitted as a browser would.
@Suite struct AppFormDefaultsTests {
    /// What a browser submits for the form's selects and checkboxes left untouched: each select's selected option
    /// (its first when none is marked) and each checked checkbox.
    static func untouchedFields(of html: String) throws -> [(String, String)] {
        var fields: [(String, String)] = []
        let selects = try NSRegularExpression(pattern: #"<select id="[^"]*" name="([^"]*)">(.*?)</select>"#)
        let option = try NSRegularExpression(pattern: #"<option value="([^"]*)" (selected)?>"#)
        let text = html as NSString
        for select in selects.matches(in: html, range: NSRange(location: 0, length: text.length)) {
            let name = text.substring(with: select.range(at: 1))
            let options = text.substring(with: select.range(at: 2)) as NSString
            let found = option.matches(in: options as String, range: NSRange(location: 0, length: options.length))
            let chosen = found.first { $0.range(at: 2).location != NSNotFound } ?? found.first
            if let chosen { fields.append((name, options.substring(with: chosen.range(at: 1)))) }
        }
        let checkbox = try NSRegularExpression(
            pattern: #"<input type="checkbox" id="[^"]*" name="([^"]*)" value="([^"]*)" checked>"#)
        for box in checkbox.matches(in: html, range: NSRange(location: 0, length: text.length)) {
            fields.append((text.substring(with: box.range(at: 1)), text.substring(with: box.range(at: 2))))
        }
        return fields
    }

    @Test(arguments: StoreKind.available)
    func theNewAppFormPreselectsTheCLIsDefaults(kind: StoreKind) async throws {
        try await AccountScreen.run(kind) { screen in
            let browser = AccountScreen.Browser(screen)
            try await browser.signIn(email: "defaults@example.com")
            let form = String(buffer: try await browser.get("/account/apps/new").body)
            let untouched = try Self.untouchedFields(of: form)
            // Every setting of the form is there to compare (the selects: mode, cipher, claims, delivery,
            // enrichment, id look-ups; the environments' checkboxes).
            #expect(
                Set(untouched.map(\.0)).isSuperset(of: [
                    "mode", "cipher", "claims", "delivery", "enrichment", "id_lookups", "environments",
                ]))
            let created = try await browser.submit(
                "/account/apps", [("name", "Form"), ("bundle_ids", "com.example.form")] + untouched,
                from: "/account/apps/new")
            #expect(created.status == .seeOther)
            let fromForm = try #require(try await screen.tenancy.apps(account: "defaults@example.com").first)
            let fromCLI = try await screen.tenancy.addApp(
                account: "defaults@example.com", settings: AppSettings(bundleIDs: ["com.example.cli"]))
            #expect(fromForm.allowedEnvironments == fromCLI.allowedEnvironments)
            #expect(fromForm.verificationMode == fromCLI.verificationMode)
            #expect(fromForm.resultCipher == fromCLI.resultCipher)
            #expect(fromForm.allowsTestData == fromCLI.allowsTestData)
            #expect(fromForm.isEnabled == fromCLI.isEnabled)
            #expect(fromForm.claimsPolicy == fromCLI.claimsPolicy)
            #expect(fromForm.deliveryMode == fromCLI.deliveryMode)
            #expect(
                fromForm.productCatalog == fromCLI.productCatalog
                    || (fromForm.productCatalog ?? []).isEmpty && fromCLI.productCatalog == nil)
            #expect(fromForm.enrichment == fromCLI.enrichment)
            #expect(fromForm.idLookups == fromCLI.idLookups)
            #expect(fromForm.requiresUser == fromCLI.requiresUser)
            #expect(fromForm.appleAppID == fromCLI.appleAppID)
            // And those are the documented defaults.
            #expect(fromCLI.claimsPolicy == .flag && fromCLI.idLookups == .refuse)
        }
    }
}
