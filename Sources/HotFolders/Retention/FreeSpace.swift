import Batches
import Glibc
import System

/// `minFreeSpace` (reference: Retention and free space): how much room a hot folder's file system
/// has, and whether it is under the minimum, below which nothing new is claimed there (what is
/// claimed already is finished: its outputs need room, the claim itself needs none).
public enum FreeSpace {
    /// What `check` found.
    public enum Reading: Sendable, Equatable {
        /// At least the minimum is free.
        case enough(available: Int64)
        /// Less than the minimum is free: claim nothing new.
        case low(available: Int64, minimum: Int64)
        /// The file system could not be asked (the error in words): not a reason to stop.
        case unknown(String)

        /// True when nothing new should be claimed.
        public var isLow: Bool {
            if case .low = self { return true }
            return false
        }

        /// The sentence for STATUS.txt, `status` and the log; nil when there is enough.
        /// - Parameter path: the hot folder's root, as it is named to people.
        public func words(_ path: String) -> String? {
            guard case .low(let available, let minimum) = self else { return nil }
            return "only \(ByteCount.words(Int(available))) free on the file system of \(path), under minFreeSpace "
                + "\(ByteCount.words(Int(minimum))): nothing new is claimed until there is more (files wait in drop/)"
        }
    }

    /// Bytes an unprivileged writer may still use on the file system of `path` (`statvfs`:
    /// `f_bavail` blocks of `f_frsize`; root's reserve is not counted).
    /// - Throws: `SystemError` when the file system cannot be asked.
    public static func available(at path: String) throws(SystemError) -> Int64 {
        var st = statvfs()
        let result = path.withCString { statvfs($0, &st) }
        guard result == 0 else { throw SystemError("statvfs", path, errno: errno) }
        let (bytes, overflow) = Int64(clamping: st.f_bavail).multipliedReportingOverflow(by: Int64(clamping: st.f_frsize))
        return overflow ? .max : bytes
    }

    /// Whether the file system of `path` has at least `minimum` bytes free.
    public static func check(_ path: String, minimum: Int) -> Reading {
        do throws(SystemError) {
            let free = try available(at: path)
            return free < Int64(minimum) ? .low(available: free, minimum: Int64(minimum)) : .enough(available: free)
        } catch {
            return .unknown("\(error)")
        }
    }
}
