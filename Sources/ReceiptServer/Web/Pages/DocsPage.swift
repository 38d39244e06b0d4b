import Hummingbird
import Ink
import ReceiptService

/// `GET /docs`: docs/api.md (embedded at build time), rendered once; public.
enum DocsPage {
    struct View: PageView {
        var layout: LayoutView
        var html: String
    }

    static func register(on router: Router<ServerContext>, site: WebSite) {
        // The document is ours and fixed at build time: Markdown to HTML once, at start.
        let html = MarkdownParser().html(from: String(decoding: PackageResources.api_md, as: UTF8.self))
        router.get("/docs") { request, context in
            await site.answering(request, context: context) {
                return site.page(
                    "docs",
                    View(layout: await site.publicLayout("API documentation", request, context: context), html: html))
            }
        }
    }
}
