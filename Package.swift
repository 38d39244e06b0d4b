// swift-tools-version:6.1
import PackageDescription

let strictness: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
]

let package = Package(
    name: "ReceiptVerify",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "receiptverify", targets: ["receiptverify"]),
        // The pure verifier, for the fuzzing package in Fuzz/ and for embedding.
        .library(name: "ReceiptCore", targets: ["ReceiptCore"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.0"),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.0.0"),
        .package(url: "https://github.com/apple/swift-asn1.git", from: "1.3.0"),
        .package(url: "https://github.com/apple/swift-certificates.git", from: "1.10.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.0"),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.0"),
        .package(url: "https://github.com/vapor/sqlite-nio.git", from: "1.13.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.81.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.29.0"),
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.34.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.6.0"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.24.0"),
        // Metrics API (already in the graph through Hummingbird) and its Prometheus back end for `/metrics`.
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.5.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.1.0"),
        // The account screen's templates (Hummingbird's Mustache) and its rendering of docs/api.md (Markdown).
        .package(url: "https://github.com/hummingbird-project/swift-mustache.git", from: "2.0.0"),
        .package(url: "https://github.com/JohnSundell/Ink.git", from: "0.6.0"),
    ],
    targets: [
        // Pure verification core: no I/O, no clock, no logging.
        .target(
            name: "ReceiptCore",
            dependencies: [
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "X509", package: "swift-certificates"),
            ],
            swiftSettings: strictness
        ),
        // Tenancy and policy: accounts, keys, apps, plans; talks to storage through a protocol.
        .target(
            name: "ReceiptService",
            dependencies: [
                "ReceiptCore",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
            ],
            swiftSettings: strictness
        ),
        // Outside parties over HTTP, a folder each (Apple/, OpenID/, Webhooks/): the clients behind ReceiptService's
        // protocols (`AppleReceiptVerifying`, `AppStoreServerLooking`).
        .target(
            name: "Clients",
            dependencies: [
                "ReceiptCore",
                "ReceiptService",
                .product(name: "Crypto", package: "swift-crypto"),
                // RS256 for Google's service account grants.
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                // The thread pool that resolves webhook hosts off the event loops (already in the graph).
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
            ],
            swiftSettings: strictness
        ),
        // The storage protocol's SQLite and PostgreSQL implementations. All SQL lives here.
        .target(
            name: "ReceiptStore",
            dependencies: [
                "ReceiptService",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "SQLiteNIO", package: "sqlite-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            resources: [
                .embedInCode("PostgreSQL/schema.sql"),
                .embedInCode("SQLite/sqlite-schema.sql"),
            ],
            swiftSettings: strictness
        ),
        // Hummingbird application: routes, middleware, error to HTTP mapping.
        .target(
            name: "ReceiptServer",
            dependencies: [
                "ReceiptCore",
                "ReceiptService",
                "ReceiptStore",
                "Clients",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                // HTTP parts as Hummingbird's pipeline carries them, for the connection guard (already in the graph).
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Mustache", package: "swift-mustache"),
                .product(name: "Ink", package: "Ink"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            // The API's contract, served at /openapi.json; the account screen's templates, stylesheet and docs.
            resources: [
                .embedInCode("Operations/openapi.json"),
                .embedInCode("Web/Templates"),
                .embedInCode("Web/Static/style.css"),
                .embedInCode("Web/Static/copy.js"),
                .embedInCode("Web/Static/api.md"),
            ],
            swiftSettings: strictness
        ),
        // The executable: argument parsing only; every command calls a library.
        .executableTarget(
            name: "receiptverify",
            dependencies: [
                "ReceiptCore",
                "ReceiptService",
                "ReceiptStore",
                "ReceiptServer",
                "Clients",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                // `serve` installs NIO's event loops as Swift concurrency's executor (already in the graph).
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            swiftSettings: strictness
        ),
        // Builders for an in-process PKI, receipts and JWS, used by the tests and the benchmark.
        .target(
            name: "ReceiptTestKit",
            dependencies: [
                "ReceiptCore",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "X509", package: "swift-certificates"),
            ],
            path: "Tests/ReceiptTestKit",
            swiftSettings: strictness
        ),
        // The Swift client recipe of docs/api.md (docs/recipes/swift): what a Swift backend copies; run by
        // scripts/recipes.sh against a live server.
        .executableTarget(
            name: "SwiftRecipe",
            dependencies: [
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
            ],
            path: "docs/recipes/swift"
        ),
        // Single-core verifier throughput: `swift run -c release ReceiptBench` (docs/performance.md).
        .executableTarget(
            name: "ReceiptBench",
            dependencies: [
                "ReceiptCore", "ReceiptTestKit",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
            ],
            path: "Benchmarks/ReceiptBench",
            swiftSettings: strictness
        ),
        .testTarget(
            name: "ReceiptCoreTests",
            dependencies: [
                "ReceiptCore", "ReceiptTestKit", "TestSupport",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "X509", package: "swift-certificates"),
            ],
            swiftSettings: strictness
        ),
        .testTarget(
            name: "ReceiptServiceTests",
            dependencies: [
                "ReceiptService", "ReceiptCore",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
            ],
            swiftSettings: strictness
        ),
        // Helpers shared by the test targets: throwaway SQLite files and PostgreSQL databases.
        .target(
            name: "TestSupport",
            dependencies: [
                "ReceiptStore", "ReceiptService",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ],
            path: "Tests/Helpers",
            swiftSettings: strictness
        ),
        // A fake OpenID Connect provider (discovery, JWKS, authorize, token; RS256) on loopback, for the sign-in tests,
        // and as an executable for the browser tests (scripts/browser.sh).
        .target(
            name: "FakeOpenIDProvider",
            dependencies: [
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Tests/FakeOpenIDProvider",
            swiftSettings: strictness
        ),
        .executableTarget(
            name: "fake-openid",
            dependencies: ["FakeOpenIDProvider", .product(name: "Hummingbird", package: "hummingbird")],
            path: "Tests/FakeOpenID",
            swiftSettings: strictness
        ),
        // The fakes of outside parties, speaking their real protocols over HTTP on loopback, served to every suite
        // that needs one (issue 51 §3: one fake per party): Google (OAuth grants, the Play Developer API, Pub/Sub's
        // OIDC keys).
        .target(
            name: "Fakes",
            dependencies: [
                "ReceiptCore", "ReceiptService",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
            ],
            path: "Tests/Fakes",
            swiftSettings: strictness
        ),
        .testTarget(
            name: "ReceiptStoreTests",
            dependencies: [
                "ReceiptStore", "ReceiptService", "ReceiptCore", "TestSupport",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ],
            swiftSettings: strictness
        ),
        .testTarget(
            name: "ReceiptServerTests",
            dependencies: [
                "ReceiptServer", "ReceiptStore", "ReceiptService", "ReceiptCore", "ReceiptTestKit", "TestSupport",
                "Clients", "FakeOpenIDProvider",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictness
        ),
        // End to end over real sockets: the `serve` binary, a fake Apple, both stores.
        .testTarget(
            name: "APITests",
            dependencies: [
                "ReceiptCore", "ReceiptTestKit", "TestSupport", "Clients", "ReceiptService", "Fakes",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            swiftSettings: strictness
        ),
        // The simulator's reference model (docs/testing.md): pure, importing nothing of the service.
        .target(name: "MoneyModel", path: "Tests/MoneyModel", swiftSettings: strictness),
        // The simulator: seeded histories played against the real application in process, on both stores, checked
        // against MoneyModel after every step (scripts/simulate.sh).
        .testTarget(
            name: "SimulationTests",
            dependencies: [
                "MoneyModel", "ReceiptServer", "ReceiptService", "ReceiptCore", "ReceiptStore", "ReceiptTestKit",
                "TestSupport", "Fakes", "Clients",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
            ],
            swiftSettings: strictness
        ),
        .testTarget(
            name: "CLITests",
            dependencies: [
                "TestSupport", "ReceiptService", "ReceiptStore", .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
            ],
            swiftSettings: strictness
        ),
    ]
)
