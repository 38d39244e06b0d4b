/// An app's bundle identifier, as Apple writes it in receipts (`bundle_id`, `bid`, `bundleId`).
///
/// Apple allows letters, digits, hyphens and periods, in at least two dot-separated parts
/// ([Apple's documentation](https://developer.apple.com/documentation/bundleresources/information-property-list/cfbundleidentifier)).
/// Comparison is exact: the App Store preserves case in receipts.
public struct BundleID: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The identifier's text, for example `com.example.app`.
    public let value: String

    /// The longest identifier accepted; Apple's own limit is 155 characters.
    public static let maximumLength = 155

    /// Creates a bundle ID after checking its syntax; returns nil when it is not one.
    public init?(_ value: String) {
        guard Self.isValid(value) else { return nil }
        self.value = value
    }

    /// The identifier's text.
    public var description: String { value }

    /// Whether `text` has the syntax of a bundle ID: two or more non-empty parts of `A-Z a-z 0-9 -`, joined by `.`.
    public static func isValid(_ text: String) -> Bool {
        guard !text.isEmpty, text.utf8.count <= maximumLength else { return false }
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count >= 2 else { return false }
        return parts.allSatisfy { part in
            !part.isEmpty
                && part.utf8.allSatisfy { byte in
                    (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z"))
                        || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
                        || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9"))
                        || byte == UInt8(ascii: "-")
                }
        }
    }

    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let id = BundleID(text) else {
            throw DecodingError.dataCorrupted(
                .init(codingPath: decoder.codingPath, debugDescription: "not a bundle ID"))
        }
        self = id
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(value)
    }
}
