import Foundation

extension Date {
    /// This instant at whole milliseconds, the precision both stores keep; applying it twice changes nothing.
    public var roundedToMilliseconds: Date {
        Date(timeIntervalSince1970: (timeIntervalSince1970 * 1000).rounded() / 1000)
    }
}

extension Date {
    /// This instant in whole milliseconds since 1970, as the stores and Apple's `_ms` fields write it.
    public var millisecondsSince1970: Int64 { Int64((timeIntervalSince1970 * 1000).rounded()) }

    /// The instant `milliseconds` after 1970.
    public init(millisecondsSince1970 milliseconds: Int64) {
        self.init(timeIntervalSince1970: Double(milliseconds) / 1000)
    }
}
