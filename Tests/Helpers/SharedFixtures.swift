import Foundation

/// The real Apple data in `../shared/fixtures` (or `RECEIPTVERIFY_FIXTURES`), read in place, never copied.
public enum SharedFixtures {
    /// The path the fixtures are looked for at.
    public static var path: String {
        ProcessInfo.processInfo.environment["RECEIPTVERIFY_FIXTURES"]
            ?? URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../../shared/fixtures").standardized.path
    }

    /// The fixtures folder, or nil when it is missing (callers record an issue under CI).
    public static var directory: URL? {
        FileManager.default.fileExists(atPath: path) ? URL(fileURLWithPath: path) : nil
    }

    /// Whether the suite runs under CI, where missing fixtures are a failure rather than a skip.
    public static var isCI: Bool { ProcessInfo.processInfo.environment["CI"] != nil }
}
