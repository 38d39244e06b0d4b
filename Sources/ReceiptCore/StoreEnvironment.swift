/// The environment a purchase was made in, in either store.
///
/// The raw values are Apple's spelling in `verifyReceipt` answers and StoreKit 2 payloads. Google Play has two: a
/// purchase by a license tester (a test purchase) is ``sandbox``, every other one ``production``; ``xcode`` is Apple's
/// alone.
/// [Apple's documentation](https://developer.apple.com/documentation/appstoreserverapi/environment)
public enum StoreEnvironment: String, Sendable, Hashable, CaseIterable, Codable {
    /// Purchases made by customers in the store.
    case production = "Production"
    /// Purchases made with sandbox test accounts (Apple) or by license testers (Google Play).
    case sandbox = "Sandbox"
    /// Purchases made in Xcode's StoreKit testing environment, signed by a local test certificate.
    case xcode = "Xcode"

    /// The lowercase name used in configuration and on the command line (`production`, `sandbox`, `xcode`).
    public var configurationName: String { rawValue.lowercased() }

    /// Creates an environment from its configuration name, ignoring case.
    public init?(configurationName: String) {
        guard let match = Self.allCases.first(where: { $0.configurationName == configurationName.lowercased() })
        else { return nil }
        self = match
    }
}
