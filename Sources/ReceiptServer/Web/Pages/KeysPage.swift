import Foundation
import Hummingbird
import ReceiptService

/// `/account/keys`: the account's API keys (label, prefix, last use), creating one (its clear text shown once) and
/// revoking one.
enum KeysPage {
    struct View: PageView {
        struct Key: Sendable {
            var id: String
            var label: String
            var prefix: String
            var created: String
            var lastUsed: String
            var status: String
            var revoked: Bool
        }

        var layout: LayoutView
        var keys: [Key]
        var newKey: String?
        var label: String = ""
        var labelError: String?
    }

    static func register(on router: Router<ServerContext>, site: WebSite) {
        router.get("/account/keys") { request, context in
            await site.signedInPage(request, context: context) { signedIn, scope in
                site.page("keys", try await view(signedIn, scope))
            }
        }

        router.post("/account/keys") { request, context in
            await site.signedInForm(request, context: context) { signedIn, scope, form in
                let label = form.text("label")
                do {
                    let created = try await scope.createKey(label: label)
                    var view = try await view(signedIn, scope)
                    view.newKey = created.clearText
                    return site.page("keys", view)
                } catch let error as ServiceError where error.code == .invalidArgument {
                    var view = try await view(signedIn, scope)
                    view.label = label ?? ""
                    view.labelError = error.reason
                    return site.page("keys", view, status: .unprocessableContent)
                }
            }
        }

        router.post("/account/keys/:id/revoke") { request, context in
            await site.signedInForm(request, context: context) { _, scope, _ in
                guard let id = context.parameters.get("id").flatMap(UUID.init(uuidString:)) else {
                    throw ServiceError(.unknownKey)
                }
                // Only the account's own keys are looked in: another account's key id is unknown (404), as an id that
                // does not exist.
                _ = try await scope.revokeKey(id: id)
                return site.redirect(to: "/account/keys")
            }
        }
    }

    static func view(_ signedIn: SignedIn, _ scope: CustomerScope) async throws -> View {
        View(
            layout: LayoutView(title: "API keys", signedIn: signedIn),
            keys: try await scope.keys().reversed().map { key in
                View.Key(
                    id: key.id.uuidString.lowercased(), label: key.label ?? "", prefix: key.prefix,
                    created: Format.time(key.createdAt), lastUsed: Format.time(key.lastUsedAt),
                    status: key.isRevoked ? "revoked \(Format.time(key.revokedAt))" : "active", revoked: key.isRevoked)
            })
    }
}
