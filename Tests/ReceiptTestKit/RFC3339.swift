import Foundation

/// RFC 3339 timestamps in the shape receipts carry them (`2023-05-09T23:20:55Z`, UTC, whole seconds).
public enum RFC3339 {
    /// The instant a timestamp literal names; traps when the literal is malformed (a bug in the test, not data).
    public static func date(_ text: String) -> Date {
        do {
            return try Date.ISO8601FormatStyle().parse(text)
        } catch {
            preconditionFailure("not an RFC 3339 timestamp: \(text)")
        }
    }

    /// The timestamp of `date` in UTC with whole seconds, as Apple writes receipt dates.
    public static func string(_ date: Date) -> String {
        Date.ISO8601FormatStyle().format(date)
    }
}
