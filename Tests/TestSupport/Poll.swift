import Foundation

/// Waiting on a condition with a deadline, never a fixed sleep.
public enum Poll {
    /// Checks `condition` every `every` (20 ms) until it holds or `deadline` passes; true when
    /// it held. A condition that throws ends the wait with its error.
    @discardableResult
    public static func until(_ deadline: Duration, every: Duration = .milliseconds(20), _ condition: () throws -> Bool) rethrows -> Bool {
        let end = ContinuousClock.now + deadline
        while ContinuousClock.now < end {
            if try condition() { return true }
            usleep(UInt32(every / .microseconds(1)))
        }
        return try condition()
    }
}
