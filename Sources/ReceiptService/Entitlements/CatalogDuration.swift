import Foundation

/// An ISO 8601 duration (`P30D`, `P1M`, `P1Y2M`, `PT12H`): how long a non-renewing subscription lasts from its
/// purchase. Years, months, weeks and days are calendar units (UTC, Gregorian); hours, minutes and seconds exact.
public struct CatalogDuration: Sendable, Hashable, CustomStringConvertible {
    /// The duration as given, upper-cased (`P30D`).
    public let description: String
    private let components: DateComponents

    /// The most of any one unit a duration may state (a hundred years in days is under it).
    static let maximumValue = 100_000

    /// Parses `text`; nil unless it is `P` followed by at least one of `nY`, `nM`, `nW`, `nD` and, after `T`, `nH`,
    /// `nM`, `nS`, in that order, each a whole number, and the whole is longer than nothing.
    public init?(_ text: String) {
        let upper = text.uppercased()
        guard upper.utf8.count <= 40, upper.hasPrefix("P") else { return nil }
        var components = DateComponents()
        var number = ""
        var inTime = false
        var order = 0
        var any = false
        for character in upper.dropFirst() {
            if character.isASCII, character.isNumber {
                number.append(character)
                continue
            }
            if character == "T" {
                guard !inTime, number.isEmpty else { return nil }
                inTime = true
                continue
            }
            guard let value = Int(number), value <= Self.maximumValue else { return nil }
            number = ""
            let units: [Character] = inTime ? ["H", "M", "S"] : ["Y", "M", "W", "D"]
            guard let index = units.firstIndex(of: character) else { return nil }
            let rank = (inTime ? 4 : 0) + index + 1
            guard rank > order else { return nil }
            order = rank
            switch (inTime, character) {
            case (false, "Y"): components.year = value
            case (false, "M"): components.month = value
            case (false, "W"): components.day = (components.day ?? 0) + 7 * value
            case (false, "D"): components.day = (components.day ?? 0) + value
            case (true, "H"): components.hour = value
            case (true, "M"): components.minute = value
            default: components.second = value
            }
            if value > 0 { any = true }
        }
        guard number.isEmpty, any, !(inTime && order <= 4) else { return nil }
        self.description = upper
        self.components = components
    }

    private static let calendar: Calendar = {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        return calendar
    }()

    /// The end of the duration begun at `start` (milliseconds since 1970), in milliseconds since 1970.
    public func end(from start: Int64) -> Int64 {
        let date = Date(timeIntervalSince1970: Double(start) / 1000)
        guard let end = Self.calendar.date(byAdding: components, to: date) else { return Int64.max }
        return Int64((end.timeIntervalSince1970 * 1000).rounded())
    }

    public static func == (lhs: CatalogDuration, rhs: CatalogDuration) -> Bool { lhs.description == rhs.description }
    public func hash(into hasher: inout Hasher) { hasher.combine(description) }
}
