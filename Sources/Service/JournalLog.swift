internal import CSystemd
import Foundation
import HotFolders

/// Where log lines go: the journal (with priority and fields: `INBOX`, `BATCH`, `FILE`) when
/// systemd connected our stderr to it, or readable lines on stderr otherwise.
public enum ServiceLog {
    /// True when stderr is the journal stream systemd gave us (`$JOURNAL_STREAM` names its
    /// device and inode), so structured entries replace plain lines.
    public static var stderrIsJournal: Bool {
        guard let stream = ProcessInfo.processInfo.environment["JOURNAL_STREAM"] else { return false }
        let parts = stream.split(separator: ":")
        var st = stat()
        guard parts.count == 2, fstat(STDERR_FILENO, &st) == 0 else { return false }
        return UInt64(parts[0]) == UInt64(st.st_dev) && UInt64(parts[1]) == UInt64(st.st_ino)
    }

    /// The logger for this process: journal or terminal, lines below `minimum` dropped.
    public static func make(minimum: Logger.Priority = .info) -> Logger {
        if stderrIsJournal {
            return Logger { priority, message, fields in
                guard priority <= minimum else { return }
                journal(priority, message, fields)
            }
        }
        return Logger { priority, message, fields in
            guard priority <= minimum else { return }
            FileHandle.standardError.write(Data(terminalLine(priority, message, fields).utf8))
        }
    }

    /// `16:45:02 warning: shop 20261129-164500-3f2a: x.jpg: message`: the time, the priority
    /// when it is a warning or an error, and the line as the `Logger` put it (led by its hot
    /// folder, batch and file).
    static func terminalLine(_ priority: Logger.Priority, _ text: String, _ fields: LogFields) -> String {
        var t = time(nil)
        var parts = tm()
        localtime_r(&t, &parts)
        var line = String(format: "%02d:%02d:%02d ", parts.tm_hour, parts.tm_min, parts.tm_sec)
        switch priority {
        case .error: line += "error: "
        case .warning: line += "warning: "
        default: break
        }
        return line + text + "\n"
    }

    /// One structured journal entry via `sd_journal_sendv`.
    static func journal(_ priority: Logger.Priority, _ message: String, _ fields: LogFields) {
        var entries = ["MESSAGE=" + message, "PRIORITY=\(priority.rawValue)", "SYSLOG_IDENTIFIER=photofinish"]
        for (key, value) in fields.sorted(by: { $0.key < $1.key }) { entries.append(key + "=" + value) }
        let buffers = entries.map { Array($0.utf8) }
        var iovecs: [iovec] = []
        var pointers: [UnsafeMutablePointer<UInt8>] = []
        defer { pointers.forEach { $0.deallocate() } }
        for b in buffers {
            let p = UnsafeMutablePointer<UInt8>.allocate(capacity: b.count)
            p.initialize(from: b, count: b.count)
            pointers.append(p)
            iovecs.append(iovec(iov_base: UnsafeMutableRawPointer(p), iov_len: b.count))
        }
        _ = iovecs.withUnsafeBufferPointer { sd_journal_sendv($0.baseAddress, Int32($0.count)) }
    }
}
