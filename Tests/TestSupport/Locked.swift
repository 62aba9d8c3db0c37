import Foundation

/// A value a test shares with `@Sendable` closures and background readers.
public final class Locked<T>: @unchecked Sendable {
    private var stored: T
    private let lock = NSLock()

    public init(_ value: T) { stored = value }

    /// The value now.
    public var value: T { lock.lock(); defer { lock.unlock() }; return stored }

    /// Replaces the value.
    public func set(_ value: T) { lock.lock(); stored = value; lock.unlock() }

    /// Changes the value in place, under the lock.
    public func update(_ change: (inout T) -> Void) { lock.lock(); change(&stored); lock.unlock() }
}
