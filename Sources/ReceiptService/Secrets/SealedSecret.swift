import Crypto
import Foundation

/// A secret encrypted at rest with the ``MasterKey``: `version[1] ‖ nonce[12] ‖ ciphertext ‖ tag[16]`, AES-256-GCM.
///
/// The associated data binds each secret to its owner and purpose (for example `app:<id>:result_key`), so a
/// sealed value copied into another row or column fails to open rather than decrypting to the wrong secret.
public struct SealedSecret: Sendable, Hashable {
    /// The stored bytes.
    public let bytes: [UInt8]

    static let formatVersion: UInt8 = 1

    /// Wraps stored bytes; they are checked when opened.
    public init(bytes: [UInt8]) { self.bytes = bytes }

    /// Encrypts `plaintext` for `context` under `masterKey`.
    public static func seal(_ plaintext: [UInt8], context: String, with masterKey: MasterKey) throws -> SealedSecret {
        do {
            let box = try AES.GCM.seal(plaintext, using: masterKey.key, authenticating: Array(context.utf8))
            guard let combined = box.combined else { throw ServiceError(.corruptSecret, "cannot seal secret") }
            return SealedSecret(bytes: [formatVersion] + Array(combined))
        } catch let error as ServiceError {
            throw error
        } catch {
            throw ServiceError(.corruptSecret, "cannot seal secret for \(context)")
        }
    }

    /// Decrypts the secret; throws ``ServiceError/Code/corruptSecret`` when it was sealed for another context,
    /// with another key, or altered.
    public func open(context: String, with masterKey: MasterKey) throws -> [UInt8] {
        guard bytes.count >= 1 + 12 + 16, bytes[0] == SealedSecret.formatVersion else {
            throw ServiceError(.corruptSecret, "stored secret for \(context) has an unknown format")
        }
        do {
            let box = try AES.GCM.SealedBox(combined: bytes.dropFirst())
            return Array(try AES.GCM.open(box, using: masterKey.key, authenticating: Array(context.utf8)))
        } catch {
            throw ServiceError(.corruptSecret, "stored secret for \(context) does not decrypt with this master key")
        }
    }
}
