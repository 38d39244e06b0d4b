// swift-tools-version: 6.1
// A backend's client for ReceiptVerify generated from its OpenAPI document by Apple's swift-openapi-generator (the
// build plugin reads Sources/GeneratedClientRecipe/openapi.json, a link to the document the server serves), with
// swift-openapi-urlsession as the transport and swift-crypto to open /apiencrypted answers. scripts/recipes.sh
// builds and runs it against a live server.
import PackageDescription

let package = Package(
    name: "GeneratedClientRecipe",
    platforms: [.macOS(.v13)],
    dependencies: [
        .package(url: "https://github.com/apple/swift-openapi-generator", from: "1.14.3"),
        .package(url: "https://github.com/apple/swift-openapi-runtime", from: "1.13.4"),
        .package(url: "https://github.com/apple/swift-openapi-urlsession", from: "1.4.0"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-crypto", "3.12.3"..<"5.0.0"),
    ],
    targets: [
        .executableTarget(
            name: "GeneratedClientRecipe",
            dependencies: [
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
                .product(name: "OpenAPIURLSession", package: "swift-openapi-urlsession"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
            ],
            plugins: [.plugin(name: "OpenAPIGenerator", package: "swift-openapi-generator")]
        )
    ]
)
