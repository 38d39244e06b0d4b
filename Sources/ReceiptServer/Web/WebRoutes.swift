import Clients
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import ReceiptService

/// Adds the account screen to the router: every page of `Pages/`, and the stylesheet and script.
func addWebRoutes(to router: Router<ServerContext>, site: WebSite) {
    let assets: [(path: String, type: String, body: ByteBuffer)] = [
        ("/static/style.css", "text/css; charset=utf-8", ByteBuffer(bytes: PackageResources.style_css)),
        ("/static/copy.js", "text/javascript; charset=utf-8", ByteBuffer(bytes: PackageResources.copy_js)),
    ]
    for asset in assets {
        router.get(RouterPath(asset.path)) { _, _ in
            Response(
                status: .ok,
                headers: [
                    .contentType: asset.type, .cacheControl: "public, max-age=3600",
                    HTTPField.Name("X-Content-Type-Options")!: "nosniff",
                ],
                body: .init(byteBuffer: asset.body))
        }
    }
    SignInPage.register(on: router, site: site)
    AccountPage.register(on: router, site: site)
    KeysPage.register(on: router, site: site)
    AppsPage.register(on: router, site: site)
    WebhooksPage.register(on: router, site: site)
    NotificationsPage.register(on: router, site: site)
    TransactionsPage.register(on: router, site: site)
    TransactionsPage.registerExport(on: router, site: site)
    CustomersPage.register(on: router, site: site)
    PlansPage.register(on: router, site: site)
    DocsPage.register(on: router, site: site)
}
