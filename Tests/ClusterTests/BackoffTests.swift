@testable import Cluster
import Testing

@Suite struct BackoffTests {
    @Test func doublesUpToTheMaximum() {
        let b = Backoff(first: .milliseconds(100), maximum: .seconds(5), jitter: 0.2)
        // random 0.5 is the middle of the jitter: the plain doubling.
        let waits = (0..<10).map { b.delay(after: $0, random: 0.5) }
        #expect(waits == [.milliseconds(100), .milliseconds(200), .milliseconds(400), .milliseconds(800),
                          .milliseconds(1600), .milliseconds(3200), .seconds(5), .seconds(5), .seconds(5), .seconds(5)])
        #expect(b.delay(after: 1_000_000, random: 0.5) == .seconds(5))
    }

    @Test func jitterStaysWithinItsFraction() {
        let b = Backoff(first: .seconds(1), maximum: .seconds(1), jitter: 0.2)
        #expect(b.delay(after: 0, random: 0) == .milliseconds(800))
        #expect(b.delay(after: 0, random: 0.999_999) < .milliseconds(1200))
        #expect(b.delay(after: 0, random: 0.999_999) > .milliseconds(1199))
    }
}
