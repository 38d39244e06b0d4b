import Foundation

/// A receipt made by ``ReceiptBuilder``: the container bytes, their base64 text, and what was signed.
public struct GeneratedReceipt: Sendable, Equatable {
    /// The PKCS#7 container, DER or BER.
    public let bytes: [UInt8]
    /// The payload that was signed (before any content tampering).
    public let payload: [UInt8]
    /// The receipt's creation date (field 12): the date a chain is checked at.
    public let creationDate: Date

    /// The container as standard base64, as a client sends it.
    public var base64: String { Data(bytes).base64EncodedString() }
    /// The creation date in whole seconds since 1970 (for `openssl … -attime`).
    public var creationUnixSeconds: Int64 { Int64(creationDate.timeIntervalSince1970.rounded(.down)) }

    /// Creates a generated receipt.
    public init(bytes: [UInt8], payload: [UInt8], creationDate: Date) {
        self.bytes = bytes
        self.payload = payload
        self.creationDate = creationDate
    }
}
