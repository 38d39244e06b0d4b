import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
import ReceiptServer
import ReceiptService
import ReceiptStore
import Testing

@Suite struct HealthTests {
    func withApplication(_ body: @Sendable (Application<RouterResponder<ServerContext>>) async throws -> Void)
        async throws
    {
        try await withTemporaryTenancy { tenancy, logger in
            try await body(
                try buildApplication(
                    configuration: ServerConfiguration.forTests(), tenancy: tenancy,
                    verification: VerificationService(verifier: nil, apple: nil), logger: logger))
        }
    }

    @Test func healthAndReadinessAnswerOK() async throws {
        try await withApplication { app in
            try await app.test(.router) { client in
                try await client.execute(uri: "/healthz", method: .get) { response in
                    #expect(response.status == .ok)
                    #expect(String(buffer: response.body) == #"{"status":"ok"}"#)
                }
                try await client.execute(uri: "/readyz", method: .get) { response in
                    #expect(response.status == .ok)
                    #expect(String(buffer: response.body) == #"{"status":"ready"}"#)
                }
                try await client.execute(uri: "/nope", method: .get) { response in
                    #expect(response.status == .notFound)
                }
            }
        }
    }
}
