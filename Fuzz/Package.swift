// swift-tools-version:6.1
// A libFuzzer target for ReceiptVerify's parsers, in its own package so the main build never sees a binary
// without a main. Build and run with Fuzz/run.sh.
import PackageDescription

let package = Package(
    name: "ReceiptFuzzing",
    platforms: [.macOS(.v15)],
    dependencies: [.package(name: "ReceiptVerify", path: "..")],
    targets: [
        .executableTarget(
            name: "ReceiptFuzzer",
            dependencies: [.product(name: "ReceiptCore", package: "ReceiptVerify")]
        )
    ]
)
