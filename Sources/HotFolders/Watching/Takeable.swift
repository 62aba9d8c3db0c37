import Batches
import System

/// Which files in `drop/` are taken (reference: File names): a regular file with one name (a
/// hard-linked file could still be changed through its other name), whose name no ignore rule
/// matches. The one rule the watcher (`DropWatch`), the claim (`Claim`, again on what it moved) and
/// `explain` go by.
public enum Takeable {
    /// Why a file in `drop/` is never taken.
    public enum Refusal: Sendable, Equatable {
        /// Its name matches an ignore rule (hidden, a partial download, a temporary file).
        case ignoredName
        /// Not a regular file ("a folder", "a symbolic link", …).
        case notRegular(kind: String)
        /// More than one hard link.
        case hardLinked(links: Int)
    }

    /// Why `name`, with `status` (`fstatat`, no symlink followed), is never taken; nil when it
    /// is taken.
    public static func refusal(_ name: FileName, _ status: FileStatus) -> Refusal? {
        if IgnoreRules.ignores(name.readable) { return .ignoredName }
        switch status.kind {
        case .regular: return status.links > 1 ? .hardLinked(links: status.links) : nil
        case .directory: return .notRegular(kind: "a folder")
        case .symbolicLink: return .notRegular(kind: "a symbolic link")
        case .fifo: return .notRegular(kind: "a FIFO")
        case .socket: return .notRegular(kind: "a socket")
        case .device: return .notRegular(kind: "a device")
        }
    }

    /// True when `name`, with `status`, is taken.
    public static func accepts(_ name: FileName, _ status: FileStatus) -> Bool {
        refusal(name, status) == nil
    }

    /// The refusal in words, for the log, STATUS.txt and `explain`.
    public static func words(_ refusal: Refusal) -> String {
        switch refusal {
        case .ignoredName: "its name is ignored (hidden, a partial download or a temporary file); rename it to have it finished"
        case .notRegular(kind: "a folder"): "it is a folder, and folders in drop/ are not descended into; move its files into drop/ itself"
        case .notRegular(let kind): "it is \(kind), not a regular file"
        case .hardLinked(let links): "it has \(links) hard links (another name could still change it); copy it in instead"
        }
    }
}
