/// The App Store environment a receipt or transaction was issued in.
///
/// The raw values are Apple's spelling in `verifyReceipt` answers and StoreKit 2 payloads.
/// [Apple's documentation](https://developer.apple.com/documentation/appstoreserverapi/environment)
public enum AppStoreEnvironment: String, Sendable, Hashable, CaseIterable, Codable {
    /// Purchases made by customers in the App Store.
    case production = "Production"
    /// Purchases made with sandbox test accounts.
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
