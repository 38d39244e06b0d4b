import ArgumentParser
import Foundation
import ReceiptCore
import ReceiptService

/// Which certificates local verification trusts, shared by `serve` and `verify`: Apple's roots built into the binary,
/// plus (or, explicitly, instead of) a directory of certificates.
struct TrustOptions: ParsableArguments {
    @Option(
        name: [.customLong("trust-anchors"), .customLong("roots")],
        help:
            "Directory of certificates (DER or PEM) trusted besides Apple's built-in roots, such as Xcode's StoreKit test root. Env: RECEIPTVERIFY_TRUST_ANCHORS"
    )
    var trustAnchors: String?

    @Flag(
        help:
            "Trust only the --trust-anchors directory, not Apple's built-in roots. Env: RECEIPTVERIFY_REPLACE_BUILT_IN_ROOTS=true"
    )
    var replaceBuiltInRoots = false

    /// The directory named by the flag or the environment, if any.
    var directory: String? {
        trustAnchors ?? ProcessInfo.processInfo.environment["RECEIPTVERIFY_TRUST_ANCHORS"]
    }

    /// Whether the directory replaces the built-in roots (flag, or `RECEIPTVERIFY_REPLACE_BUILT_IN_ROOTS`).
    func replacesBuiltInRoots() throws -> Bool {
        if replaceBuiltInRoots { return true }
        guard let text = ProcessInfo.processInfo.environment["RECEIPTVERIFY_REPLACE_BUILT_IN_ROOTS"] else {
            return false
        }
        switch text.lowercased() {
        case "1", "true", "yes", "on": return true
        case "0", "false", "no", "off", "": return false
        default: throw CommandFailure("RECEIPTVERIFY_REPLACE_BUILT_IN_ROOTS must be true or false")
        }
    }

    /// The anchors these options name; a one-line error when the directory cannot be loaded.
    func anchors() throws -> TrustAnchors {
        try TrustAnchorDirectory.anchors(directory: directory, replacingBuiltIn: try replacesBuiltInRoots())
    }
}
