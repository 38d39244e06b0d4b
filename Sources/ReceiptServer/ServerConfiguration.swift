import Logging
import ReceiptStore

/// Everything `receiptverify serve` needs, built by the executable from flags and the environment.
///
/// | key (flag / environment) | default | meaning |
/// |---|---|---|
/// | `--hostname` / `RECEIPTVERIFY_HOSTNAME` | `127.0.0.1` | address to listen on |
/// | `--port` / `RECEIPTVERIFY_PORT` | `8080` | TCP port to listen on |
/// | `--database` / `RECEIPTVERIFY_DATABASE_URL` | `receiptverify.sqlite` | SQLite file path, or `postgres://…` URL |
/// | `--master-key-file` / `RECEIPTVERIFY_MASTER_KEY_FILE` | `receiptverify.key` | key file, created (0600) on first run |
/// | `RECEIPTVERIFY_MASTER_KEY` | — | the master key as base64 (32 bytes); overrides the key file |
/// | `--log-level` / `RECEIPTVERIFY_LOG_LEVEL` | `info` | `trace` … `critical` |
public struct ServerConfiguration: Sendable {
    /// The address to listen on.
    public var hostname: String
    /// The TCP port to listen on; 0 picks a free one.
    public var port: Int
    /// Where tenancy data lives.
    public var store: StoreLocation

    /// Creates a configuration.
    public init(
        hostname: String = "127.0.0.1", port: Int = 8080, store: StoreLocation = .sqlite(path: "receiptverify.sqlite")
    ) {
        self.hostname = hostname
        self.port = port
        self.store = store
    }
}
