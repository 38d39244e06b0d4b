import Crypto
import Foundation

/// An account's API key as stored: a lookup prefix and a hash, never the key itself.
///
/// A key reads `rvk_` followed by 48 lowercase hex digits (192 random bits). Its first 12 characters are the
/// ``prefix``, stored in clear and indexed so a request finds its row in one lookup; the whole key is then
/// checked against ``hash`` (SHA-256) in constant time. A fast hash suffices because keys are random, not chosen
/// by people: there is nothing to guess from a leaked hash that is cheaper than guessing the key.
public struct APIKey: Sendable, Hashable, Codable {
    /// The key's id, used to list and revoke it.
    public var id: UUID
    /// The account the key belongs to.
    public var accountID: UUID
    /// The key's first ``APIKey/prefixLength`` characters, shown in listings to tell keys apart.
    public var prefix: String
    /// SHA-256 of the whole key.
    public var hash: [UInt8]
    /// An optional label chosen by the operator.
    public var label: String?
    /// When the key was created.
    public var createdAt: Date
    /// When the key last authenticated a request, if ever.
    public var lastUsedAt: Date?
    /// When the key was revoked; a revoked key never authenticates again.
    public var revokedAt: Date?

    /// Creates a stored key value.
    public init(
        id: UUID, accountID: UUID, prefix: String, hash: [UInt8], label: String?, createdAt: Date,
        lastUsedAt: Date?, revokedAt: Date?
    ) {
        self.id = id
        self.accountID = accountID
        self.prefix = prefix
        self.hash = hash
        self.label = label
        self.createdAt = createdAt
        self.lastUsedAt = lastUsedAt
        self.revokedAt = revokedAt
    }

    /// The text every key starts with.
    public static let scheme = "rvk_"
    /// How many leading characters of a key are stored in clear for lookup.
    public static let prefixLength = 12
    /// How many random bytes a key carries.
    static let randomByteCount = 24

    /// Whether the key has been revoked.
    public var isRevoked: Bool { revokedAt != nil }

    /// Makes a fresh random key: the clear text (to show once) and its stored form.
    public static func generate(accountID: UUID, label: String?, at now: Date) -> (clearText: String, key: APIKey) {
        let clearText = scheme + Hex.encode(SecureRandom.bytes(randomByteCount))
        let key = APIKey(
            id: UUID(), accountID: accountID, prefix: String(clearText.prefix(prefixLength)),
            hash: hash(of: clearText), label: label, createdAt: now, lastUsedAt: nil, revokedAt: nil)
        return (clearText, key)
    }

    /// The lookup prefix of a presented key, or nil when the text cannot be a key at all.
    public static func lookupPrefix(of presented: String) -> String? {
        guard presented.utf8.count == scheme.utf8.count + randomByteCount * 2, presented.hasPrefix(scheme) else {
            return nil
        }
        return String(presented.prefix(prefixLength))
    }

    /// SHA-256 of a key's text.
    static func hash(of clearText: String) -> [UInt8] {
        Array(SHA256.hash(data: Array(clearText.utf8)))
    }

    /// Whether `presented` is this key, compared in constant time.
    public func matches(_ presented: String) -> Bool {
        ConstantTime.equals(APIKey.hash(of: presented), hash)
    }
}
