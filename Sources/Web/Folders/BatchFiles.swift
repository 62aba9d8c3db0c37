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
        return try regular(last, in: folder)
    }

    /// Opens `name` in `folder` for reading when it is a regular file: never through a
    /// symlink, and without waiting (`O_NONBLOCK`: a FIFO planted there would hold the thread
    /// in `open` until a writer came), its type checked on the descriptor before a byte is read.
    /// - Throws: `SystemError` for a name missing, a symlink, a folder, a FIFO, a device…
    static func regular(_ name: FileName, in folder: Directory) throws(SystemError) -> (FileDescriptor, FileStatus) {
        let file = try folder.open(name, .read, [.noFollow, .nonBlocking])
        let status = try file.status()
        guard status.isRegular else { throw SystemError("open", file.path.description, errno: EISDIR) }
        return (file, status)
    }

    /// A source the batch filed: `originals/<id>/<name>`, else `failed/<id>/<name>` (a
    /// regular file, opened as `regular` opens it).
    static func original(_ layout: HotFolderLayout, _ id: String, _ name: FileName) throws(SystemError) -> (FileDescriptor, FileStatus) {
        guard BatchID.isValid(id), let batch = FileName(id), name.bytes.first != UInt8(ascii: ".") else {
            throw SystemError("open", id, errno: ENOENT)
        }
        var last = SystemError("open", name.escaped, errno: ENOENT)
        for kind in [layout.originals, layout.failed] {
            do throws(SystemError) {
                return try regular(name, in: try Directory(kind).folder(batch))
            } catch {
                last = error
            }
        }
        throw last
    }

    /// A path the report writes (`thumbs/IMG_1.jpg`) as the names of its parts; nil for one
    /// that leaves the batch folder or names a hidden file.
    static func path(_ text: String) -> [FileName]? {
        let parts = text.split(separator: "/").map { FileName(String($0)) }
        guard !parts.isEmpty, parts.allSatisfy({ $0 != nil && $0!.bytes.first != UInt8(ascii: ".") }) else { return nil }
        return parts.compactMap { $0 }
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
        guard let (name, _) = best else { return nil }
        return try? regular(name, in: folder)
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
