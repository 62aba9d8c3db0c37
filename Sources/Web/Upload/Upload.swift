internal import CWebShims
import Batches
import Foundation
import HTTP
import HotFolders
import System

/// One upload (`POST /inbox/NAME/upload`, multipart/form-data, files in field `photos`, the
/// form's token in field `csrf`, which must come before the files): each file streams into a
/// temporary name in the hot folder's `.work/` (never whole in memory), is fsynced, and is
/// renamed into `drop/` under its cleaned name — `image (2).jpg` when the name is taken in
/// drop/ or by a photo the open batch already holds (a phone names every photo `image.jpg`:
/// the second one must join the batch, not wait in drop/ beside a name the batch has), never
/// over another file — and `drop/` is fsynced: settling and claiming then take it like any
/// drop. A file over `maxFileBytes` is refused (413) the moment it passes the limit, its
/// temporary file removed and nothing more of the request kept (a request whose
/// `Content-Length` is already too big is refused before this, from its head); a file cut
/// short by a broken connection is removed too: nothing half-uploaded is ever left.
///
/// What one request may cost is bounded whatever it sends: at most `maxParts` parts (more are
/// answered 413 at once), the answer lists at most `listed` refusals (and counts the rest),
/// the form's token at most 256 bytes; the body as a whole is held to `maxFileBytes` and a
/// little more by the server (`HTTPReply.receiveForm`'s limit), with or without a length.
///
/// The fsync before the answer is the durability point and stays there; it is made cheap by
/// starting the disk writes while the file is still arriving (`sync_file_range`, each
/// `writeBackStep` bytes), so the fsync waits only for the last piece and the metadata
/// instead of writing the whole photo after its last byte.
final class Upload: HTTPFormReceiver {
    struct Accepted: Equatable {
        var sent: String
        var name: FileName
        var bytes: Int64
        /// When it landed in drop/ (seconds since 1970): its batch is the first to finish after.
        var at: Double = 0
    }

    /// Parts one request may have (files and fields): a form of 1,000 photos at once is more
    /// than a person sends; 200,000 tiny parts are an attack on memory.
    static let maxParts = 1_000
    /// Refusals listed in the answer at most (the others are counted).
    static let listed = 50

    struct Refused: Equatable {
        var sent: String
        var reason: String
    }

    private enum Part {
        case none
        case csrf([UInt8])
        case skipping
        case file(sent: String, name: FileName, temp: FileName, file: FileDescriptor, written: Int64)
    }

    private let inbox: String
    private let work: Directory
    private let drop: Directory
    private let mover: Mover
    private let maxFileBytes: Int
    private let csrf: String
    private let wantsJSON: Bool
    private let user: String
    private let log: Logger
    private let page: (Upload) -> HTTPResponse
    private var part = Part.none
    /// The file being received: a second descriptor of it to start its write-back with, and
    /// how far write-back was started (nil: none, or it could not be had: the fsync does it all).
    private var writeBack: (fd: Int32, started: Int64)?
    /// How much arrives between two write-back starts.
    static let writeBackStep: Int64 = 1 << 20
    private var csrfChecked = false
    private(set) var accepted: [Accepted] = []
    private(set) var refused: [Refused] = []
    /// Refusals beyond the `listed` ones.
    private(set) var refusedMore = 0
    private var parts = 0
    /// The next number to try for a name taken (`image (2).jpg`…), by the cleaned name: a form
    /// of 3,000 parts called `image.jpg` tries each number once, not 1 + 2 + … + 3,000 times.
    private var nextNumber: [FileName: Int] = [:]

    /// - Parameters:
    ///   - page: the answer once the body is in (the console's result page).
    init(inbox: String, layout: HotFolderLayout, mover: Mover, maxFileBytes: Int, csrf: String, wantsJSON: Bool,
         user: String, log: Logger, page: @escaping (Upload) -> HTTPResponse) throws(SystemError) {
        self.inbox = inbox
        work = try Directory(layout.work)
        drop = try Directory(layout.drop)
        self.mover = mover
        self.maxFileBytes = maxFileBytes
        self.csrf = csrf
        self.wantsJSON = wantsJSON
        self.user = user
        self.log = log
        self.page = page
    }

    func partBegins(name: String, filename: [UInt8]?, contentType: String?) -> HTTPResponse? {
        if let early = closeField() { return early }
        parts += 1
        guard parts <= Self.maxParts else {
            abandon()
            log.notice("web: \(user) sent an upload of more than \(Self.maxParts) parts: refused at the limit", ["INBOX": inbox, "USER": user])
            return answer(status: 413, note: "too many files in one upload: at most \(Self.maxParts) at a time")
        }
        guard let filename else {
            part = name == "csrf" ? .csrf([]) : .skipping
            return nil
        }
        guard csrfChecked else { return forbidden() }
        guard name == "photos" else {
            part = .skipping
            return nil
        }
        let sent = FileName(bytes: filename)?.escaped ?? String(decoding: filename, as: UTF8.self)
        switch UploadNames.clean(filename) {
        case .empty:
            part = .skipping
        case .refused(let reason):
            refuse(Refused(sent: sent, reason: reason))
            part = .skipping
        case .name(let clean):
            let temp = AtomicFile.temporaryName(for: clean)
            do throws(SystemError) {
                let file = try work.open(temp, .write, [.create, .exclusive], permissions: 0o644)
                part = .file(sent: sent, name: clean, temp: temp, file: file, written: 0)
                writeBack = (try? file.duplicateForHandOff()).map { ($0, 0) }
            } catch {
                log.error("web: cannot write an upload into \(work.path): \(error)", ["INBOX": inbox])
                refuse(Refused(sent: sent, reason: "the hot folder cannot be written (\(error.reason))"))
                part = .skipping
            }
        }
        return nil
    }

    func partData(_ piece: UnsafeRawBufferPointer) -> HTTPResponse? {
        switch part {
        case .csrf(var bytes):
            guard bytes.count + piece.count <= 256 else { return forbidden() }
            bytes += piece
            part = .csrf(bytes)
        case .file(let sent, let name, let temp, let file, let written):
            let total = written + Int64(piece.count)
            guard total <= Int64(maxFileBytes) else {
                discard(temp, file)
                refuse(Refused(sent: sent, reason: "larger than the limit of \(Self.limitWords(maxFileBytes)) (maxFileBytes)"))
                log.notice("web: \(user) sent \(sent), larger than maxFileBytes (\(maxFileBytes) bytes): refused, nothing kept",
                           ["INBOX": inbox, "USER": user])
                return answer(status: 413)
            }
            do throws(SystemError) {
                try file.write(piece)
            } catch {
                discard(temp, file)
                refuse(Refused(sent: sent, reason: error.isNoSpace ? "the hot folder's disk is full" : "cannot be written (\(error.reason))"))
                log.error("web: upload of \(sent) into \(inbox): \(error); removed", ["INBOX": inbox, "USER": user])
                return answer(status: error.isNoSpace ? 507 : 500)
            }
            part = .file(sent: sent, name: name, temp: temp, file: file, written: total)
            if case let (fd, started)? = writeBack, total - started >= Self.writeBackStep {
                let upTo = total - total % Self.writeBackStep
                // A failure here is the fsync's to report: it writes whatever is left.
                _ = pf_start_writeback(fd, started, upTo - started)
                writeBack = (fd, upTo)
            }
        case .none, .skipping:
            break
        }
        return nil
    }

    func partEnds() -> HTTPResponse? {
        if let early = closeField() { return early }
        guard case .file(let sent, let name, let temp, let file, let written) = part else {
            part = .none
            return nil
        }
        part = .none
        endWriteBack()
        guard written > 0 else {
            discard(temp, file)
            refuse(Refused(sent: sent, reason: "the file is empty"))
            return nil
        }
        // Who sent it, for the templates' {uploader}: kept by the file through its claim. A file
        // system without extended attributes (ENOTSUP) keeps no uploader, as the reference says;
        // the photo is taken all the same.
        do throws(SystemError) {
            try file.setExtendedAttribute(Uploader.attribute, Uploader.value(user))
        } catch {
            if error.code != ENOTSUP {
                log.notice("web: \(sent) from \(user) is kept without its uploader's name: \(error)", ["INBOX": inbox, "USER": user])
            }
        }
        do throws(SystemError) {
            try file.sync()
            file.close()
            let landed = try land(temp, as: name)
            try drop.sync()
            accepted.append(Accepted(sent: sent, name: landed, bytes: written, at: Date().timeIntervalSince1970))
            log.info("web: \(user) uploaded \(landed.escaped) (\(written) bytes) into drop/", ["INBOX": inbox, "USER": user, "FILE": landed.escaped])
        } catch {
            try? work.remove(temp)
            refuse(Refused(sent: sent, reason: error.isNoSpace ? "the hot folder's disk is full" : "cannot be stored (\(error.reason))"))
            log.error("web: upload of \(sent) into \(inbox): \(error); removed", ["INBOX": inbox, "USER": user])
        }
        return nil
    }

    /// A refusal for the answer (the first `listed`; the rest counted).
    private func refuse(_ refusal: Refused) {
        if refused.count < Self.listed { refused.append(refusal) } else { refusedMore += 1 }
    }

    func finish() -> HTTPResponse {
        guard csrfChecked else { return forbidden() }
        if accepted.isEmpty && refused.isEmpty {
            return answer(status: 400, note: "no file in the upload (choose photos first)")
        }
        return answer(status: accepted.isEmpty ? 422 : 200)
    }

    func abandon() {
        if case .file(_, _, let temp, let file, _) = part { discard(temp, file) }
        part = .none
    }

    private func endWriteBack() {
        if case let (fd, _)? = writeBack { close(fd) }
        writeBack = nil
    }

    /// What the answer says, besides the two lists (nil: nothing).
    private(set) var note: String?
    private(set) var status = 200

    private func answer(status: Int, note: String? = nil) -> HTTPResponse {
        self.status = status
        self.note = note
        if wantsJSON {
            let accepted = self.accepted.map { a -> [String: Any] in
                ["name": a.sent, "as": a.name.escaped, "bytes": "\(a.bytes)", "at": a.at,
                 "track": a.name.bytes.map { String(format: "%02x", $0) }.joined()]
            }
            let refused = self.refused.map { ["name": $0.sent, "reason": $0.reason] }
            var object: [String: Any] = ["accepted": accepted, "refused": refused]
            if refusedMore > 0 { object["refusedMore"] = refusedMore }
            if let note { object["note"] = note }
            let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data("{}".utf8)
            return HTTPResponse(status: status, headers: [("Content-Type", "application/json")], body: .bytes(Array(data)))
        }
        var response = page(self)
        response.status = status
        return response
    }

    /// The form's token is missing or not the session's: most often a tab opened before the
    /// user's last login (the page is stale), so the answer says to reload it.
    private func forbidden() -> HTTPResponse {
        abandon()
        log.warning("web: an upload into \(inbox) by \(user) came without the form's token (csrf): refused", ["INBOX": inbox, "USER": user])
        let note = "this page is out of date (it was opened before your last login): reload it and send again"
        if wantsJSON {
            let data = (try? JSONSerialization.data(withJSONObject: ["accepted": [], "refused": [], "stale": true, "note": note] as [String: Any],
                                                    options: [.sortedKeys])) ?? Data("{}".utf8)
            return HTTPResponse(status: 403, headers: [("Content-Type", "application/json"), ("X-Console-Stale", "1")], body: .bytes(Array(data)))
        }
        return HTTPResponse(status: 403, text: note + "\n", headers: [("X-Console-Stale", "1")])
    }

    /// The csrf field, complete: checked.
    private func closeField() -> HTTPResponse? {
        guard case .csrf(let bytes) = part else { return nil }
        part = .none
        csrfChecked = Sessions.tokensMatch(String(decoding: bytes, as: UTF8.self), csrf)
        return csrfChecked ? nil : forbidden()
    }

    private func discard(_ temp: FileName, _ file: FileDescriptor) {
        endWriteBack()
        file.close()
        try? work.remove(temp)
    }

    /// Renames the temporary file into drop/ under `name`, or the first free alternative: free
    /// in drop/ (the rename never replaces) and in every batch waiting in .work/ (a name the
    /// open batch holds would stay in drop/ until it closed). The batches are looked at after
    /// the rename: a file of that name claimed from drop/ meanwhile is in one or the other.
    private func land(_ temp: FileName, as name: FileName) throws(SystemError) -> FileName {
        let batches = waitingBatches()
        // 1: the name itself; then from the number the last file of this name in the upload took.
        var n = nextNumber[name] ?? 1
        for _ in 0..<10_000 {
            let candidate = n == 1 ? name : UploadNames.alternative(name, n)
            n += 1
            do throws(SystemError) {
                guard try mover.move(temp, from: work, to: drop, as: candidate) else {
                    throw SystemError("move", work.path.appending(temp).description, errno: ENOENT)
                }
            } catch where error.code == EEXIST {
                continue
            }
            if isTaken(candidate, in: batches) {
                // Back to its temporary name (not settled yet: nothing claims it meanwhile).
                guard try mover.move(candidate, from: drop, to: work, as: temp) else {
                    throw SystemError("move", drop.path.appending(candidate).description, errno: ENOENT)
                }
                continue
            }
            nextNumber[name] = n
            return candidate
        }
        throw SystemError("find a free name in drop/ for", name.escaped, errno: EEXIST)
    }

    /// The `src/` folders of the batches in .work/ (claimed, not yet finished).
    private func waitingBatches() -> [Directory] {
        guard let names = try? work.names() else { return [] }
        return names.compactMap { name in
            guard let id = name.string, BatchID.isValid(id) else { return nil }
            return try? work.folder(name).folder("src")
        }
    }

    /// Whether a batch waiting in .work/ holds `name` already.
    private func isTaken(_ name: FileName, in batches: [Directory]) -> Bool {
        batches.contains { (try? $0.status(of: name)) != nil }
    }

    static func limitWords(_ bytes: Int) -> String {
        for (unit, size) in [("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)] where bytes >= size && bytes % size == 0 {
            return "\(bytes / size) \(unit)"
        }
        return "\(bytes) bytes"
    }
}
