/// How long to wait before the next attempt to reach the database: doubling from `first` up to
/// `maximum`, each wait drawn within ±`jitter` of it so hosts that lost the server together do
/// not all knock at once when it is back.
public struct Backoff: Sendable, Equatable {
    public var first: Duration
    public var maximum: Duration
    /// The fraction each wait may stray from the doubling (0.2: 80–120 %).
    public var jitter: Double

    public init(first: Duration = .milliseconds(100), maximum: Duration = .seconds(5), jitter: Double = 0.2) {
        precondition(first > .zero && maximum >= first && (0..<1).contains(jitter))
        self.first = first
        self.maximum = maximum
        self.jitter = jitter
    }

    /// The wait before attempt `attempt + 1` after `attempt` failures in a row (0: the first
    /// failure). `random` is a draw in 0..<1 (the tests give their own).
    public func delay(after attempt: Int, random: Double = Double.random(in: 0..<1)) -> Duration {
        var wait = first
        var n = 0
        while n < attempt && wait < maximum {
            wait = wait * 2
            n += 1
        }
        wait = min(wait, maximum)
        return wait * (1 - jitter + 2 * jitter * random)
    }
}
