import Glibc

/// A system call that failed: what was being done, to which path, and the kernel's reason
/// (`errno`). The one error type of the `System` module: every call below turns `-1` + `errno`
/// into this value once, right after the call, so the code above never reads `errno`.
public struct SystemError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The `errno` value (`ENOENT`, `EACCES`, `ENOSPC`…).
    public var code: Int32
    /// What was being done, as a person reads it: `"open"`, `"rename"`, `"read"`.
    public var call: String
    /// The path it was done to (or `"a to b"`), with names escaped as `FileName.escaped`.
    public var path: String

    /// - Parameters:
    ///   - call: what was being done (`"open"`, `"write the manifest in"`).
    ///   - path: the path, or paths, it concerned.
    ///   - code: the `errno` value, taken right after the failed call.
    public init(_ call: String, _ path: String, errno code: Int32) {
        self.call = call
        self.path = path
        self.code = code
    }

    /// The system's words for `code` ("No space left on device").
    public var reason: String { String(cString: strerror(code)) }

    /// "cannot open /srv/hot/drop/a.jpg: Permission denied".
    public var description: String { "cannot \(call) \(path): \(reason)" }

    /// The disk (or the user's quota) is full.
    public var isNoSpace: Bool { code == ENOSPC || code == EDQUOT }
}

/// The one place that retries a system call interrupted by a signal (`EINTR`) and reads
/// `errno`. Every call in this module goes through it.
enum Syscall {
    /// Runs `body` until it does not fail with `EINTR`.
    /// - Returns: its result, or `.failure(errno)` when it returned -1.
    @inline(__always)
    static func run<T: FixedWidthInteger>(_ body: () -> T) -> Result<T, Errno> {
        while true {
            let r = body()
            if r != -1 { return .success(r) }
            let e = errno
            if e != EINTR { return .failure(Errno(code: e)) }
        }
    }

    /// Runs `body` (retrying `EINTR`) and throws a `SystemError` naming `call` and `path`
    /// when it fails.
    @inline(__always)
    static func check<T: FixedWidthInteger>(_ call: String, _ path: @autoclosure () -> String,
                                            _ body: () -> T) throws(SystemError) -> T {
        switch run(body) {
        case .success(let r): return r
        case .failure(let e): throw SystemError(call, path(), errno: e.code)
        }
    }
}

/// An `errno` value as an `Error` (for `Result`).
struct Errno: Error, Equatable {
    var code: Int32
}
