internal import CSystemd
import Glibc
import Synchronization

/// The listening sockets systemd passed in (socket activation: `LISTEN_FDS`, `LISTEN_FDNAMES`,
/// as `systemd-socket-activate` passes them too), read once for the whole process and handed
/// out by their `FileDescriptorName=`: the metrics endpoint takes `metrics`, the web console
/// `web`. Reading them unsets the `LISTEN_*` variables, so hooks and other children never see
/// them; only stream sockets are handed out.
public enum PassedSockets {
    private static let table = Mutex<[(fd: Int32, name: String)]?>(nil)

    /// The sockets named `name`, taken (a second call for the same name gets none). With
    /// `orUnnamed`, also every socket passed without a name when none has one (systemd names
    /// those `unknown`: `systemd-socket-activate -l 9000` without `--fdname`).
    public static func take(_ name: String, orUnnamed: Bool = false) -> [Int32] {
        table.withLock { table in
            if table == nil { table = readFromEnvironment() }
            let all = table ?? []
            let unnamed = orUnnamed && !all.isEmpty && all.allSatisfy { $0.name == "unknown" }
            let taken = all.filter { $0.name == name || unnamed }
            table = all.filter { entry in !taken.contains { $0.fd == entry.fd } }
            return taken.map(\.fd)
        }
    }

    private static func readFromEnvironment() -> [(fd: Int32, name: String)] {
        var names: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?
        let count = sd_listen_fds_with_names(1, &names)
        guard count > 0 else { return [] }
        defer {
            for i in 0..<Int(count) { free(names?[i]) }
            free(names)
        }
        return (0..<count).compactMap { i in
            let fd = SD_LISTEN_FDS_START + i
            guard sd_is_socket(fd, AF_UNSPEC, Int32(SOCK_STREAM.rawValue), 1) > 0 else { return nil }
            return (fd, names?[Int(i)].map { String(cString: $0) } ?? "unknown")
        }
    }
}
