internal import CShims
import Glibc

/// The process's own resources: its open-file limit and its threads' CPU priority.
public enum ProcessResources {
    /// The limit of open files (`RLIMIT_NOFILE`): soft (in force) and hard (the most the
    /// soft limit may be raised to without privilege).
    public static func openFiles() throws(SystemError) -> (soft: UInt64, hard: UInt64) {
        var limit = rlimit()
        _ = try Syscall.check("read the open-file limit of", "this process") {
            getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit)
        }
        return (UInt64(limit.rlim_cur), UInt64(limit.rlim_max))
    }

    /// Raises the soft limit of open files to the hard limit (the default soft limit, 1,024,
    /// is too few for hundreds of hot folders). No call is made when they are equal already.
    /// - Returns: the limits now in force.
    @discardableResult
    public static func raiseOpenFiles() throws(SystemError) -> (soft: UInt64, hard: UInt64) {
        var limit = rlimit()
        let resource = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
        _ = try Syscall.check("read the open-file limit of", "this process") { getrlimit(resource, &limit) }
        if limit.rlim_cur < limit.rlim_max {
            var raised = limit
            raised.rlim_cur = limit.rlim_max
            _ = try Syscall.check("raise the open-file limit of", "this process") { setrlimit(resource, &raised) }
            limit = raised
        }
        return (UInt64(limit.rlim_cur), UInt64(limit.rlim_max))
    }

    /// Sets the calling thread's nice value (on Linux the nice value is per thread, and
    /// `who = 0` is the calling thread). Raising it (lowering the priority) needs no privilege.
    /// - Throws: `SystemError` (`EPERM` under a system call filter that forbids `setpriority`).
    public static func setThreadNice(_ value: Int32) throws(SystemError) {
        _ = try Syscall.check("set the CPU priority of", "this thread") {
            setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, value)
        }
    }

    /// The calling thread's id (`gettid`): what `setNice(_:ofThread:)` takes.
    public static func threadID() -> Int32 { pf_thread_id() }

    /// Sets the nice value of the thread `id` of this process (`threadID()` of that thread):
    /// raising it needs no privilege; lowering it needs `RLIMIT_NICE` (the unit's `LimitNICE=`).
    public static func setNice(_ value: Int32, ofThread id: Int32) throws(SystemError) {
        _ = try Syscall.check("set the CPU priority of", "thread \(id)") {
            setpriority(__priority_which_t(PRIO_PROCESS.rawValue), id_t(id), value)
        }
    }

    /// Names the calling thread (at most 15 bytes are kept), for `top -H` and
    /// `/proc/<pid>/task/<tid>/comm`.
    public static func nameThisThread(_ name: String) {
        _ = pf_set_thread_name(name)
    }

    /// When the process `pid` started: field 22 of `/proc/PID/stat`, in clock ticks since the
    /// boot (nil when it is gone or cannot be read). A pid the kernel gave again to another
    /// process has another start time: with its pid, it names one process for as long as the
    /// machine runs.
    public static func startTime(of pid: Int32) -> UInt64? {
        guard pid > 0, let bytes = (try? Files.read("/proc/\(pid)/stat")).flatMap({ $0 }),
              let close = bytes.lastIndex(of: UInt8(ascii: ")")) else { return nil }
        // After the command's ") " come the fields from the third on: the 22nd is the 20th of them.
        let fields = bytes[(close + 1)...].split(separator: UInt8(ascii: " "))
        guard fields.count > 19 else { return nil }
        return UInt64(String(decoding: fields[fields.startIndex + 19], as: UTF8.self))
    }

    /// The calling thread's nice value.
    public static func threadNice() -> Int32 {
        errno = 0
        return getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0)
    }
}
