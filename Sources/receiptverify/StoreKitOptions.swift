import Clients
import ArgumentParser
import Foundation
import Logging
import ReceiptCore
import ReceiptService

/// Where the App Store Server API is asked, shared by the commands that ask it (`apple …`, `notifications …`).
struct StoreKitOptions: ParsableArguments {
    @Option(help: "App Store Server API production URL. Env: RECEIPTVERIFY_STOREKIT_PRODUCTION_URL. Default: Apple's")
    var productionURL: String?
    @Option(help: "App Store Server API sandbox URL. Env: RECEIPTVERIFY_STOREKIT_SANDBOX_URL. Default: Apple's")
    var sandboxURL: String?
    @OptionGroup var trust: TrustOptions
    @Flag(help: "Accept values signed by a non-Apple root in the anchor directory (a fake Apple in tests).")
    var allowTestData = false

    /// The verifier of what Apple answers, with the trust options' anchors.
    func verifier() async throws -> ReceiptVerifier {
        try await reportingErrors { ReceiptVerifier(anchors: try trust.anchors()) }
    }

    /// A client of the configured hosts (to be shut down after use).
    func client(verifier: ReceiptVerifier) -> AppStoreServerAPIClient {
        let environment = ProcessInfo.processInfo.environment
        var configuration = AppStoreServerAPIConfiguration()
        if let url = productionURL ?? environment["RECEIPTVERIFY_STOREKIT_PRODUCTION_URL"] {
            configuration.productionURL = url
        }
        if let url = sandboxURL ?? environment["RECEIPTVERIFY_STOREKIT_SANDBOX_URL"] {
            configuration.sandboxURL = url
        }
        configuration.acceptsTestSignatures = allowTestData
        return AppStoreServerAPIClient(
            configuration: configuration, verifier: verifier, logger: Logger(label: "receiptverify.apple"))
    }

    /// The App Store Server API credentials of the app with `token`; a one-line error when it has none.
    func credentials(ofApp token: String, options: GlobalOptions) async throws -> AppStoreServerAPICredentials {
        let credentials = try await options.withTenancy { tenancy in
            try tenancy.serverAPICredentials(of: try await tenancy.app(token: token))
        }
        guard let credentials else {
            throw CommandFailure("app \(token) has no App Store Server API credentials (app update --apple-…)")
        }
        return credentials
    }

    /// Runs `body` with a client, shut down afterwards whatever happens; Apple's refusals become one-line errors.
    func withClient<T>(verifier: ReceiptVerifier, _ body: (AppStoreServerAPIClient) async throws -> T) async throws
        -> T
    {
        let client = client(verifier: verifier)
        do {
            let result = try await body(client)
            try await client.shutdown()
            return result
        } catch let error as AppStoreServerAPIError {
            try? await client.shutdown()
            throw CommandFailure("\(error.code.rawValue): \(error.reason)")
        } catch {
            try? await client.shutdown()
            throw error
        }
    }
}
