import AppleClients
import ArgumentParser
import Foundation
import Logging
import ReceiptCore
import ReceiptService

/// `receiptverify apple …`: asks Apple's App Store Server API with an app's stored credentials.
struct AppleCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "apple", abstract: "Ask Apple's App Store Server API with an app's credentials.",
        subcommands: [Transaction.self])

    struct Transaction: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Get one transaction from Apple (production, then the sandbox), verified; prints its signed payload as JSON."
        )
        @Option(help: "The app's token.") var app: String
        @Argument(help: "The transaction id.") var transactionID: String
        @Option(
            help: "App Store Server API production URL. Env: RECEIPTVERIFY_STOREKIT_PRODUCTION_URL. Default: Apple's")
        var productionURL: String?
        @Option(help: "App Store Server API sandbox URL. Env: RECEIPTVERIFY_STOREKIT_SANDBOX_URL. Default: Apple's")
        var sandboxURL: String?
        @OptionGroup var trust: TrustOptions
        @Flag(help: "Accept values signed by a non-Apple root in the anchor directory (a fake Apple in tests).")
        var allowTestData = false
        @OptionGroup var options: GlobalOptions

        func run() async throws {
            let environment = ProcessInfo.processInfo.environment
            var configuration = AppStoreServerAPIConfiguration()
            if let url = productionURL ?? environment["RECEIPTVERIFY_STOREKIT_PRODUCTION_URL"] {
                configuration.productionURL = url
            }
            if let url = sandboxURL ?? environment["RECEIPTVERIFY_STOREKIT_SANDBOX_URL"] {
                configuration.sandboxURL = url
            }
            configuration.acceptsTestSignatures = allowTestData
            let verifier = try await reportingErrors { ReceiptVerifier(anchors: try trust.anchors()) }
            let (found, credentials) = try await options.withTenancy { [app] tenancy in
                let found = try await tenancy.app(token: app)
                return (found, try tenancy.appleCredentials(of: found))
            }
            guard let credentials else {
                throw CommandFailure(
                    "app \(found.token) has no App Store Server API credentials (app update --apple-…)")
            }
            let client = AppStoreServerAPIClient(
                configuration: configuration, verifier: verifier, logger: Logger(label: "receiptverify.apple"))
            do {
                let signed = try await client.transactionInfo(
                    transactionID,
                    credentials: AppStoreServerAPICredentials(
                        issuerID: credentials.issuerID, keyID: credentials.keyID,
                        privateKeyPEM: credentials.privateKeyPEM, bundleID: found.bundleIDs[0].value))
                try await client.shutdown()
                print(JSONValue.object(signed.verified.receipt).encodedString)
            } catch let error as AppStoreServerAPIError {
                try? await client.shutdown()
                throw CommandFailure("\(error.code.rawValue): \(error.reason)")
            }
        }
    }
}
