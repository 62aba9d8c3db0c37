import System

/// What a hot folder's file system allows (reference: Hot folders on shares), found once when the
/// folder is started: which file system `drop/` is on (`statfs`, and the mount table's type, which
/// names a FUSE client: `fuse.sshfs`), so a network or FUSE one is polled (inotify sees only this
/// machine's writes there) and its files are looked at past the client's caches; and which claim
/// primitive works in `.work/` (a probe: `Mover.probe`).
public struct FolderSystem: Sendable, Equatable {
    /// The file system `drop/` is on.
    public var type: FileSystemType
    /// The mount's type in /proc/self/mountinfo (`"fuse.sshfs"`, `"nfs4"`), when known.
    public var mount: String?
    /// How names are moved in this hot folder.
    public var mover: Mover

    public init(type: FileSystemType, mount: String? = nil, mover: Mover) {
        self.type = type
        self.mount = mount
        self.mover = mover
    }

    /// A local disk with rename flags: what tests and `run` assume.
    public static let local = FolderSystem(type: FileSystemType(magic: 0xEF53), mover: Mover(.renameNoReplace))

    /// inotify cannot see other machines' writes here: `drop/` is polled every `pollInterval`,
    /// and its files are looked at afresh (`Directory.freshStatus(of:)`).
    public var isShared: Bool { type.isShared }

    /// The file system's name for people: the mount's type where it says more than the kernel's
    /// (`fuse.sshfs` rather than `fuse`), else `ext4`, `nfs`…
    public var name: String {
        guard let mount, mount != type.name, !mount.isEmpty else { return type.name }
        return mount
    }

    /// How much longer than `settle` a file must hold still here: what a share client's caches
    /// hide even from a fresh open. `rclone mount` gives sizes and times from its folder
    /// listing (`--dir-cache-time`, which must be at most `pollInterval` for other machines'
    /// files to be seen in time) and its attribute cache (`--attr-timeout`, 1 s); sshfs, NFS and
    /// SMB clients fetch a file's attributes when it is opened, so nothing is added there.
    public func settleAllowance(pollInterval: Duration) -> Duration {
        mount == "fuse.rclone" ? pollInterval + .seconds(1) : .zero
    }

    /// Whether a file is opened for reading to be looked at afresh (`Directory.freshStatus`):
    /// sshfs, NFS and SMB clients fetch a file's attributes when it is opened. Not on `rclone
    /// mount`: its attributes are its own VFS's whatever the open (`statx` with
    /// `AT_STATX_FORCE_SYNC` asks it: `Directory.syncedStatus`), and without its file cache it
    /// holds an open for reading of a file still being written through the mount for 5 s, then
    /// answers `ENOENT` (rclone 1.60, `vfs/file.go` `waitForValidObject`): the whole service
    /// would wait that long at each look.
    public var opensToLookAfresh: Bool { mount != "fuse.rclone" }

    /// Finds out what the hot folder at `layout` allows (its folders exist).
    /// - Throws: `SystemError` when `drop/` or `.work/` cannot be opened, or `.work/` not written.
    public static func probe(_ layout: HotFolderLayout) throws(SystemError) -> FolderSystem {
        let type = try Directory(layout.drop).fileSystem()
        let mount = Files.mount(of: layout.drop)?.type
        let mover = try Mover.probe(in: try Directory(layout.work), known: known(mount))
        return FolderSystem(type: type, mount: mount, mover: mover)
    }

    /// What the probe must not try on a client, known by its mount type (`Mover.Known`).
    static func known(_ mount: String?) -> Mover.Known {
        switch mount {
        case "fuse.smbnetfs": Mover.Known(noAppend: true)
        case "fuse.rclone": Mover.Known(noOpenRenames: true, noFullFolderRenames: true)
        default: Mover.Known()
        }
    }

    /// The log's words: `"drop/ is on ext4: inotify; claims by renameat2 RENAME_NOREPLACE"`.
    public func words(pollInterval: Duration) -> String {
        let watching = isShared
            ? "inotify sees only this machine's writes there, so drop/ is also polled every \(Explain.words(Explain.seconds(pollInterval))) and its files are looked at past the client's caches"
            : "watched with inotify"
        return "drop/ is on \(name): \(watching); claims by \(mover.words)"
    }
}
