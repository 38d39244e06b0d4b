/// A builder was asked for something it cannot make, such as an RSA receipt signature from a P-256 test PKI.
public struct TestKitError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What was asked for and why it cannot be made.
    public let reason: String

    /// Creates an error with an explanation.
    public init(_ reason: String) {
        self.reason = reason
    }

    public var description: String { reason }
}
