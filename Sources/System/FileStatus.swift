import Glibc

/// What `fstat` says about a file.
public struct FileStatus: Sendable, Equatable {
    /// The kinds of files `drop/` can hold.
    public enum Kind: Sendable, Equatable {
        case regular, directory, symbolicLink, fifo, socket, device
    }

    public var kind: Kind
    /// Hard links (names) the file has.
    public var links: Int
    public var size: Int64
    /// Last modification, in nanoseconds since the epoch.
    public var modifiedNanoseconds: Int64
    public var device: UInt64
    public var inode: UInt64
    /// The permission bits (`0o644`).
    public var permissions: UInt32
    /// The owner's user id.
    public var owner: UInt32

    init(_ st: stat) {
        switch st.st_mode & S_IFMT {
        case S_IFREG: kind = .regular
        case S_IFDIR: kind = .directory
        case S_IFLNK: kind = .symbolicLink
        case S_IFIFO: kind = .fifo
        case S_IFSOCK: kind = .socket
        default: kind = .device
        }
        links = Int(st.st_nlink)
        size = Int64(st.st_size)
        modifiedNanoseconds = Int64(st.st_mtim.tv_sec) * 1_000_000_000 + Int64(st.st_mtim.tv_nsec)
        device = UInt64(st.st_dev)
        inode = UInt64(st.st_ino)
        permissions = UInt32(st.st_mode & 0o7777)
        owner = UInt32(st.st_uid)
    }

    public var isRegular: Bool { kind == .regular }
    public var isDirectory: Bool { kind == .directory }

    /// Seconds since the epoch of the last modification.
    public var modified: Double { Double(modifiedNanoseconds) / 1e9 }

    /// True when both describe the same file (device and inode), under any name.
    public func isSameFile(as other: FileStatus) -> Bool { device == other.device && inode == other.inode }
}

/// The file system a folder lives on, from `statfs(2)`'s `f_type`: it decides whether
/// inotify sees every change (a local disk) or only this machine's (a network share, FUSE).
public struct FileSystemType: Sendable, Equatable, CustomStringConvertible {
    /// `f_type`, the file system's magic number (`0x6969` = NFS).
    public var magic: UInt32

    public init(magic: UInt32) {
        self.magic = magic
    }

    /// File systems whose files other machines (or another kernel) can change: inotify only
    /// reports this machine's writes there, and rename flags are refused by most.
    static let shared: [UInt32: String] = [
        0x6969: "nfs", 0x517B: "smb", 0xFE53_4D42: "smb2", 0xFF53_4D42: "cifs", 0x6573_5546: "fuse",
        0x0102_1997: "9p", 0x00C3_6400: "ceph", 0x5346_414F: "afs", 0x7375_7245: "coda", 0x0BD0_0BD0: "lustre",
        0x0116_1970: "gfs2", 0x7461_636F: "ocfs2", 0x4750_4653: "gpfs", 0x786F_4256: "vboxsf", 0x564C: "ncp",
        0xAAD7_AAEA: "panfs", 0x0133_7BEE: "beegfs",
    ]

    /// Local file systems, by name (for the log).
    static let local: [UInt32: String] = [
        0xEF53: "ext4", 0x5846_5342: "xfs", 0x9123_683E: "btrfs", 0x0102_1994: "tmpfs", 0x794C_7630: "overlayfs",
        0x2FC1_2FC1: "zfs", 0xF2F5_2010: "f2fs", 0x4D44: "vfat", 0x2011_BAB0: "exfat", 0x5346_544E: "ntfs",
        0x3153_464A: "jfs", 0x5265_4973: "reiserfs", 0x7363_6673: "securityfs", 0x6265_6572: "sysfs",
    ]

    /// A short name: `"nfs"`, `"ext4"`, or the magic in hex when unknown.
    public var name: String {
        Self.shared[magic] ?? Self.local[magic] ?? "0x" + String(magic, radix: 16)
    }

    /// True for network and FUSE file systems (NFS, SMB/CIFS, FUSE, 9p, Ceph…): another
    /// machine's writes there reach no inotify watch here, so `drop/` must be polled.
    public var isShared: Bool { Self.shared[magic] != nil }

    public var description: String { name }
}
