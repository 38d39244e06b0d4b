import Foundation
import Testing

/// The real Apple data in `../shared/fixtures` (or `RECEIPTVERIFY_FIXTURES`), read in place, never copied.
enum Fixtures {
    /// The fixtures folder; nil outside CI when it is missing (a test that needs it then records an issue under CI).
    static var directory: URL? {
        let environment = ProcessInfo.processInfo.environment
        let path =
            environment["RECEIPTVERIFY_FIXTURES"]
            ?? URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent(
                "../../../shared/fixtures"
            ).standardized.path
        if FileManager.default.fileExists(atPath: path) { return URL(fileURLWithPath: path) }
        if environment["CI"] != nil { Issue.record("fixtures folder \(path) is missing under CI") }
        return nil
    }
}
