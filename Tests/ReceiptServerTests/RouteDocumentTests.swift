import Clients
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import ReceiptCore
import ReceiptService
import ReceiptStore
import TestSupport
import Testing

@testable import ReceiptServer

/// The routes and the OpenAPI document agree, read from both in process: every routed path and method is documented,
/// every documented one is routed, each path's documented `Allow` is what the router takes, and the 405 answer of
/// every path names exactly those methods. The 405 table is the router's own (`KnownRoutes`), so these are the only
/// two lists.
@Suite struct RouteDocumentTests {
    /// The document's paths and the methods of each (upper case), and each path's documented `Allow`.
    static func documented() throws -> (methods: [String: Set<String>], allow: [String: String]) {
        let document = try #require(
            try JSONSerialization.jsonObject(with: Data(OpenAPIDocument.bytes)) as? [String: Any])
        let paths = try #require(document["paths"] as? [String: [String: Any]])
        let verbs: Set = ["get", "put", "post", "delete", "options", "head", "patch", "trace"]
        var methods: [String: Set<String>] = [:]
        var allow: [String: String] = [:]
        for (path, item) in paths {
            methods[path] = Set(item.keys.filter(verbs.contains).map { $0.uppercased() })
            allow[path] = (item["x-other-methods"] as? [String: Any])?["allow"] as? String
        }
        return (methods, allow)
    }

    /// The API's router as `serve` builds it (every optional route present, as in Server.swift), and its known routes.
    func withRouter(_ body: @Sendable (Router<ServerContext>, KnownRoutes) async throws -> Void) async throws {
        try await withTemporaryTenancy { tenancy, logger in
            let configuration = ServerConfiguration.forTests(publicMetrics: true)
            let components = ServerComponents(
                configuration: configuration, store: tenancy.store, metrics: ServerMetrics())
            let verifier = ReceiptVerifier(anchors: try TrustAnchors(encoded: []))
            let googlePlay = GooglePlayClient(configuration: GooglePlayConfiguration(), logger: logger)
            let routes = KnownRoutes()
            let router = try buildRouter(
                configuration: configuration, tenancy: tenancy,
                verification: VerificationService(verifier: verifier, apple: nil, googlePlay: googlePlay),
                components: components, routes: routes, logger: logger)
            do {
                try await body(router, routes)
            } catch {
                try await googlePlay.shutdown()
                throw error
            }
            try await googlePlay.shutdown()
        }
    }

    @Test func everyRoutedPathAndMethodIsDocumentedAndEveryDocumentedOneRouted() async throws {
        let documented = try Self.documented()
        try await withRouter { _, routes in
            let routed = routes.methods.mapValues { Set($0.map(\.rawValue)) }
            for (path, methods) in routed.sorted(by: { $0.key < $1.key }) {
                #expect(documented.methods[path] == methods, "\(path): routed \(methods.sorted())")
            }
            for (path, methods) in documented.methods.sorted(by: { $0.key < $1.key }) {
                #expect(routed[path] == methods, "\(path): documented \(methods.sorted())")
            }
            #expect(routed.count == documented.methods.count)
        }
    }

    @Test func everyPathAnswersAnyOtherMethodWith405NamingTheDocumentedAllow() async throws {
        let documented = try Self.documented()
        try await withRouter { router, routes in
            // The account screen's pages are routed too, but not in the 405 table: they are not the API's.
            #expect(router.routes.count > routes.methods.values.map(\.count).reduce(0, +))
            try await Application(router: router).test(.router) { client in
                for path in documented.methods.keys.sorted() {
                    let documentedAllow = try #require(documented.allow[path], "\(path) documents no x-other-methods")
                    let routedAllow = try #require(routes.methods[path]).map(\.rawValue).joined(separator: ", ")
                    #expect(documentedAllow == routedAllow, "\(path)")
                    let concrete = path.replacingOccurrences(of: "{token}", with: "app_0123")
                    for method in [HTTPRequest.Method.patch, .put, .delete, HTTPRequest.Method("QUERY")!] {
                        try await client.execute(uri: concrete, method: method) { response in
                            #expect(response.status == .methodNotAllowed, "\(method) \(concrete)")
                            #expect(response.headers[.allow] == documentedAllow, "\(method) \(concrete)")
                        }
                    }
                }
                // A path no route has is a 404, whatever the method.
                try await client.execute(uri: "/api/nothing", method: .patch) { response in
                    #expect(response.status == .notFound)
                }
            }
        }
    }
}
