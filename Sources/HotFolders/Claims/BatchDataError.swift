/// A batch's own file that is there and read but cannot be used: a manifest that does not
/// decode. No system call failed (no `errno`), so it is not a `SystemError`: what could not be
/// done, to which file, and why, in the same words ("cannot decode …/manifest.json: …").
public struct BatchDataError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What was being done: `"decode"`.
    public var action: String
    /// The file it concerned.
    public var path: String
    /// What is wrong with it.
    public var reason: String

    public init(_ action: String, _ path: String, reason: String) {
        self.action = action
        self.path = path
        self.reason = reason
    }

    public var description: String { "cannot \(action) \(path): \(reason)" }
}
