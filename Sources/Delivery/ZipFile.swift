internal import CArchive
import Foundation
import System

/// A batch as one ZIP file for `what: "zip"`: its files stored as they are (photos are
/// compressed already) under `<batch-id>/`, written by libarchive to a temporary name and
/// renamed, so a ZIP that is there is whole. The writer is owned here and freed once.
enum ZipFile {
    /// - Parameters:
    ///   - folder: the folder the entries unpack into.
    ///   - entries: each entry's name in the ZIP (relative to `folder`) and the file it holds.
    static func write(to path: String, folder: String, entries: [(name: String, file: String)]) throws(SystemError) {
        let temporary = path + ".part"
        guard let archive = archive_write_new() else { throw SystemError("start the ZIP", path, errno: ENOMEM) }
        defer { archive_write_free(archive) }
        func check(_ result: Int32, _ what: String) throws(SystemError) {
            guard result >= ARCHIVE_WARN else {
                let why = archive_error_string(archive).map { String(cString: $0) } ?? "libarchive failed"
                throw SystemError("\(what) (\(why))", path, errno: archive_errno(archive) == 0 ? EIO : archive_errno(archive))
            }
        }
        try check(archive_write_set_format_zip(archive), "make a ZIP")
        try check(archive_write_zip_set_compression_store(archive), "store in the ZIP")
        try check(archive_write_open_filename(archive, temporary), "write the ZIP")
        for entry in entries {
            let source = try FileDescriptor.open(entry.file, .read)
            defer { source.close() }
            let size = try source.status().size
            guard let header = archive_entry_new() else { throw SystemError("start a ZIP entry for", entry.file, errno: ENOMEM) }
            defer { archive_entry_free(header) }
            archive_entry_set_pathname_utf8(header, folder + "/" + entry.name)
            archive_entry_set_size(header, la_int64_t(size))
            archive_entry_set_filetype(header, 0o100000)  // a regular file (AE_IFREG)
            archive_entry_set_perm(header, 0o644)
            archive_entry_set_mtime(header, time(nil), 0)
            try check(archive_write_header(archive, header), "add \(entry.name) to the ZIP")
            try source.forEachChunk { bytes throws(SystemError) in
                guard archive_write_data(archive, bytes.baseAddress, bytes.count) == bytes.count else {
                    throw SystemError("write \(entry.name) into the ZIP", path, errno: archive_errno(archive) == 0 ? EIO : archive_errno(archive))
                }
            }
        }
        try check(archive_write_close(archive), "finish the ZIP")
        let written = try FileDescriptor.open(temporary, .read)
        try written.sync()
        written.close()
        guard Glibc.rename(temporary, path) == 0 else { throw SystemError("rename", temporary, errno: errno) }
    }
}
