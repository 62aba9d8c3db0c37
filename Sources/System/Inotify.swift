import Glibc

/// Linux inotify: the kernel tells which names in a watched folder were written, moved in or
/// out, and when the folder itself went away. A thin layer over the syscalls. It sees only
/// this machine's changes: on a network or FUSE file system (`FileSystemType.isShared`)
/// other machines' writes reach no watch.
public enum Inotify {
    /// What the kernel allows each user of inotify (`fs.inotify.max_user_watches` and
    /// `max_user_instances`): shared by all of the user's programs.
    public struct Limits: Sendable, Equatable {
        public var watches: Int
        public var instances: Int

        public init(watches: Int, instances: Int) {
            self.watches = watches
            self.instances = instances
        }

        /// This machine's, from /proc (nil when it does not say).
        public static func current() -> Limits? {
            func read(_ name: String) -> Int? {
                guard let bytes = try? Files.read("/proc/sys/fs/inotify/" + name) else { return nil }
                return Int(String(decoding: bytes, as: UTF8.self).filter { !$0.isWhitespace })
            }
            guard let watches = read("max_user_watches"), let instances = read("max_user_instances") else { return nil }
            return Limits(watches: watches, instances: instances)
        }
    }

    /// What a watch reports.
    public struct Events: OptionSet, Sendable, Hashable {
        public let rawValue: UInt32
        public init(rawValue: UInt32) { self.rawValue = rawValue }

        /// A file opened for writing was closed. The corresponding C constant is `IN_CLOSE_WRITE`.
        public static let closeWrite = Events(rawValue: UInt32(IN_CLOSE_WRITE))
        /// A name was moved into the folder. The corresponding C constant is `IN_MOVED_TO`.
        public static let movedTo = Events(rawValue: UInt32(IN_MOVED_TO))
        /// A name was moved out of the folder. The corresponding C constant is `IN_MOVED_FROM`.
        public static let movedFrom = Events(rawValue: UInt32(IN_MOVED_FROM))
        /// A name was created. The corresponding C constant is `IN_CREATE`.
        public static let create = Events(rawValue: UInt32(IN_CREATE))
        /// A name was deleted. The corresponding C constant is `IN_DELETE`.
        public static let delete = Events(rawValue: UInt32(IN_DELETE))
        /// Metadata changed (also a hard link added). The corresponding C constant is `IN_ATTRIB`.
        public static let attrib = Events(rawValue: UInt32(IN_ATTRIB))
        /// The watched folder itself was deleted. The corresponding C constant is `IN_DELETE_SELF`.
        public static let deleteSelf = Events(rawValue: UInt32(IN_DELETE_SELF))
        /// The watched folder itself was moved. The corresponding C constant is `IN_MOVE_SELF`.
        public static let moveSelf = Events(rawValue: UInt32(IN_MOVE_SELF))
        /// The file system holding the folder was unmounted. The corresponding C constant is `IN_UNMOUNT`.
        public static let unmount = Events(rawValue: UInt32(IN_UNMOUNT))
        /// The kernel's queue overflowed: events were lost. The corresponding C constant is `IN_Q_OVERFLOW`.
        public static let queueOverflow = Events(rawValue: UInt32(IN_Q_OVERFLOW))
        /// The watch is gone (its folder was deleted or unmounted). The corresponding C constant is `IN_IGNORED`.
        public static let ignored = Events(rawValue: UInt32(IN_IGNORED))
        /// Only watch the path if it is a folder. The corresponding C constant is `IN_ONLYDIR`.
        public static let onlyDirectory = Events(rawValue: UInt32(IN_ONLYDIR))
        /// Do not follow a symlink at the path. The corresponding C constant is `IN_DONT_FOLLOW`.
        public static let dontFollow = Events(rawValue: UInt32(IN_DONT_FOLLOW))
        /// The event concerns a folder. The corresponding C constant is `IN_ISDIR`.
        public static let isDirectory = Events(rawValue: UInt32(IN_ISDIR))

        /// What a hot folder's `drop/` is watched for.
        public static let dropFolder: Events = [.closeWrite, .movedTo, .movedFrom, .delete, .attrib, .deleteSelf,
                                                .moveSelf, .unmount, .onlyDirectory, .dontFollow]
        /// Events after which a watch is dead and the folder must be found again.
        public static let folderGone: Events = [.deleteSelf, .moveSelf, .unmount, .ignored]
    }

    /// One event: which watch, what happened, and the name inside the folder (if any).
    public struct Event: Sendable, Equatable {
        public var watch: Int32
        public var events: Events
        public var name: FileName?
    }

    /// An inotify instance (non-blocking), closed when dropped.
    public final class Instance: Sendable {
        let descriptor: FileDescriptor
        private var fd: Int32 { descriptor.raw }

        /// - Throws: `SystemError` when the kernel refuses (`EMFILE`: too many instances).
        public init() throws(SystemError) {
            let fd = try Syscall.check("start inotify for", "hot folders") { inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC)) }
            descriptor = FileDescriptor(owning: fd, path: "inotify")
        }

        /// Watches `path` for `events`. `ENOSPC` means the user's watch limit
        /// (`fs.inotify.max_user_watches`) is reached: the caller falls back to polling.
        public func addWatch(_ path: some FilePathRepresentable, events: Events) throws(SystemError) -> Int32 {
            let path = path.filePath
            return try Syscall.check("watch", path.description) { path.withCString { inotify_add_watch(fd, $0, events.rawValue) } }
        }

        /// Stops a watch (fine when the kernel dropped it already).
        public func removeWatch(_ wd: Int32) {
            _ = inotify_rm_watch(fd, wd)
        }

        /// Waits up to `timeout` for events and returns all that are queued (empty on timeout).
        public func read(timeout: Duration) -> [Event] {
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ms = Int32(max(0, min(Int64(Int32.max), Int64(timeout / .milliseconds(1)))))
            guard case .success(let ready) = Syscall.run({ poll(&pfd, 1, ms) }), ready > 0 else { return [] }
            var out: [Event] = []
            // Room for many events at once; a single event is at most header + NAME_MAX + 1.
            var buffer = [UInt8](repeating: 0, count: 64 * 1024)
            while true {
                // Non-blocking: EAGAIN once the queue is empty.
                let n = buffer.withUnsafeMutableBytes { raw in Syscall.run { Glibc.read(fd, raw.baseAddress!, raw.count) } }
                guard case .success(let count) = n, count > 0 else { break }
                out += Self.parse(buffer[0..<count])
            }
            return out
        }

        /// Splits raw `struct inotify_event` records.
        static func parse(_ bytes: ArraySlice<UInt8>) -> [Event] {
            var events: [Event] = []
            let header = MemoryLayout<inotify_event>.size
            bytes.withUnsafeBytes { raw in
                var offset = 0
                while offset + header <= raw.count {
                    let wd = raw.loadUnaligned(fromByteOffset: offset, as: Int32.self)
                    let mask = raw.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self)
                    let length = Int(raw.loadUnaligned(fromByteOffset: offset + 12, as: UInt32.self))
                    var name: FileName?
                    if length > 0 {
                        let bytes = raw[(offset + header)..<min(raw.count, offset + header + length)]
                        name = FileName(bytes: bytes.prefix(while: { $0 != 0 }))
                    }
                    events.append(Event(watch: wd, events: Events(rawValue: mask), name: name))
                    offset += header + length
                }
            }
            return events
        }
    }
}
