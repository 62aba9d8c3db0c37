import Batches
import Foundation
import HotFolders
import System

/// A published batch's files, read only from `out/<batch-id>/`: every name is opened with
/// `openat` beneath the batch folder, one component at a time, none followed through a
/// symlink (`O_NOFOLLOW`, folders with `O_DIRECTORY`), and only regular files are served. A
/// symlink anywhere below `out/` (even one the folder's owner made) is never followed.
enum BatchFiles {
    /// One regular file of the batch.
    struct Entry: Sendable, Equatable {
        /// Its path below the batch folder, a name per folder.
        var path: [FileName]
        var size: Int64
    }

    /// The open batch folder `out/<id>/` (a symlink there is refused).
    /// - Throws: `SystemError` (`ENOENT`, `ELOOP`, `ENOTDIR`…): the caller answers 404.
    static func folder(_ layout: HotFolderLayout, _ id: String) throws(SystemError) -> Directory {
        guard BatchID.isValid(id), let name = FileName(id) else { throw SystemError("open", id, errno: ENOENT) }
        return try Directory(layout.out).folder(name)
    }

    /// Opens one file beneath the batch folder for reading; its status (a regular file).
    /// - Throws: `SystemError` for a name missing, a symlink, a folder, a FIFO…: the caller answers 404.
    static func open(_ layout: HotFolderLayout, _ id: String, _ path: [FileName]) throws(SystemError) -> (FileDescriptor, FileStatus) {
        guard let last = path.last, path.allSatisfy({ $0.bytes.first != UInt8(ascii: ".") }) else {
            throw SystemError("open", id, errno: ENOENT)
        }
        var folder = try Self.folder(layout, id)
        for name in path.dropLast() { folder = try folder.folder(name) }
        let file = try folder.open(last, .read, [.noFollow])
        let status = try file.status()
        guard status.isRegular else { throw SystemError("open", file.path.description, errno: EISDIR) }
        return (file, status)
    }

    /// Every regular file of the batch, sorted by path (folders first as they come in the sort:
    /// `report.html`, `thumbs/1.jpg`…); symlinks, hidden names and other kinds left out.
    static func list(_ layout: HotFolderLayout, _ id: String) throws(SystemError) -> [Entry] {
        var out: [Entry] = []
        try walk(try folder(layout, id), prefix: [], into: &out, depth: 0)
        return out.sorted { $0.path.lexicographicallyPrecedes($1.path) }
    }

    private static func walk(_ folder: Directory, prefix: [FileName], into out: inout [Entry], depth: Int) throws(SystemError) {
        guard depth < 8 else { return }
        for name in try folder.names() where name.bytes.first != UInt8(ascii: ".") {
            guard let st = try folder.status(of: name) else { continue }
            if st.isRegular {
                out.append(Entry(path: prefix + [name], size: st.size))
            } else if st.isDirectory {
                try walk(try folder.folder(name), prefix: prefix + [name], into: &out, depth: depth + 1)
            }
        }
    }

    /// The template's proof sheet of a hot folder (`<root>/proof/<template>-<sha>.png`, the
    /// newest there).
    static func proof(_ layout: HotFolderLayout, template: String) -> (FileDescriptor, FileStatus)? {
        guard let folder = try? Directory(layout.root + "/proof"), let names = try? folder.names() else { return nil }
        let prefix = Array((template + "-").utf8)
        var best: (FileName, FileStatus)?
        for name in names where name.bytes.starts(with: prefix) && name.bytes.reversed().starts(with: Array(".png".utf8).reversed()) {
            guard let st = try? folder.status(of: name), st.isRegular else { continue }
            if best == nil || st.modified > best!.1.modified { best = (name, st) }
        }
        guard let (name, _) = best, let file = try? folder.open(name, .read, [.noFollow]),
              let st = try? file.status(), st.isRegular else { return nil }
        return (file, st)
    }

    /// The content type a file is served with, by its extension (anything unknown is a download).
    static func contentType(of name: FileName) -> (type: String, inline: Bool) {
        let ext = name.bytes.lastIndex(of: UInt8(ascii: ".")).map { String(decoding: name.bytes[($0 + 1)...], as: UTF8.self).lowercased() } ?? ""
        switch ext {
        case "jpg", "jpeg": return ("image/jpeg", true)
        case "png": return ("image/png", true)
        case "webp": return ("image/webp", true)
        case "avif": return ("image/avif", true)
        case "heic", "heif": return ("image/heic", false)
        case "gif": return ("image/gif", true)
        case "html": return ("text/html; charset=utf-8", true)
        case "json": return ("application/json", true)
        case "txt": return ("text/plain; charset=utf-8", true)
        default: return ("application/octet-stream", false)
        }
    }
}

extension FileName {
    /// Byte-wise order (the file system's own, stable for any encoding).
    static func precedes(_ a: FileName, _ b: FileName) -> Bool { a.bytes.lexicographicallyPrecedes(b.bytes) }
}

extension Array where Element == FileName {
    func lexicographicallyPrecedes(_ other: [FileName]) -> Bool {
        lexicographicallyPrecedes(other, by: FileName.precedes)
    }
}
