import Foundation

/// A calendar day in UTC, the unit usage is counted in.
public struct UsageDay: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The year, for example 2026.
    public let year: Int
    /// The month, 1-12.
    public let month: Int
    /// The day of the month, 1-31.
    public let day: Int

    /// The UTC day that contains `date`.
    ///
    /// Computed from the days since 1970 (Howard Hinnant's civil-from-days), because it runs on every call and a
    /// `Calendar` lookup costs microseconds.
    public init(containing date: Date) {
        let days = Int((date.timeIntervalSince1970 / 86_400).rounded(.down))
        let shifted = days + 719_468
        let era = (shifted >= 0 ? shifted : shifted - 146_096) / 146_097
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1_460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
    }

    /// Parses `YYYY-MM-DD`, the stored form; nil for anything else or a day that does not exist.
    public init?(_ text: String) {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0].count == 4, parts[1].count == 2, parts[2].count == 2,
            let year = Int(parts[0]), let month = Int(parts[1]), let day = Int(parts[2]),
            let usageMonth = UsageMonth(year: year, month: month), (1...usageMonth.numberOfDays).contains(day)
        else { return nil }
        self.year = year
        self.month = month
        self.day = day
    }

    /// The month the day belongs to.
    public var usageMonth: UsageMonth { UsageMonth(uncheckedYear: year, month: month) }

    /// `YYYY-MM-DD`.
    public var description: String { usageMonth.description + "-" + Self.twoDigits(day) }

    /// The day's first instant (00:00:00 UTC).
    public var start: Date { usageMonth.start.addingTimeInterval(Double(day - 1) * 86_400) }

    /// The first instant of the UTC day holding `date`.
    public static func start(containing date: Date) -> Date {
        Date(timeIntervalSince1970: (date.timeIntervalSince1970 / 86_400).rounded(.down) * 86_400)
    }

    public static func < (lhs: UsageDay, rhs: UsageDay) -> Bool {
        (lhs.year, lhs.month, lhs.day) < (rhs.year, rhs.month, rhs.day)
    }

    static func twoDigits(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }
}

/// A calendar month in UTC: the period quotas and bills cover.
public struct UsageMonth: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The year, for example 2026.
    public let year: Int
    /// The month, 1-12.
    public let month: Int

    /// A month; nil when `month` is not 1-12 or the year is outside 1970-9999.
    public init?(year: Int, month: Int) {
        guard (1970...9999).contains(year), (1...12).contains(month) else { return nil }
        self.year = year
        self.month = month
    }

    init(uncheckedYear year: Int, month: Int) {
        self.year = year
        self.month = month
    }

    /// The month's first day.
    public var firstDay: UsageDay { UsageDay(containing: start) }

    /// The UTC month that contains `date`.
    public init(containing date: Date) { self = UsageDay(containing: date).usageMonth }

    /// Parses `YYYY-MM`; nil for anything else.
    public init?(_ text: String) {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 2, parts[0].count == 4, parts[1].count == 2, let year = Int(parts[0]),
            let month = Int(parts[1])
        else { return nil }
        self.init(year: year, month: month)
    }

    /// The month after this one.
    public var next: UsageMonth {
        month == 12 ? UsageMonth(uncheckedYear: year + 1, month: 1) : UsageMonth(uncheckedYear: year, month: month + 1)
    }

    /// Midnight UTC on the month's first day.
    public var start: Date {
        // Days from 1970-01-01 to the first of the month (days-from-civil, the inverse of UsageDay's computation).
        let shiftedYear = month <= 2 ? year - 1 : year
        let era = shiftedYear / 400
        let yearOfEra = shiftedYear - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        let days = era * 146_097 + dayOfEra - 719_468
        return Date(timeIntervalSince1970: Double(days) * 86_400)
    }

    /// How many days the month has.
    public var numberOfDays: Int { Int((next.start.timeIntervalSince(start) / 86_400).rounded()) }

    /// `YYYY-MM`.
    public var description: String { "\(year)-" + UsageDay.twoDigits(month) }

    public static func < (lhs: UsageMonth, rhs: UsageMonth) -> Bool { (lhs.year, lhs.month) < (rhs.year, rhs.month) }
}
