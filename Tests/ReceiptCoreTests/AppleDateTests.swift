import Foundation
import ReceiptCore
import Testing

@Suite struct AppleDateTests {
    @Test(arguments: [
        ("2020-07-14T19:36:40Z", "2020-07-14 19:36:40 Etc/GMT", "2020-07-14 12:36:40 America/Los_Angeles"),
        ("2020-03-08T09:59:59Z", "2020-03-08 09:59:59 Etc/GMT", "2020-03-08 01:59:59 America/Los_Angeles"),
        ("2020-03-08T10:00:00Z", "2020-03-08 10:00:00 Etc/GMT", "2020-03-08 03:00:00 America/Los_Angeles"),
        ("2020-11-01T08:59:59Z", "2020-11-01 08:59:59 Etc/GMT", "2020-11-01 01:59:59 America/Los_Angeles"),
        ("2020-11-01T09:00:00Z", "2020-11-01 09:00:00 Etc/GMT", "2020-11-01 01:00:00 America/Los_Angeles"),
        ("2006-04-02T10:00:00Z", "2006-04-02 10:00:00 Etc/GMT", "2006-04-02 03:00:00 America/Los_Angeles"),
        ("2006-10-29T08:59:59Z", "2006-10-29 08:59:59 Etc/GMT", "2006-10-29 01:59:59 America/Los_Angeles"),
        ("4001-01-01T00:00:00Z", "4001-01-01 00:00:00 Etc/GMT", "4000-12-31 16:00:00 America/Los_Angeles"),
        ("2024-02-29T23:59:59.999Z", "2024-02-29 23:59:59 Etc/GMT", "2024-02-29 15:59:59 America/Los_Angeles"),
    ])
    func rendersAppleThreeForms(rfc3339: String, gmt: String, pacific: String) throws {
        let millis = try #require(AppleDate.milliseconds(rfc3339: Array(rfc3339.utf8)))
        #expect(AppleDate.gmt(milliseconds: millis) == gmt)
        #expect(AppleDate.pacific(milliseconds: millis) == pacific)
    }

    @Test func millisecondsMatchFoundation() throws {
        #expect(AppleDate.milliseconds(rfc3339: Array("2020-07-22T17:39:08Z".utf8)) == 1_595_439_548_000)
        #expect(AppleDate.milliseconds(rfc3339: Array("1970-01-01T00:00:00.5Z".utf8)) == 500)
        #expect(AppleDate.milliseconds(rfc3339: Array("4001-01-01T00:00:00Z".utf8)) == 64_092_211_200_000)
    }

    /// RFC 3339 / ISO 8601 forms receipts carry: Apple's `Z`, fractions (truncated to milliseconds), and the offsets
    /// Xcode writes in a non-UTC time zone; each names the same instant as its UTC twin.
    @Test(arguments: [
        ("2020-10-16T14:29:30+0300", "2020-10-16T11:29:30Z"),
        ("2020-10-16T14:29:30+03:00", "2020-10-16T11:29:30Z"),
        ("2020-10-16T04:29:30-07:00", "2020-10-16T11:29:30Z"),
        ("2020-10-16T06:59:30-0430", "2020-10-16T11:29:30Z"),
        ("2020-10-17T00:29:30+13:00", "2020-10-16T11:29:30Z"),
        ("2020-10-16T11:29:30+00:00", "2020-10-16T11:29:30Z"),
        ("2020-10-16t11:29:30z", "2020-10-16T11:29:30Z"),
        ("2020-10-03T07:12:34.567Z", "2020-10-03T07:12:34.567Z"),
        ("2020-10-03T07:12:34.5678Z", "2020-10-03T07:12:34.567Z"),
        ("2020-10-03T07:12:34.123456789Z", "2020-10-03T07:12:34.123Z"),
        ("2020-10-03T10:12:34.56+03:00", "2020-10-03T07:12:34.560Z"),
        ("2021-01-01T01:00:00+02:00", "2020-12-31T23:00:00Z"),
    ])
    func acceptsOffsetsAndFractions(text: String, utc: String) throws {
        let millis = try #require(AppleDate.milliseconds(rfc3339: Array(text.utf8)))
        let expected = try #require(AppleDate.milliseconds(rfc3339: Array(utc.utf8)))
        #expect(millis == expected)
        let foundation = try Date.ISO8601FormatStyle(includingFractionalSeconds: utc.contains(".")).parse(utc)
        #expect(expected == Int64((foundation.timeIntervalSince1970 * 1_000).rounded()))
    }

    @Test(arguments: [
        "", "2020-07-14", "2020-13-01T00:00:00Z", "2020-07-14T19:36:40", "2020-07-14T19:36:40.Z",
        "2020-07-14T19:36:40+2", "2020-07-14T19:36:40+02", "2020-07-14T19:36:40+02:0", "2020-07-14T19:36:40+24:00",
        "2020-07-14T19:36:40+02:60", "2020-07-14T19:36:40 +02:00", "2020-07-14T19:36:40Z+02:00",
        "2020-07-14T19:36:40.1234567890Z", "2020-07-14T19:36:40.12a4Z", "2020-07-14 19:36:40Z", "2020-07-14T19:36:40ZZ",
        "2020-07-14T19:36:40+02-00",
    ])
    func rejectsWhatIsNotAReceiptDate(text: String) {
        #expect(AppleDate.milliseconds(rfc3339: Array(text.utf8)) == nil)
    }

    @Test func pacificTimeAgreesWithTheSystemTimeZoneDatabase() throws {
        let zone = try #require(TimeZone(identifier: "America/Los_Angeles"))
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        var generator = SplitMix(seed: 2_026)
        // Every hour boundary near each transition, plus random instants, 1990-2037.
        for _ in 0..<5_000 {
            let seconds = Int64(631_152_000 + generator.next() % (2_114_380_800 - 631_152_000))
            let date = Date(timeIntervalSince1970: TimeInterval(seconds))
            let parts = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second], from: date)
            let expected = String(
                format: "%04d-%02d-%02d %02d:%02d:%02d America/Los_Angeles", parts.year!, parts.month!, parts.day!,
                parts.hour!, parts.minute!, parts.second!)
            #expect(AppleDate.pacific(milliseconds: seconds * 1_000) == expected)
        }
    }
}

/// A small deterministic generator, so the sweep is the same on every run.
struct SplitMix: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
