import Batches
import Foundation
import HTTP
import HotFolders
import System

/// Uploads into a hot folder's drop/, and where the photos of an upload are now.
extension ConsoleHandler {
    func upload(_ request: HTTPRequest, _ viewer: Viewer, _ folder: ConsoleFolder, maxFileBytes: Int) -> HTTPReply {
        guard request.header("content-type")?.lowercased().hasPrefix("multipart/form-data") == true else {
            return .response(HTTPResponse(status: 415, text: "an upload is multipart/form-data (field photos, csrf first)\n"))
        }
        let wantsJSON = request.header("accept")?.contains("application/json") == true
        let limit = maxFileBytes + Self.formAllowance
        // The whole request is known to be too big from its head: refused before a byte of it is read.
        if let length = request.contentLength, length > limit {
            log.notice("web: \(viewer.name) sent an upload of \(length) bytes, larger than maxFileBytes (\(maxFileBytes)): refused before reading it",
                       ["INBOX": folder.name, "USER": viewer.name])
            let reason = "larger than the limit of \(Upload.limitWords(maxFileBytes)) (maxFileBytes)"
            if wantsJSON {
                return .response(json(413, ["accepted": [], "refused": [["name": "", "reason": reason]],
                                            "note": "the upload is refused as a whole: \(length) bytes"], extra: [("Connection", "close")]))
            }
            var response = page(413, Pages.error(viewer, title: "Too large",
                                                 message: "This upload (\(HTML.bytes(Int64(length)))) is \(reason). Send fewer photos at a time, or smaller ones."), request)
            response.headers.append(("Connection", "close"))
            return .response(response)
        }
        do throws(SystemError) {
            let upload = try Upload(inbox: folder.name, layout: folder.layout, mover: try mover(for: folder.layout),
                                    maxFileBytes: maxFileBytes, csrf: viewer.csrf, wantsJSON: wantsJSON,
                                    user: viewer.name, log: log) { [self] upload in
                page(200, Pages.uploaded(viewer, inbox: folder.name, upload), request)
            }
            return .receiveForm(upload, limit: limit)
        } catch where error.code == ENOENT {
            // Its drop/ or .work/ not made yet: the daemon is still taking the folder up (the
            // console answers from its socket before that), or someone removed them.
            log.notice("web: \(viewer.name) uploaded into \(folder.name) before its folders exist (\(error)): asked to try again",
                       ["INBOX": folder.name, "USER": viewer.name])
            var response = page(503, Pages.error(viewer, title: "Uploads are not possible yet",
                                                 message: "The hot folder \(folder.name) is not ready yet (PhotoFinish is starting, or its drop/ folder is being made again). Try again in a few seconds."), request)
            response.headers.append(("Retry-After", "5"))
            return .response(response)
        } catch {
            log.error("web: cannot take uploads into \(folder.name): \(error)", ["INBOX": folder.name])
            return .response(page(503, Pages.error(viewer, title: "Uploads are not possible now",
                                                   message: "The hot folder \(folder.name) cannot be written: \(error.reason)."), request))
        }
    }

    /// How names move in this hot folder (probed once: rename flags, or link on a share).
    func mover(for layout: HotFolderLayout) throws(SystemError) -> Mover {
        if let known = movers.withLock({ $0[layout.root] }) { return known }
        let mover = try FolderSystem.probe(layout).mover
        movers.withLock { $0[layout.root] = mover }
        return mover
    }

    /// Photos an upload follows at most per request.
    static let trackedAtMost = 1_000

    /// `GET /inbox/NAME/track?f=HEX.HEX…&since=SECONDS`: where each photo an upload landed in
    /// drop/ (its name's bytes in hex, as the upload's answer gives them) is now — still in
    /// drop/, in a batch on its way, in a published batch — and how far those batches are:
    /// what the upload form shows until "Your 6 photos are ready". `since` (when the first of
    /// them landed) rules out older batches with the same names. Answers from what is on disk
    /// and the service's status: nothing is kept between requests.
    func track(_ request: HTTPRequest, _ folder: ConsoleFolder) -> HTTPResponse {
        let names = (request.query["f"] ?? "").split(separator: ".").prefix(Self.trackedAtMost).compactMap { hex -> FileName? in
            guard hex.count % 2 == 0, hex.count <= 2 * FileName.maxLength else { return nil }
            var bytes: [UInt8] = []
            var i = hex.startIndex
            while i < hex.endIndex {
                let next = hex.index(i, offsetBy: 2)
                guard let b = UInt8(hex[i..<next], radix: 16) else { return nil }
                bytes.append(b)
                i = next
            }
            return FileName(bytes: bytes)
        }
        let since = request.query["since"].flatMap(Double.init) ?? 0
        let layout = folder.layout
        let drop = try? Directory(layout.drop)
        // The batches on their way in .work/, and where their sources are: src/ while
        // claimed, originals/ or failed/ once filed (the moment before they are published).
        let working: [(id: String, folders: [Directory])] = ((try? Directory(layout.work).names()) ?? []).compactMap { name in
            guard let id = name.string, BatchID.isValid(id) else { return nil }
            let places = [layout.workFolder(id) + "/src", layout.originals + "/" + id, layout.failed + "/" + id]
            return (id, places.compactMap { try? Directory($0) })
        }
        // Published batches that finished after the upload began, oldest first: the first
        // holding a name is where that photo went.
        let published = catalog.ids(layout).prefix(200).compactMap { catalog.summary(layout, $0) }
            .filter { (HumanTime.date(isoUTC: $0.finished)?.timeIntervalSince1970 ?? 0) >= since }
            .reversed()
        var photos: [[String: Any]] = []
        var batches: [String: [String: Any]] = [:]
        for name in names {
            let shown = name.escaped
            var entry: [String: Any] = ["name": shown]
            if let found = published.first(where: { $0.sources.contains(shown) }) {
                entry["batch"] = found.id
                entry["state"] = found.failedSources.contains(shown) ? "failed" : "ready"
                if batches[found.id] == nil { batches[found.id] = describe(found, folder) }
            } else if let work = working.first(where: { w in w.folders.contains { (try? $0.status(of: name)) != nil } }) {
                entry["batch"] = work.id
                let p = folder.progress(of: work.id)
                entry["state"] = p == nil ? "queued" : p!.stage == .open ? "open" : "finishing"
                if batches[work.id] == nil { batches[work.id] = describe(work.id, p, folder) }
            } else if let drop, (try? drop.status(of: name)) != nil {
                entry["state"] = "waiting"
            } else {
                entry["state"] = "unknown"
            }
            photos.append(entry)
        }
        return json(200, ["photos": photos, "batches": batches])
    }

    /// A published batch as the upload form shows it.
    private func describe(_ s: BatchCatalog.Summary, _ folder: ConsoleFolder) -> [String: Any] {
        ["stage": "ready", "status": s.status, "done": s.items, "total": s.items, "failed": s.failed,
         "words": "\(s.ok) of \(Words.photos(s.items)) finished" + (s.failed > 0 ? ", \(s.failed) failed" : ""),
         "label": s.label.when(), "link": Paths.batch(folder.name, s.id),
         "thumbs": s.thumbnails.map { Paths.batchFile(folder.name, s.id, $0) }]
    }

    /// A batch on its way as the upload form shows it (`p`: its progress, nil while it waits its turn).
    private func describe(_ id: String, _ p: ConsoleFolder.Progress?, _ folder: ConsoleFolder) -> [String: Any] {
        guard let p else { return ["stage": "queued", "words": "waiting its turn", "done": 0, "total": 0] }
        let stage = p.stage == .outputs ? "outputs" : p.stage == .open ? "open" : "photos"
        return ["stage": stage, "words": p.words, "done": p.done, "total": p.total, "inProgress": p.inProgress ?? 0,
                "failed": p.failed ?? 0]
    }
}
