internal import CArchive
import Foundation
import HTTP
import HotFolders
import System

/// A published batch as one ZIP (`GET /inbox/NAME/batch/ID.zip`), written by libarchive as
/// it is sent: the server pulls a piece, the archive is driven on until it has written one
/// (the next file's header, 256 KiB of its data, the central directory at the end), never the
/// whole ZIP in memory — a few hundred KiB per download, whatever the batch's size. Entries
/// are stored as they are (photos are compressed already), under `<batch-id>/`, so the ZIP
/// unpacks into one folder whose `report.html` opens with its thumbnails; every name in it
/// is one Windows can make (`ZipNames`).
///
/// One owner for libarchive's writer: freed when the stream ends or is dropped (a client that
/// went away).
final class BatchZip: HTTPBodyStream {
    private var archive: OpaquePointer?
    private let folder: Directory
    private let id: String
    private let files: [BatchFiles.Entry]
    /// Each file's name in the ZIP (`ZipNames`), in the same order.
    private let names: [String]
    private var next = 0
    private var current: FileDescriptor?
    private var finished = false
    private var failed = false
    /// What libarchive wrote and the server has not taken yet.
    fileprivate var pending: [UInt8] = []
    private var taken = 0
    private let chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: 256 << 10, alignment: 16)
    private let log: Logger

    /// - Parameter files: what to put in (`BatchFiles.list`), each opened beneath `folder` when its turn comes.
    init(folder: Directory, id: String, files: [BatchFiles.Entry], log: Logger) throws(SystemError) {
        self.folder = folder
        self.id = id
        self.files = files
        names = ZipNames.entries(id, files.map(\.path))
        self.log = log
        guard let a = archive_write_new() else { throw SystemError("start a ZIP of", id, errno: ENOMEM) }
        archive = a
        archive_write_set_format_zip(a)
        archive_write_zip_set_compression_store(a)
        // Written out as soon as libarchive has it: no blocking into 10 KiB records.
        archive_write_set_bytes_per_block(a, 0)
        let opened = archive_write_open2(a, Unmanaged.passUnretained(self).toOpaque(), nil, { _, cls, buffer, length in
            guard let cls, let buffer else { return -1 }
            let zip = Unmanaged<BatchZip>.fromOpaque(cls).takeUnretainedValue()
            zip.pending.append(contentsOf: UnsafeRawBufferPointer(start: buffer, count: length))
            return length
        }, nil, nil)
        guard opened == ARCHIVE_OK else {
            let why = archive_error_string(a).map { String(cString: $0) } ?? "out of memory"
            archive_write_free(a)
            archive = nil
            throw SystemError("start a ZIP of \(id): \(why)", id, errno: EIO)
        }
    }

    deinit {
        if let archive {
            // Not closed on purpose when the client went away: free only (no central directory to write).
            archive_write_free(archive)
        }
        chunk.deallocate()
    }

    func read(into buffer: UnsafeMutableRawBufferPointer) -> Int? {
        while taken == pending.count {
            pending.removeAll(keepingCapacity: true)
            taken = 0
            if finished { return 0 }
            if failed { return nil }
            step()
        }
        let n = min(buffer.count, pending.count - taken)
        pending.withUnsafeBytes { buffer.copyMemory(from: UnsafeRawBufferPointer(rebasing: $0[taken..<(taken + n)])) }
        taken += n
        return n
    }

    /// Drives the archive one step: the next file's header, a piece of its data, or the end.
    private func step() {
        guard let a = archive else { failed = true; return }
        if let file = current {
            let n: Int
            do throws(SystemError) {
                n = try file.read(into: chunk)
            } catch {
                return fail("\(error)")
            }
            if n == 0 {
                current = nil
                archive_write_finish_entry(a)
                return
            }
            guard archive_write_data(a, chunk.baseAddress, n) == n else { return fail(libarchiveError()) }
            return
        }
        guard next < files.count else {
            guard archive_write_close(a) == ARCHIVE_OK else { return fail(libarchiveError()) }
            archive_write_free(a)
            archive = nil
            finished = true
            return
        }
        let entry = files[next]
        next += 1
        // Opened beneath the batch folder like any file served; one that vanished is left out.
        var dir = folder
        do throws(SystemError) {
            for name in entry.path.dropLast() { dir = try dir.folder(name) }
            let (file, st) = try BatchFiles.regular(entry.path.last!, in: dir)
            guard let e = archive_entry_new() else { return fail("out of memory") }
            defer { archive_entry_free(e) }
            let name = names[next - 1]
            archive_entry_set_pathname_utf8(e, name)
            archive_entry_set_size(e, st.size)
            archive_entry_set_filetype(e, 0o100000)  // AE_IFREG: a cast macro Swift does not import
            archive_entry_set_perm(e, 0o644)
            archive_entry_set_mtime(e, time_t(st.modifiedNanoseconds / 1_000_000_000), Int(st.modifiedNanoseconds % 1_000_000_000))
            guard archive_write_header(a, e) == ARCHIVE_OK else { return fail(libarchiveError()) }
            current = file
        } catch {
            log.info("web: the ZIP of \(id) leaves out \(entry.path.map(\.escaped).joined(separator: "/")): \(error)")
        }
    }

    private func libarchiveError() -> String {
        archive.flatMap { archive_error_string($0) }.map { String(cString: $0) } ?? "libarchive failed"
    }

    private func fail(_ why: String) {
        log.warning("web: the ZIP of batch \(id) stops: \(why) (the download is cut, never short)")
        failed = true
    }
}

/// Names of a ZIP's entries that unpack the same on Windows, macOS and Linux (pure): each part
/// of a path valid UTF-8 (`FileName.readable`), without the characters Windows refuses in a
/// name (`\ / : * ? " < > |` and control characters, as `_`: a `\` would be taken for a
/// folder and could climb out of it), without the spaces and dots Windows drops at a name's
/// end, never a device name (`CON`, `NUL`, `COM1`, `LPT1.txt`… get a `_` in front); and no two
/// entries alike once so cleaned, nor alike but for case (`IMG (2).jpg` for the second).
enum ZipNames {
    static let reserved = Set(["CON", "PRN", "AUX", "NUL"] + (1...9).map { "COM\($0)" } + (1...9).map { "LPT\($0)" })

    /// The entry names of `paths` (below a folder `id`).
    static func entries(_ id: String, _ paths: [[FileName]]) -> [String] {
        var taken: Set<String> = []
        return paths.map { path in
            let folders = path.dropLast().map { part($0.readable) }
            let last = part(path.last.map(\.readable) ?? "_")
            var candidate = ([id] + folders + [last]).joined(separator: "/")
            var n = 2
            while !taken.insert(candidate.lowercased()).inserted {
                let dot = last.lastIndex(of: ".").flatMap { $0 > last.startIndex ? $0 : nil } ?? last.endIndex
                candidate = ([id] + folders + [last[..<dot] + " (\(n))" + last[dot...]]).joined(separator: "/")
                n += 1
            }
            return candidate
        }
    }

    /// One part of a path, safe on Windows.
    static func part(_ text: String) -> String {
        var out = String(String.UnicodeScalarView(text.unicodeScalars.map { s -> Unicode.Scalar in
            "\\/:*?\"<>|".unicodeScalars.contains(s) || ControlCharacters.contains(s) ? "_" : s
        }))
        while let last = out.last, last == "." || last == " " { out.removeLast() }
        if out.isEmpty { out = "_" }
        let stem = out.split(separator: ".", maxSplits: 1).first.map { String($0).uppercased().trimmingCharacters(in: .whitespaces) } ?? ""
        if reserved.contains(stem) { out = "_" + out }
        return out
    }
}
