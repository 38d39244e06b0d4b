import Foundation
import ReceiptCore

/// The trust anchors local verification uses: Apple's roots built into the binary, plus or instead of the
/// certificates in an operator's directory (`.cer`, `.der`, `.crt`, `.pem`).
public enum TrustAnchorDirectory {
    /// File name endings read as certificates; other files are ignored.
    static let extensions: Set<String> = ["cer", "der", "crt", "pem"]

    /// The anchors to verify with: Apple's built-in roots, with `directory`'s certificates added (test roots for
    /// Xcode data, a root newer than this build), or only `directory`'s when `replacingBuiltIn` is set.
    ///
    /// Throws ``ServiceError/Code/invalidArgument`` when `replacingBuiltIn` is set without a directory, or the
    /// directory cannot be loaded (see ``load(_:)``).
    public static func anchors(directory: String?, replacingBuiltIn: Bool) throws -> TrustAnchors {
        guard let directory else {
            guard !replacingBuiltIn else {
                throw ServiceError(
                    .invalidArgument, "replacing the built-in Apple roots needs a trust anchor directory")
            }
            return TrustAnchors.apple
        }
        let loaded = try load(directory)
        return replacingBuiltIn ? loaded : TrustAnchors.apple.adding(loaded)
    }

    /// Every certificate in `path`, in name order; throws ``ServiceError/Code/invalidArgument`` when the directory
    /// is missing, holds no certificate, or a file is not a certificate.
    public static func load(_ path: String) throws -> TrustAnchors {
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: path).sorted()
        } catch {
            throw ServiceError(.invalidArgument, "cannot read the trust anchor directory \(path)")
        }
        var files: [[UInt8]] = []
        for name in names where extensions.contains((name as NSString).pathExtension.lowercased()) {
            guard let data = FileManager.default.contents(atPath: (path as NSString).appendingPathComponent(name))
            else {
                throw ServiceError(.invalidArgument, "cannot read trust anchor \(name)")
            }
            files.append(Array(data))
        }
        guard !files.isEmpty else {
            throw ServiceError(.invalidArgument, "the trust anchor directory \(path) holds no certificate")
        }
        do {
            return try TrustAnchors(encoded: files)
        } catch let error as ReceiptError {
            throw ServiceError(.invalidArgument, "trust anchors in \(path): \(error.reason)")
        }
    }
}
