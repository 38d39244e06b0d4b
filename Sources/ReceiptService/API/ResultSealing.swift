import Crypto
import Foundation
import _CryptoExtras

/// Encrypts `/apiencrypted` answers with the app's key (docs/api.md, "`/apiencrypted`").
///
/// - `aes-256-cbc`: `base64(IV[16] ‖ AES-256-CBC-PKCS7(json))`, byte-compatible with `openssl enc -aes-256-cbc`.
/// - `aes-256-gcm`: `base64(nonce[16] ‖ ciphertext ‖ tag[16])`, no associated data.
///
/// Every answer gets a fresh random IV or nonce from the system generator.
public enum ResultSealing {
    /// The sealed answer for `caller`'s app, as base64 text.
    public static func seal(_ plaintext: [UInt8], for caller: Caller) throws -> String {
        try seal(plaintext, key: caller.resultKey, cipher: caller.app.resultCipher)
    }

    /// The sealed form of `plaintext` under a 32-byte `key`, as base64 text.
    public static func seal(_ plaintext: [UInt8], key: [UInt8], cipher: ResultCipher) throws -> String {
        let symmetricKey = SymmetricKey(data: key)
        let iv = SecureRandom.bytes(16)
        var output = iv
        switch cipher {
        case .aes256CBC:
            output += try AES._CBC.encrypt(plaintext, using: symmetricKey, iv: AES._CBC.IV(ivBytes: iv))
        case .aes256GCM:
            // A 16-byte nonce is legal for GCM; `combined` is nil for it, so the layout is assembled here.
            let box = try AES.GCM.seal(plaintext, using: symmetricKey, nonce: AES.GCM.Nonce(data: iv))
            output += box.ciphertext
            output += box.tag
        }
        return Data(output).base64EncodedString()
    }
}
