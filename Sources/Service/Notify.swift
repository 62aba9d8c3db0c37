internal import CSystemd
import Foundation

/// Talking to systemd (`Type=notify`): `READY=1`, `STATUS=…`, `WATCHDOG=1`, `RELOADING=1`,
/// `STOPPING=1` over `$NOTIFY_SOCKET`. Without that variable (a terminal) every call does
/// nothing. libsystemd returns `-errno`; a failure is returned, never thrown: the daemon
/// works on without a supervisor.
public enum Notify {
    /// True when a supervisor listens (`$NOTIFY_SOCKET` is set).
    public static var isSupervised: Bool { ProcessInfo.processInfo.environment["NOTIFY_SOCKET"] != nil }

    /// Sends one or more `KEY=VALUE` lines.
    /// - Returns: `nil` on success, or the system's reason.
    @discardableResult
    public static func send(_ state: String) -> String? {
        let r = sd_notify(0, state)
        return r < 0 ? String(cString: strerror(-r)) : nil
    }

    public static func ready(status: String) { send("READY=1\nSTATUS=\(status)") }
    public static func status(_ text: String) { send("STATUS=\(text)") }
    public static func stopping() { send("STOPPING=1\nSTATUS=stopping: finishing the photos in flight") }

    /// `RELOADING=1` with the `MONOTONIC_USEC` systemd 253+ asks for.
    public static func reloading() {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        let usec = UInt64(ts.tv_sec) * 1_000_000 + UInt64(ts.tv_nsec) / 1000
        send("RELOADING=1\nMONOTONIC_USEC=\(usec)")
    }

    public static func watchdog() { send("WATCHDOG=1") }

    /// The watchdog interval systemd asks for (`WatchdogSec=`), or `nil` when none.
    public static var watchdogInterval: Duration? {
        var usec: UInt64 = 0
        guard sd_watchdog_enabled(0, &usec) > 0, usec > 0 else { return nil }
        return .microseconds(Int64(usec))
    }
}
