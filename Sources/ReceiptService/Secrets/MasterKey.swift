import Crypto
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The operator's 256-bit key that encrypts every secret stored in the database.
///
/// It comes from configuration (base64) or from a key file that is generated on first run with mode 0600.
/// The database remembers a check value derived from it, so a server started with another key refuses to run
/// instead of failing later on every decryption.
public struct MasterKey: Sendable {
    let key: SymmetricKey

    /// Creates a master key from 32 raw bytes.
    public init(bytes: [UInt8]) throws {
        guard bytes.count == 32 else {
            throw ServiceError(.invalidMasterKey, "master key must be 32 bytes, got \(bytes.count)")
        }
        key = SymmetricKey(data: bytes)
    }

    /// Creates a master key from base64 text of 32 bytes (surrounding white space ignored).
    public init(base64: String) throws {
        let trimmed = base64.trimmingCharacters(in: .whitespacesAndNewlines)
        guard let data = Data(base64Encoded: trimmed) else {
            throw ServiceError(.invalidMasterKey, "master key is not valid base64")
        }
        try self.init(bytes: Array(data))
    }

    /// A new random master key.
    public static func generate() -> MasterKey {
        MasterKey(unchecked: SymmetricKey(size: .bits256))
    }

    private init(unchecked key: SymmetricKey) { self.key = key }

    /// A key for one purpose (signing browser tokens, …) derived from this one: HMAC-SHA256 of a label naming it.
    func derivedKey(purpose: String) -> SymmetricKey {
        SymmetricKey(
            data: HMAC<SHA256>.authenticationCode(
                for: Array("receiptverify derived key v1: \(purpose)".utf8), using: key))
    }

    /// A key of its own for one purpose (the account screen's cookies, …), derived from this one: what it seals
    /// cannot be opened with the master key, nor the master key's secrets with it.
    public func derived(for purpose: String) -> MasterKey {
        MasterKey(unchecked: derivedKey(purpose: "sealing: " + purpose))
    }

    /// The key as base64, for writing the key file.
    public var base64: String {
        key.withUnsafeBytes { Data($0).base64EncodedString() }
    }

    /// A value that identifies this key without revealing it: HMAC-SHA256 of a fixed label, in hex.
    public var checkValue: String {
        let mac = HMAC<SHA256>.authenticationCode(for: Array("receiptverify master key check v1".utf8), using: key)
        return Hex.encode(mac)
    }

    /// Reads the key from `path`, or creates the file with a new random key (mode 0600) when it does not exist.
    ///
    /// - Returns: the key and whether it was generated now.
    public static func loadOrCreate(path: String) throws -> (key: MasterKey, created: Bool) {
        if FileManager.default.fileExists(atPath: path) {
            let text: String
            do {
                text = try String(contentsOfFile: path, encoding: .utf8)
            } catch {
                throw ServiceError(.invalidMasterKey, "cannot read master key file \(path)")
            }
            do {
                return (try MasterKey(base64: text), false)
            } catch let error as ServiceError {
                throw ServiceError(.invalidMasterKey, "master key file \(path): \(error.reason)")
            }
        }
        let key = MasterKey.generate()
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL, 0o600)
        guard descriptor >= 0 else {
            throw ServiceError(.invalidMasterKey, "cannot create master key file \(path) (errno \(errno))")
        }
        defer { close(descriptor) }
        let contents = Array((key.base64 + "\n").utf8)
        let written = contents.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        guard written == contents.count, fsync(descriptor) == 0 else {
            unlink(path)
            throw ServiceError(.invalidMasterKey, "cannot write master key file \(path)")
        }
        return (key, true)
    }
}
