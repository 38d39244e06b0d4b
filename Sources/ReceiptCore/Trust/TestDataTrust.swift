/// Which test anchors (any configured anchor that is not one of Apple's) a verification accepts data from.
///
/// A server binds test anchors to apps by fingerprint, so one tenant's test root never signs for another; the
/// offline `verify` command, run by whoever holds the anchors, may accept every configured one.
public struct TestDataTrust: Sendable, Hashable {
    /// The accepted fingerprints (SHA-256 of the DER, uppercase hex); nil accepts every configured test anchor.
    private let fingerprints: Set<String>?

    /// No test data.
    public static let refused = TestDataTrust(fingerprints: [])
    /// Data under any configured test anchor (one operator's own tools, never a tenant's request).
    public static let anyAnchor = TestDataTrust(fingerprints: nil)

    /// Data under the anchors with these fingerprints only.
    public static func anchors(_ fingerprints: some Sequence<String>) -> TestDataTrust {
        TestDataTrust(fingerprints: Set(fingerprints.map { $0.uppercased() }))
    }

    /// ``anyAnchor`` when `allowed`, else ``refused``.
    public init(allowingAny allowed: Bool) {
        fingerprints = allowed ? nil : []
    }

    private init(fingerprints: Set<String>?) {
        self.fingerprints = fingerprints
    }

    /// Whether data chaining to the test anchor `fingerprint` is accepted.
    func accepts(_ fingerprint: String) -> Bool {
        fingerprints?.contains(fingerprint) ?? true
    }

    /// Throws ``ReceiptError/Code/testDataNotAllowed`` unless the chain's anchor is Apple's or accepted here.
    func check(anchor fingerprint: String, isApple: Bool) throws {
        guard !isApple, !accepts(fingerprint) else { return }
        throw ReceiptError(
            .testDataNotAllowed,
            fingerprints?.isEmpty == false
                ? "the chain ends at a test root this app is not bound to"
                : "the chain ends at a test root, and test data is not allowed")
    }
}
