import Foundation

/// Waiting on a condition with a deadline, never a fixed sleep (HELPER-RULES, STYLE).
public enum Poll {
    /// Checks `condition` every `every` (20 ms) until it holds or `deadline` passes; true when
    /// it held.
    @discardableResult
    public static func until(_ deadline: Duration, every: Duration = .milliseconds(20), _ condition: () -> Bool) -> Bool {
        let end = ContinuousClock.now + deadline
        while ContinuousClock.now < end {
            if condition() { return true }
            usleep(UInt32(every / .microseconds(1)))
        }
        return condition()
    }
}
