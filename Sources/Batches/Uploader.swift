import System

/// Who sent a photo through the web console (the `{uploader}` variable; reference:
/// Variables). The console marks each file it takes with its user's name, in the extended
/// attribute `user.photofinish.uploader`; the file keeps it through its claim (a rename or a
/// link), so a batch reads it from the source it finishes. A photo dropped any other way has
/// none, nor has one on a file system that keeps no extended attributes (sshfs, some SMB and
/// FUSE mounts): then no uploader is known.
public enum Uploader {
    /// The extended attribute that holds the name.
    public static let attribute = "user.photofinish.uploader"

    /// The uploader of the file at `path`, or nil when none is known. A file that cannot be
    /// asked has no uploader here: reading it fails the photo with the reason.
    public static func of(_ path: FilePath) -> String? {
        guard let bytes = try? Files.extendedAttribute(path, attribute),
              let name = String(validating: bytes, as: UTF8.self), !name.isEmpty else { return nil }
        return name
    }

    /// The attribute's value for user `name`.
    public static func value(_ name: String) -> [UInt8] { Array(name.utf8) }
}
