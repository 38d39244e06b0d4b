/// Where the master key comes from: configuration text, or a key file created on first run.
public enum MasterKeySource: Sendable, Equatable {
    /// The key as base64 text (`RECEIPTVERIFY_MASTER_KEY`).
    case base64(String)
    /// A file holding the key as base64; created with mode 0600 and a random key when missing.
    case file(path: String)

    /// Loads the key, creating the key file if needed; `created` tells whether a new key was generated.
    public func load() throws -> (key: MasterKey, created: Bool) {
        switch self {
        case .base64(let text): return (try MasterKey(base64: text), false)
        case .file(let path): return try MasterKey.loadOrCreate(path: path)
        }
    }
}
