import Foundation
import Hummingbird
import ReceiptCore
import ReceiptService

/// `/account/apps/{id}/notifications`: Apple's notifications for an app, set up and proven by the customer: the URL to
/// paste into App Store Connect (production and sandbox), a test notification asked of Apple and its result, the
/// latest notifications received (Google Play's too), and recovery of what Apple could not deliver (Notification
/// History). An app with Android packages is shown its Pub/Sub push endpoint.
enum NotificationsPage {
    struct View: PageView {
        struct Row: Sendable {
            var received: String
            var type: String
            var subtype: String
            var environment: String
            var signed: String
            var source: String
        }

        var layout: LayoutView
        var appID: String
        var appName: String
        var url: String
        /// Google Play's push endpoint, for an app with Android packages.
        var googleURL: String?
        var googleConfigured: Bool
        var hasCredentials: Bool
        var notifications: [Row]
        var testToken: String?
        var testEnvironment: String?
        var message: String?
        var error: String?
    }

    /// The most notifications listed.
    static let listed = 50

    static func register(on router: Router<ServerContext>, site: WebSite) {
        router.get("/account/apps/:id/notifications") { request, context in
            await site.signedInPage(request, context: context) { signedIn, scope in
                site.page(
                    "notifications",
                    try await view(signedIn: signedIn, scope: scope, appID: try AppsPage.appID(context), site: site))
            }
        }

        for action in ["test", "test-status", "recover"] {
            router.post("/account/apps/:id/notifications/\(action)") { request, context in
                await site.signedInForm(request, context: context) { signedIn, scope, form in
                    let appID = try AppsPage.appID(context)
                    var page = try await view(signedIn: signedIn, scope: scope, appID: appID, site: site)
                    do {
                        switch action {
                        case "test", "test-status":
                            guard
                                let environment = form["environment"].flatMap(
                                    StoreEnvironment.init(configurationName:)),
                                environment != .xcode
                            else { throw ServiceError(.invalidArgument, "choose production or sandbox") }
                            let token =
                                action == "test"
                                ? try await scope.requestTestNotification(appID: appID, environment: environment)
                                : form.text("token") ?? ""
                            let attempts = try await scope.testNotificationStatus(
                                appID: appID, token: token, environment: environment)
                            page.testToken = token
                            page.testEnvironment = environment.configurationName
                            page.message =
                                attempts.isEmpty
                                ? "Apple accepted the request (token \(token)) and has not tried to send it yet: check again in a few seconds."
                                : "Apple's attempts to send test notification \(token): \(attempts.joined(separator: ", "))."
                        default:
                            let days = Int(form.text("days") ?? "") ?? 0
                            let report = try await scope.recoverNotifications(appID: appID, days: days)
                            page.message =
                                "Apple lists \(report.found) notifications it could not deliver: \(report.recorded) "
                                + "taken in now, \(report.duplicates) already here, \(report.refused.count) refused."
                            page = try await refreshed(page, signedIn: signedIn, scope: scope, appID: appID, site: site)
                        }
                    } catch let error as ServiceError
                        where error.code == .invalidArgument || error.code == .notConfigured
                    {
                        page.error = error.reason
                        return site.page("notifications", page, status: .unprocessableContent)
                    } catch let error as AppStoreServerAPIError {
                        page.error = "The App Store Server API refused: \(error.reason)"
                        return site.page("notifications", page, status: .badGateway)
                    }
                    return site.page("notifications", page)
                }
            }
        }
    }

    /// The page's list read again, its message and test kept.
    static func refreshed(_ page: View, signedIn: SignedIn, scope: CustomerScope, appID: UUID, site: WebSite)
        async throws -> View
    {
        var fresh = try await view(signedIn: signedIn, scope: scope, appID: appID, site: site)
        fresh.message = page.message
        fresh.testToken = page.testToken
        fresh.testEnvironment = page.testEnvironment
        return fresh
    }

    /// The page's values.
    static func view(signedIn: SignedIn, scope: CustomerScope, appID: UUID, site: WebSite) async throws -> View {
        let app = try await scope.app(id: appID)
        return View(
            layout: LayoutView(title: "Notifications of \(app.name)", signedIn: signedIn),
            appID: appID.uuidString.lowercased(), appName: app.name,
            url: "\(site.publicURL)/notifications/\(app.token)",
            googleURL: app.packageNames.isEmpty ? nil : "\(site.publicURL)/notifications/google/\(app.token)",
            googleConfigured: app.googlePubSub != nil, hasCredentials: app.appStoreServerCredentials != nil,
            notifications: try await scope.recentNotifications(appID: appID, limit: listed).map { notification in
                View.Row(
                    received: Format.time(notification.receivedAt), type: notification.type,
                    subtype: notification.subtype ?? "", environment: notification.environment.rawValue,
                    signed: Format.time(notification.signedDate),
                    source: notification.source == "history"
                        ? "recovered from Apple's history"
                        : notification.source == "google" ? "pushed by Google Play" : "sent by Apple")
            })
    }
}
