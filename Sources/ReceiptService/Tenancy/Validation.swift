import Foundation

/// Checks shared by the tenancy inputs.
enum Validation {
    /// A trimmed display name of 1-200 printable characters.
    static func displayName(_ text: String, what: String) throws -> String {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        guard !trimmed.isEmpty, trimmed.count <= 200, !trimmed.unicodeScalars.contains(where: isControl) else {
            throw ServiceError(.invalidArgument, "\(what) must be 1-200 printable characters")
        }
        return trimmed
    }

    /// A lowercase email address of plausible shape: `local@domain.tld`, no spaces, at most 254 characters.
    static func email(_ text: String) throws -> String {
        let email = text.trimmingCharacters(in: .whitespaces).lowercased()
        let parts = email.split(separator: "@", omittingEmptySubsequences: false)
        guard email.utf8.count <= 254, parts.count == 2, !parts[0].isEmpty, parts[1].contains("."),
            !parts[1].hasPrefix("."), !parts[1].hasSuffix("."),
            !email.unicodeScalars.contains(where: { isControl($0) || $0 == " " })
        else {
            throw ServiceError(.invalidArgument, "malformed email '\(printable(text))'")
        }
        return email
    }

    static func isASCIILetter(_ byte: UInt8) -> Bool {
        (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z"))
            || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
    }

    static func isASCIIAlphanumeric(_ byte: UInt8) -> Bool {
        (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z"))
            || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
            || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9"))
    }

    static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.properties.generalCategory == .control
    }

    /// User input made safe to echo in a one-line error: control characters replaced, at most 80 characters.
    static func printable(_ text: String) -> String {
        let cleaned = String(String.UnicodeScalarView(text.unicodeScalars.map { isControl($0) ? "?" : $0 }))
        return cleaned.count > 80 ? String(cleaned.prefix(80)) + "…" : cleaned
    }
}
