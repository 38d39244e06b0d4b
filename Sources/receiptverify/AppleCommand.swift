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
        @OptionGroup var storeKit: StoreKitOptions
        @OptionGroup var options: GlobalOptions

        func run() async throws {
            let verifier = try await storeKit.verifier()
            let credentials = try await storeKit.credentials(ofApp: app, options: options)
            let signed = try await storeKit.withClient(verifier: verifier) { client in
                try await client.transactionInfo(transactionID, credentials: credentials)
            }
            print(JSONValue.object(signed.verified.receipt).encodedString)
        }
    }
}
