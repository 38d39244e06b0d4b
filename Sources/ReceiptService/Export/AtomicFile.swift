import Foundation

/// A file written beside its name and renamed into place once whole and flushed to disk: a reader finds it whole or
/// absent, never half-written. Used by `receiptverify export --output` and the daily exports.
public final class AtomicFile: @unchecked Sendable {
    /// Where the file ends up.
    public let path: String
    /// Where it is written until then.
    public let partPath: String
    private let handle: FileHandle

    /// Starts the file for `path`, written at `partPath` (default `path.part`; a writer that may race another gives
    /// a name of its own). Throws ``ServiceError/Code/storage`` when the part file cannot be created.
    public init(path: String, partPath: String? = nil) throws {
        self.path = path
        self.partPath = partPath ?? path + ".part"
        guard FileManager.default.createFile(atPath: self.partPath, contents: nil),
            let handle = FileHandle(forWritingAtPath: self.partPath)
        else { throw ServiceError(.storage, "cannot write \(self.partPath)") }
        self.handle = handle
    }

    /// Appends `bytes`.
    public func write(_ bytes: [UInt8]) throws { try handle.write(contentsOf: bytes) }

    /// Flushes the file to disk and renames it into place (rename(2) replaces a file at `path` in one step).
    public func commit() throws {
        try handle.synchronize()
        try handle.close()
        guard rename(partPath, path) == 0 else {
            throw ServiceError(
                .storage, "cannot rename \(partPath) to \(path): \(String(cString: strerror(errno)))")
        }
    }

    /// Closes and removes the part file: nothing is left behind.
    public func abandon() {
        try? handle.close()
        try? FileManager.default.removeItem(atPath: partPath)
    }

    /// Writes the file at `path` from `body`, which gets the file to write to: committed when `body` returns,
    /// abandoned when it or the commit throws.
    public static func write<Result>(
        path: String, partPath: String? = nil, _ body: (AtomicFile) async throws -> Result
    ) async throws -> Result {
        let file = try AtomicFile(path: path, partPath: partPath)
        do {
            let result = try await body(file)
            try file.commit()
            return result
        } catch {
            file.abandon()
            throw error
        }
    }
}
