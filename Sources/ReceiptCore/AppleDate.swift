/// Apple's three renderings of an instant in `verifyReceipt` answers.
///
/// `"2020-07-14 19:36:40 Etc/GMT"`, milliseconds since 1970 as a string, and the same wall time in
/// `America/Los_Angeles` with US daylight saving (`"2020-07-14 12:36:40 America/Los_Angeles"`). The Pacific rules are
/// computed here rather than read from the system's time zone database: they are fixed since 2007, and this is a
/// hot path (three dates per in-app purchase).
public enum AppleDate {
    /// Milliseconds since 1970 from an RFC 3339 / ISO 8601 timestamp as receipts carry it; nil when it is not one.
    ///
    /// Apple writes `2020-07-14T19:36:40Z`; some Mac App Store receipts add fractional seconds
    /// (`2020-10-03T07:12:34.567Z`, truncated to milliseconds), and Xcode's StoreKit testing writes the local offset
    /// (`2020-10-16T14:29:30+0300`, also `+03:00`). All name one instant.
    public static func milliseconds(rfc3339 text: some Collection<UInt8>) -> Int64? {
        let bytes = Array(text)
        guard bytes.count >= 20, bytes[4] == UInt8(ascii: "-"), bytes[7] == UInt8(ascii: "-"),
            bytes[10] | 0x20 == UInt8(ascii: "t"), bytes[13] == UInt8(ascii: ":"), bytes[16] == UInt8(ascii: ":"),
            let year = number(bytes[0..<4]), let month = number(bytes[5..<7]), let day = number(bytes[8..<10]),
            let hour = number(bytes[11..<13]), let minute = number(bytes[14..<16]),
            let second = number(bytes[17..<19]),
            (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 61
        else { return nil }
        var index = 19
        var millis: Int64 = 0
        if bytes[index] == UInt8(ascii: ".") {
            // Fractional seconds: one to nine digits, truncated to milliseconds.
            let start = index + 1
            index = start
            while index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) { index += 1 }
            let digits = index - start
            guard (1...9).contains(digits), let value = number(bytes[start..<index]) else { return nil }
            var scaled = Int64(value)
            for _ in min(digits, 3)..<3 { scaled *= 10 }
            for _ in 3..<max(digits, 3) { scaled /= 10 }
            millis = scaled
        }
        guard index < bytes.count, let offset = offsetSeconds(bytes[index...]) else { return nil }
        let days = daysFromCivil(year: Int64(year), month: Int64(month), day: Int64(day))
        let seconds = days * 86_400 + Int64(hour) * 3_600 + Int64(minute) * 60 + Int64(second) - offset
        return seconds * 1_000 + millis
    }

    /// The offset from UTC a timestamp ends with, in seconds: `Z`, `±HH:MM` or `±HHMM`; nil for anything else.
    private static func offsetSeconds(_ suffix: ArraySlice<UInt8>) -> Int64? {
        let suffix = Array(suffix)
        if suffix.count == 1, suffix[0] | 0x20 == UInt8(ascii: "z") { return 0 }
        guard suffix.count == 5 || (suffix.count == 6 && suffix[3] == UInt8(ascii: ":")),
            suffix[0] == UInt8(ascii: "+") || suffix[0] == UInt8(ascii: "-"),
            let hours = number(suffix[1..<3]), let minutes = number(suffix[(suffix.count - 2)...]),
            hours < 24, minutes < 60
        else { return nil }
        let magnitude = Int64(hours * 3_600 + minutes * 60)
        return suffix[0] == UInt8(ascii: "-") ? -magnitude : magnitude
    }

    /// `"yyyy-MM-dd HH:mm:ss Etc/GMT"`.
    public static func gmt(milliseconds: Int64) -> String {
        format(seconds: floorDivide(milliseconds, 1_000), suffix: " Etc/GMT")
    }

    /// `"yyyy-MM-ddTHH:mm:ss.SSSZ"`: RFC 3339 in UTC with milliseconds, the form of the dates we add to answers.
    public static func rfc3339(milliseconds: Int64) -> String {
        let fraction = milliseconds - floorDivide(milliseconds, 1_000) * 1_000
        let digits = String(fraction + 1_000).dropFirst()
        let text = gmt(milliseconds: milliseconds)
        return "\(text.prefix(10))T\(text.dropFirst(11).prefix(8)).\(digits)Z"
    }

    /// `"yyyy-MM-dd HH:mm:ss America/Los_Angeles"`, daylight saving applied.
    public static func pacific(milliseconds: Int64) -> String {
        let seconds = floorDivide(milliseconds, 1_000)
        let offset: Int64 = isPacificDaylightTime(utcSeconds: seconds) ? -7 * 3_600 : -8 * 3_600
        return format(seconds: seconds + offset, suffix: " America/Los_Angeles")
    }

    /// The three member names of a date field: `name`, `name_ms`, `name_pst`, built once.
    public struct Field: Sendable {
        let name: String
        let milliseconds: String
        let pacific: String

        /// The names for the field `name`.
        public init(_ name: String) {
            self.name = name
            milliseconds = name + "_ms"
            pacific = name + "_pst"
        }
    }

    /// Appends the three members of a date field to `object`.
    public static func append(_ field: Field, milliseconds: Int64, to object: inout JSONObject) {
        object.append(field.name, .string(gmt(milliseconds: milliseconds)))
        object.append(field.milliseconds, .string(String(milliseconds)))
        object.append(field.pacific, .string(pacific(milliseconds: milliseconds)))
    }

    // MARK: Calendar arithmetic (proleptic Gregorian, after Howard Hinnant's civil-from-days)

    static func isPacificDaylightTime(utcSeconds: Int64) -> Bool {
        let (year, _, _) = civil(fromDays: floorDivide(utcSeconds, 86_400))
        let start: Int64
        let end: Int64
        if year >= 2007 {
            // Second Sunday in March, 02:00 PST (10:00 UTC), to the first Sunday in November, 02:00 PDT (09:00 UTC).
            start = nthSunday(year: year, month: 3, n: 2) * 86_400 + 10 * 3_600
            end = nthSunday(year: year, month: 11, n: 1) * 86_400 + 9 * 3_600
        } else if year >= 1987 {
            // First Sunday in April to the last Sunday in October.
            start = nthSunday(year: year, month: 4, n: 1) * 86_400 + 10 * 3_600
            end = lastSunday(year: year, month: 10) * 86_400 + 9 * 3_600
        } else {
            // Last Sunday in April to the last Sunday in October (1967-1986); earlier receipts do not exist.
            start = lastSunday(year: year, month: 4) * 86_400 + 10 * 3_600
            end = lastSunday(year: year, month: 10) * 86_400 + 9 * 3_600
        }
        return utcSeconds >= start && utcSeconds < end
    }

    private static func nthSunday(year: Int64, month: Int64, n: Int64) -> Int64 {
        let first = daysFromCivil(year: year, month: month, day: 1)
        let weekday = weekday(days: first)  // 0 = Sunday
        return first + (7 - weekday) % 7 + (n - 1) * 7
    }

    private static func lastSunday(year: Int64, month: Int64) -> Int64 {
        let nextMonthFirst =
            month == 12
            ? daysFromCivil(year: year + 1, month: 1, day: 1) : daysFromCivil(year: year, month: month + 1, day: 1)
        let last = nextMonthFirst - 1
        return last - weekday(days: last)
    }

    /// 0 = Sunday … 6 = Saturday; 1970-01-01 was a Thursday.
    private static func weekday(days: Int64) -> Int64 {
        let value = (days + 4) % 7
        return value < 0 ? value + 7 : value
    }

    static func daysFromCivil(year: Int64, month: Int64, day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = floorDivide(y, 400)
        let yearOfEra = y - era * 400
        let monthIndex = month > 2 ? month - 3 : month + 9
        let dayOfYear = (153 * monthIndex + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    static func civil(fromDays days: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let z = days + 719_468
        let era = floorDivide(z, 146_097)
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1_460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    private static func format(seconds: Int64, suffix: StaticString) -> String {
        let days = floorDivide(seconds, 86_400)
        let secondOfDay = seconds - days * 86_400
        let (year, month, day) = civil(fromDays: days)
        guard (0...9_999).contains(year) else {
            // Outside four-digit years (never in real receipts): the slow, general path.
            return "\(year)-\(two(month))-\(two(day)) \(two(secondOfDay / 3_600)):\(two(secondOfDay / 60 % 60)):"
                + "\(two(secondOfDay % 60))\(suffix)"
        }
        let suffixCount = suffix.utf8CodeUnitCount
        return String(unsafeUninitializedCapacity: 19 + suffixCount) { buffer in
            func put(_ value: Int64, at index: Int, width: Int) {
                var value = value
                for offset in stride(from: width - 1, through: 0, by: -1) {
                    buffer[index + offset] = UInt8(ascii: "0") + UInt8(value % 10)
                    value /= 10
                }
            }
            put(year, at: 0, width: 4)
            buffer[4] = UInt8(ascii: "-")
            put(month, at: 5, width: 2)
            buffer[7] = UInt8(ascii: "-")
            put(day, at: 8, width: 2)
            buffer[10] = UInt8(ascii: " ")
            put(secondOfDay / 3_600, at: 11, width: 2)
            buffer[13] = UInt8(ascii: ":")
            put(secondOfDay / 60 % 60, at: 14, width: 2)
            buffer[16] = UInt8(ascii: ":")
            put(secondOfDay % 60, at: 17, width: 2)
            suffix.withUTF8Buffer { bytes in
                for (index, byte) in bytes.enumerated() { buffer[19 + index] = byte }
            }
            return 19 + suffixCount
        }
    }

    private static func two(_ value: Int64) -> String { value < 10 ? "0\(value)" : "\(value)" }

    private static func number(_ bytes: ArraySlice<UInt8>) -> Int? {
        var value = 0
        for byte in bytes {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            value = value * 10 + Int(byte - UInt8(ascii: "0"))
        }
        return bytes.isEmpty ? nil : value
    }

    static func floorDivide(_ lhs: Int64, _ rhs: Int64) -> Int64 {
        let quotient = lhs / rhs
        return (lhs % rhs != 0 && (lhs < 0) != (rhs < 0)) ? quotient - 1 : quotient
    }
}
