import System

/// What a hot folder's file system allows (SPEC §7, shares), found once when the folder is
/// started: which file system `drop/` is on (`statfs`), so a network or FUSE one is polled
/// (inotify sees only this machine's writes there), and which claim primitive works in
/// `.work/` (a probe: `Mover.probe`).
public struct FolderSystem: Sendable, Equatable {
    /// The file system `drop/` is on.
    public var type: FileSystemType
    /// How names are moved in this hot folder.
    public var mover: Mover

    public init(type: FileSystemType, mover: Mover) {
        self.type = type
        self.mover = mover
    }

    /// A local disk with rename flags: what tests and `run` assume.
    public static let local = FolderSystem(type: FileSystemType(magic: 0xEF53), mover: Mover(.renameNoReplace))

    /// inotify cannot see other machines' writes here: `drop/` is polled every `pollInterval`.
    public var isShared: Bool { type.isShared }

    /// Finds out what the hot folder at `layout` allows (its folders exist).
    /// - Throws: `SystemError` when `drop/` or `.work/` cannot be opened, or `.work/` not written.
    public static func probe(_ layout: HotFolderLayout) throws(SystemError) -> FolderSystem {
        let type = try Directory(layout.drop).fileSystem()
        let mover = try Mover.probe(in: try Directory(layout.work))
        return FolderSystem(type: type, mover: mover)
    }

    /// The log's words: `"drop/ is on ext4: inotify; claims by renameat2 RENAME_NOREPLACE"`.
    public func words(pollInterval: Duration) -> String {
        let watching = isShared
            ? "inotify sees only this machine's writes there, so drop/ is also polled every \(Explain.words(Explain.seconds(pollInterval)))"
            : "watched with inotify"
        return "drop/ is on \(type.name): \(watching); claims by \(mover.method.rawValue)"
    }
}
