import Clients
import Foundation
import ReceiptServer
import ReceiptService
import ReceiptStore
import Testing

/// `serve`'s flags and environment read into a ``ServerConfiguration``: defaults, the flag over the variable, and a
/// one-line refusal naming the setting for every bad value.
@Suite struct ServeSettingsTests {
    func configuration(_ flags: [String: String?] = [:], environment: [String: String] = [:], descriptors: Int = 4096)
        throws -> ServerConfiguration
    {
        try ServeSettings(flags: flags, environment: environment).configuration(
            store: .sqlite(path: "rv.sqlite"), trustAnchorDirectory: nil, replacesBuiltInRoots: false,
            descriptorLimit: descriptors)
    }

    @Test func theAppStoreServerAPISettings() throws {
        let defaults = try configuration()
        #expect(defaults.storeKit.productionURL == "https://api.storekit.apple.com")
        #expect(defaults.storeKit.productionRequestsPerSecond == 40 && defaults.storeKit.sandboxRequestsPerSecond == 4)
        #expect(defaults.storeKit.cacheLifetime == .seconds(30) && defaults.appleFinishFirstRetry == .seconds(60))
        // Apple's limits are a ceiling: 50 a second in production, 5 in the sandbox.
        for (flag, value) in [
            ("storekit-requests-per-second", "51"), ("storekit-sandbox-requests-per-second", "6"),
            ("storekit-production-url", "ftp://x"), ("storekit-timeout", "0"),
        ] {
            #expect(throws: ServeSettings.Invalid.self) { try configuration([flag: value]) }
        }
        // Signed answers may chain to --trust-anchors roots only when neither host is Apple's (a stand-in for tests).
        func testSignatures(_ production: String, _ sandbox: String, anchors: String? = "/anchors") throws -> Bool {
            try ServeSettings(
                flags: ["storekit-production-url": production, "storekit-sandbox-url": sandbox], environment: [:]
            ).configuration(
                store: .sqlite(path: "rv.sqlite"), trustAnchorDirectory: anchors, replacesBuiltInRoots: false,
                descriptorLimit: 4096
            ).storeKit.acceptsTestSignatures
        }
        #expect(try testSignatures("http://127.0.0.1:9/production", "http://127.0.0.1:9/sandbox"))
        #expect(try !testSignatures("http://127.0.0.1:9/production", "http://127.0.0.1:9/sandbox", anchors: nil))
        #expect(try !testSignatures("http://127.0.0.1:9/production", "https://API.storekit-sandbox.apple.com/"))
        #expect(try !testSignatures("https://api.storekit.apple.com/", "http://127.0.0.1:9/sandbox"))
    }

    @Test func theAccountScreensSettings() throws {
        let defaults = try configuration()
        #expect(defaults.openID == nil && defaults.publicURL == nil)
        #expect(defaults.effectivePublicURL == "http://127.0.0.1:8080")
        #expect(defaults.customers.allowsSelfSignUp && defaults.customers.sessionIdleTimeout == 7_200)
        let secret = ["RECEIPTVERIFY_OIDC_CLIENT_SECRET": "s3cret"]
        let configured = try configuration(
            [
                "public-url": "https://rv.example/", "oidc-issuer": "https://accounts.google.com",
                "oidc-client-id": "id", "self-signup": "off", "session-idle-minutes": "5",
            ], environment: secret)
        #expect(configured.effectivePublicURL == "https://rv.example")
        #expect(
            configured.openID?.issuer == "https://accounts.google.com" && configured.openID?.clientSecret == "s3cret")
        #expect(!configured.customers.allowsSelfSignUp && configured.customers.sessionIdleTimeout == 300)
        // An issuer needs the public URL (the redirect URI), a client id and its secret (from the environment only).
        for (flags, environment) in [
            (["oidc-issuer": "https://accounts.google.com", "oidc-client-id": "id"], secret),
            (["public-url": "https://rv.example", "oidc-issuer": "https://accounts.google.com"], secret),
            (
                [
                    "public-url": "https://rv.example", "oidc-issuer": "https://accounts.google.com",
                    "oidc-client-id": "id",
                ], [:]
            ),
            (["self-signup": "maybe"], secret), (["oidc-client-id": "id"], secret),
        ] as [([String: String?], [String: String])] {
            #expect(throws: ServeSettings.Invalid.self, "\(flags)") {
                try configuration(flags, environment: environment)
            }
        }
    }

    @Test func defaultsAreTheDocumentedOnes() throws {
        let configuration = try configuration()
        #expect(configuration.hostname == "127.0.0.1" && configuration.port == 8080)
        #expect(configuration.maximumBodySize == 2 << 20 && configuration.maximumBodyMemory == 64 << 20)
        #expect(configuration.authenticationCacheTTL == .seconds(5) && configuration.idleTimeout == .seconds(30))
        #expect(configuration.maximumConnections == 3072)
        #expect(configuration.requestTimeout == .seconds(30) && configuration.failedAuthenticationsPerSecond == 10)
        #expect(configuration.databaseTimeout == .seconds(2) && configuration.shutdownTimeout == .seconds(25))
        #expect(configuration.usageFlushInterval == .seconds(1))
        #expect(configuration.apple.productionURL == "https://buy.itunes.apple.com/verifyReceipt")
        #expect(configuration.apple.maximumAttempts == 3 && configuration.apple.totalTimeout == .seconds(15))
        #expect(configuration.metricsPort == nil && configuration.metricsHostname == "127.0.0.1")
        #expect(!configuration.publicMetrics && configuration.trustedProxies.isEmpty)
        #expect(configuration.retention == RetentionPolicy())
    }

    @Test func theFlagWinsOverTheVariableAndZeroMeansNone() throws {
        let configuration = try configuration(
            ["port": "9000", "idle-timeout": "0", "metrics-port": "9100"],
            environment: [
                "RECEIPTVERIFY_PORT": "7000", "RECEIPTVERIFY_DATABASE_TIMEOUT_MS": "0",
                "RECEIPTVERIFY_AUTH_FAILURES_PER_SECOND": "0", "RECEIPTVERIFY_METRICS_HOSTNAME": "0.0.0.0",
                "RECEIPTVERIFY_APPLE_SANDBOX_URL": "http://127.0.0.1:9/verifyReceipt",
                "RECEIPTVERIFY_METRICS_PUBLIC": "on", "RECEIPTVERIFY_TRUSTED_PROXIES": "127.0.0.1/32, fd00::/8",
            ])
        #expect(configuration.publicMetrics)
        #expect(configuration.trustedProxies.networks.map(\.description) == ["127.0.0.1/32", "fd00::/8"])
        #expect(configuration.port == 9000 && configuration.idleTimeout == nil)
        #expect(configuration.databaseTimeout == nil && configuration.failedAuthenticationsPerSecond == nil)
        #expect(configuration.metricsPort == 9100 && configuration.metricsHostname == "0.0.0.0")
        #expect(configuration.apple.sandboxURL == "http://127.0.0.1:9/verifyReceipt")
    }

    @Test(
        arguments: [
            (["port": "80000"], [:], "--port must be a whole number in 0...65535"),
            ([:], ["RECEIPTVERIFY_MAX_BODY_SIZE": "lots"], "RECEIPTVERIFY_MAX_BODY_SIZE must be a whole number in"),
            (["apple-production-url": "ftp://apple"], [:], "--apple-production-url must be an http(s) URL"),
            (["max-connections": "5000"], [:], "--max-connections must be a whole number in 1...4032"),
            (["max-body-size": "4096", "max-body-memory": "1024"], [:], "--max-body-memory must be a whole number in"),
            (["port": "9000", "metrics-port": "9000"], [:], "the metrics port must differ from the main port"),
            (
                ["trusted-proxies": "10.0.0.0/8,10.0.0.0/40"], [:],
                "--trusted-proxies: '10.0.0.0/40' is not an IP address"
            ),
            ([:], ["RECEIPTVERIFY_METRICS_PUBLIC": "maybe"], "RECEIPTVERIFY_METRICS_PUBLIC must be on or off"),
            (["retention-notifications-days": "3"], [:], "--retention-notifications-days must be 0 (for ever) or"),
        ] as [([String: String], [String: String], String)])
    func aBadValueIsRefusedNamingItsSetting(flags: [String: String], environment: [String: String], message: String) {
        do {
            _ = try configuration(flags, environment: environment)
            Issue.record("accepted \(flags) \(environment)")
        } catch let invalid as ServeSettings.Invalid {
            #expect(invalid.description.hasPrefix(message), "\(invalid.description)")
        } catch {
            Issue.record("unexpected \(error)")
        }
    }
}

/// The log handler's timestamp is `StreamLogHandler`'s: local time to the second with its UTC offset.
@Suite struct LineLogHandlerTests {
    @Test func theTimestampHasStreamLogHandlersShape() throws {
        let stamp = LineLogHandler.timestamp()
        #expect(stamp.wholeMatch(of: /\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}[+-]\d{4}/) != nil, "\(stamp)")
    }
}
