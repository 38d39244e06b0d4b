import Foundation
import ReceiptCore

/// Loads the operator's trust anchors from a directory of certificates (`.cer`, `.der`, `.crt`, `.pem`).
public enum TrustAnchorDirectory {
    /// File name endings read as certificates; other files are ignored.
    static let extensions: Set<String> = ["cer", "der", "crt", "pem"]

    /// Every certificate in `path`, in name order; throws ``ServiceError/Code/invalidArgument`` when the directory
    /// is missing, holds no certificate, or a file is not a certificate.
    public static func load(_ path: String) throws -> TrustAnchors {
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: path).sorted()
        } catch {
            throw ServiceError(
                .invalidArgument,
                "cannot read the trust anchor directory \(path); run deploy/fetch-apple-roots.sh \(path) to create it")
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
