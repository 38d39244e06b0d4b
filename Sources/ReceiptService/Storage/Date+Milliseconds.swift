import Foundation

extension Date {
    /// This instant at whole milliseconds, the precision both stores keep; applying it twice changes nothing.
    public var roundedToMilliseconds: Date {
        Date(timeIntervalSince1970: (timeIntervalSince1970 * 1000).rounded() / 1000)
    }
}
