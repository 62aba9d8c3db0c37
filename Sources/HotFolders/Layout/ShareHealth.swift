import Batches
import Foundation
import System

/// Whether a hot folder's file system answers and takes data (reference: Hot folders on shares):
/// what the service watches so that a share that went away, or a full disk, is one event — claims
/// stop, photos in flight are left for recovery, nothing fails for good — and is taken up again the
/// moment it answers.
public enum ShareHealth: Sendable, Equatable {
    /// It answers and takes data.
    case available
    /// It does not answer (the server or the connection is gone: `ENOTCONN`, `EIO`, `ESTALE`…).
    case unavailable(since: Date, reason: String)
    /// It answers but takes no data (`ENOSPC`, `EDQUOT`; sshfs says `EIO` for a full disk).
    case full(since: Date, reason: String)

    public var isAvailable: Bool { self == .available }

    public var isFull: Bool {
        if case .full = self { return true }
        return false
    }

    /// Since when it has not been available.
    public var since: Date? {
        switch self {
        case .available: nil
        case .unavailable(let since, _), .full(let since, _): since
        }
    }

    /// In words, for STATUS.txt, `status` and the journal: "share unavailable since 14:02:07
    /// (cannot list …: Transport endpoint is not connected)".
    public var words: String {
        switch self {
        case .available: "available"
        case .unavailable(let since, let reason): "share unavailable since \(HumanTime.words(since)) (\(reason))"
        case .full(let since, let reason): "disk full since \(HumanTime.words(since)) (\(reason)): nothing new is claimed until there is room"
        }
    }

    /// `errno` values that say the file system (the server, the connection, the disk) failed,
    /// never that a photo is bad: a photo that meets one is left for a later try.
    public static let transportErrors: Set<Int32> = [
        EIO, ENOTCONN, ESTALE, EHOSTDOWN, EHOSTUNREACH, ENETDOWN, ENETUNREACH, ENETRESET, ETIMEDOUT,
        ECONNRESET, ECONNABORTED, ECONNREFUSED, ENODEV, ENXIO, EREMOTEIO, ENOLINK, ECOMM, EPIPE,
    ]
    /// `errno` values of a full disk or quota.
    public static let noSpaceErrors: Set<Int32> = [ENOSPC, EDQUOT]

    /// True when `error` is the file system's failure rather than the photo's: a full disk on
    /// any file system, an I/O or connection error on a share.
    public static func isShareFailure(_ error: SystemError, shared: Bool) -> Bool {
        noSpaceErrors.contains(error.code) || (shared && transportErrors.contains(error.code))
    }

    /// The same for an error known only by its message (a report item's `io-error`), which ends
    /// with the system's words for the `errno` (`strerror`).
    public static func isShareFailure(message: String, shared: Bool) -> Bool {
        let codes = shared ? noSpaceErrors.union(transportErrors) : noSpaceErrors
        return codes.contains { message.hasSuffix(String(cString: strerror($0))) || message.contains(": " + String(cString: strerror($0)) + " ") }
    }

    /// How much the probe of `check` writes.
    static let probeSize = 64 << 10

    /// Looks at the hot folder now, past the client's caches: `drop/` and `.work/` opened and
    /// listed afresh (a round trip to the server), then a small file written, synced, closed
    /// (a FUSE client's flush: `rclone mount` uploads it only then) and removed in `.work/`
    /// (a full disk refuses it).
    public static func check(_ layout: HotFolderLayout, now: Date = Date()) -> ShareHealth {
        do throws(SystemError) {
            let drop = try Directory(layout.drop)
            _ = try drop.names()
            _ = try drop.status()
            let work = try Directory(layout.work)
            let probe = FileName(".pf-space-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")!
            defer { try? work.remove(probe) }
            let file = try work.open(probe, .write, [.create, .exclusive], permissions: 0o600)
            try file.write([UInt8](repeating: 0x50, count: probeSize))
            try file.sync()
            try file.closeReporting()
            return .available
        } catch where noSpaceErrors.contains(error.code) {
            return .full(since: now, reason: error.description)
        } catch where error.code == EIO && error.call != "list" && error.call != "open" && hasNoRoom(layout) {
            // Listing and opening worked, writing did not, and the file system says it has no
            // room: a full disk that the client reports as EIO (sshfs, rclone mount).
            return .full(since: now, reason: error.description)
        } catch {
            return .unavailable(since: now, reason: error.description)
        }
    }

    /// True when `statvfs` of `.work/` says less room than the probe needs (sshfs and `rclone
    /// mount` pass the server's free space on; rclone asks again after `--dir-cache-time`), or
    /// cannot say: an `EIO` from writing is then taken for a full disk, as before there was a way
    /// to tell. Room enough, and the `EIO` is another failure of the share.
    static func hasNoRoom(_ layout: HotFolderLayout) -> Bool {
        guard let free = try? FreeSpace.available(at: layout.work) else { return true }
        return free < Int64(probeSize)
    }
}
