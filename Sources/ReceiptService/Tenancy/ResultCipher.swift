/// How `POST /apiencrypted` encrypts an app's successful results.
public enum ResultCipher: String, Sendable, Hashable, CaseIterable, Codable {
    /// `base64(IV[16] ‖ AES-256-CBC-PKCS7(json))`, the default, readable by `openssl enc`.
    case aes256CBC = "aes-256-cbc"
    /// `base64(nonce[16] ‖ ciphertext ‖ tag[16])`, authenticated.
    case aes256GCM = "aes-256-gcm"
}
