import Mustache
import ReceiptService

/// The account screen's Mustache templates, embedded in the binary (`Templates/`, listed in ``PageTemplates/sources``).
/// Every page template extends `layout` (`{{<layout}}…{{/layout}}`) and fills its `content` block.
struct PageTemplates: Sendable {
    /// Each template's name and text: a new page adds its line here.
    static let sources: [(name: String, bytes: [UInt8])] = [
        ("layout", PackageResources.layout_mustache),
        ("error", PackageResources.error_mustache),
        ("signin", PackageResources.signin_mustache),
        ("link", PackageResources.link_mustache),
        ("plans", PackageResources.plans_mustache),
        ("docs", PackageResources.docs_mustache),
        ("account", PackageResources.account_mustache),
        ("keys", PackageResources.keys_mustache),
        ("apps", PackageResources.apps_mustache),
        ("app_form", PackageResources.app_form_mustache),
        ("app", PackageResources.app_mustache),
        ("transactions", PackageResources.transactions_mustache),
        ("webhooks", PackageResources.webhooks_mustache),
        ("notifications", PackageResources.notifications_mustache),
        ("customers", PackageResources.customers_mustache),
    ]

    private let library: MustacheLibrary

    /// Parses every template; a template that does not parse stops the server at start (tests catch it first).
    init() throws {
        var library = MustacheLibrary()
        for (name, bytes) in Self.sources {
            try library.register(String(decoding: bytes, as: UTF8.self), named: name)
        }
        self.library = library
    }

    /// The template rendered with `view` (HTML-escaped unless the template says `{{{…}}}`).
    func render(_ view: some PageView, template: String) -> String {
        library.render(view, withTemplate: template) ?? ""
    }
}

/// What every page's view carries: the layout's values.
protocol PageView: Sendable {
    var layout: LayoutView { get }
}

/// The layout's values: the title, and who is signed in (for the navigation and the sign-out form).
struct LayoutView: Sendable {
    var title: String
    var signedIn: Bool
    var email: String
    var csrf: String

    init(title: String, signedIn: SignedIn?) {
        self.title = title
        self.signedIn = signedIn != nil
        email = signedIn?.account.email ?? ""
        csrf = signedIn?.csrfToken ?? ""
    }
}

/// An error page's values.
struct ErrorView: PageView {
    var layout: LayoutView
    var status: Int
    var message: String
}
