import Batches
import Foundation
import Testing

/// Times for people: local time with its offset from UTC; what machines read stays UTC.
struct HumanTimeTests {
    @Test func localTimeWithItsOffset() throws {
        let date = try #require(HumanTime.date(isoUTC: "2026-11-29T15:04:05.250Z"))
        #expect(date.timeIntervalSince1970 == 1_795_964_645.25)
        // What Foundation says of the same instant in this machine's time zone.
        let zone = TimeZone.current
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        let c = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second], from: date)
        let offset = zone.secondsFromGMT(for: date) / 60
        let expected = String(format: "%04d-%02d-%02d %02d:%02d:%02d %@%02d:%02d", c.year!, c.month!, c.day!, c.hour!,
                              c.minute!, c.second!, offset < 0 ? "-" : "+", abs(offset) / 60, abs(offset) % 60)
        #expect(HumanTime.words(date) == expected)
        #expect(HumanTime.words(isoUTC: "2026-11-29T15:04:05Z") == expected)
        #expect(HumanTime.words(isoUTC: "yesterday") == "yesterday")
        #expect(HumanTime.date(isoUTC: "2026-11-29 15:04:05") == nil)
    }
}
