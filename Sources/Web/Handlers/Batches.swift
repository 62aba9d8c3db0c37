import Batches
import Foundation
import HTTP
import HotFolders
import System

/// A hot folder's page, its batches, their files and what may be done to them.
extension ConsoleHandler {
    func folderPage(_ request: HTTPRequest, _ viewer: Viewer, _ folder: ConsoleFolder, maxFileBytes: Int) -> HTTPResponse {
        let before = request.query["before"].flatMap { BatchID.isValid($0) ? $0 : nil }
        let (batches, more) = catalog.batches(of: folder.layout, limit: 30, before: before)
        let hasProof = BatchFiles.proof(folder.layout, template: folder.template) != nil
        let deleted = request.query["deleted"].flatMap { BatchID.isValid($0) ? Pages.Message.success("The batch of \(BatchLabel.when(id: $0)) is deleted.") : nil }
        return page(200, Pages.folder(viewer, folder, batches: batches, more: more, maxFileBytes: maxFileBytes,
                                      accept: Self.accept, hasProof: hasProof, message: deleted), request)
    }

    func batchPage(_ request: HTTPRequest, _ viewer: Viewer, _ folder: ConsoleFolder, id: String,
                   message: Pages.Message? = nil, status: Int = 200) -> HTTPResponse {
        guard let report = catalog.report(folder.layout, id), let files = try? BatchFiles.list(folder.layout, id) else {
            // Not published yet: on its way (open, being finished, waiting its turn), or gone.
            if let p = folder.progress(of: id) ?? (Files.exists(folder.layout.workFolder(id)) ? ConsoleFolder.Progress(batch: id, done: 0, total: 0) : nil) {
                return page(200, Pages.error(viewer, title: "Not ready yet",
                                             message: p.total > 0 ? "This batch is on its way: \(p.words). Its page is here once it is ready."
                                                                  : "This batch waits its turn. Its page is here once it is ready."), request)
            }
            return notFound(viewer, request)
        }
        let photos = BatchPage.photoFiles(report)
        let photoBytes = files.filter { photos.contains($0.path.map(\.readable).joined(separator: "/")) }.reduce(Int64(0)) { $0 + $1.size }
        var message = message
        if message == nil, let again = request.query["again"] {
            let what = again == "batch" ? "The whole batch is" : again == "1" ? "The photo is" : "\(Int(again) ?? 0) photos are"
            message = .success("\(what) being finished again, as a new batch: it appears in \(folder.name) when it is ready.")
        }
        if message == nil, let done = request.query["shared"].flatMap(SharingDone.init) { message = .success(done.words) }
        let view = BatchPage(viewer: viewer, inbox: folder.name, id: id, report: report, files: files,
                             redoes: report.redoes.flatMap { catalog.summary(folder.layout, $0) },
                             redoneBy: catalog.redoes(of: id, in: folder.layout), photoBytes: photoBytes, message: message,
                             share: sharePanel(viewer, folder, id: id, report: report))
        return page(status, view.html, request)
    }

    func batchFile(_ request: HTTPRequest, _ viewer: Viewer, _ folder: ConsoleFolder, id: String, path: [FileName]) -> HTTPResponse {
        guard let (file, st) = try? BatchFiles.open(folder.layout, id, path) else { return notFound(viewer, request) }
        return served(file, st, name: path.last!)
    }

    /// `GET /inbox/NAME/original/ID/FILE`: a source as it was dropped, from `originals/ID/` or `failed/ID/`.
    func original(_ request: HTTPRequest, _ viewer: Viewer, _ folder: ConsoleFolder, id: String, name: FileName) -> HTTPResponse {
        guard let (file, st) = try? BatchFiles.original(folder.layout, id, name) else { return notFound(viewer, request) }
        log.info("web: \(viewer.name) downloads the original \(name.escaped) of batch \(id)", ["INBOX": folder.name, "BATCH": id, "USER": viewer.name])
        return served(file, st, name: name, download: true)
    }

    /// A file answered from its descriptor (`sendfile`), with the type its name gives.
    private func served(_ file: FileDescriptor, _ st: FileStatus, name: FileName, download: Bool = false) -> HTTPResponse {
        let (type, inline) = BatchFiles.contentType(of: name)
        var headers: [(name: String, value: String)] = [
            ("Content-Type", type), ("Cache-Control", "private, max-age=3600"), ("X-Content-Type-Options", "nosniff"),
            ("Content-Security-Policy", HTML.filesContentSecurityPolicy), ("Referrer-Policy", "same-origin"),
        ]
        if !inline || download { headers.append(("Content-Disposition", Self.attachment(name.readable))) }
        return HTTPResponse(status: 200, headers: headers, body: .file(file, offset: 0, size: st.size))
    }

    /// `GET /inbox/NAME/batch/ID.zip`: the photos (every output), or with `?report=1` the
    /// whole batch folder (its report.html opens with its thumbnails).
    func zip(_ request: HTTPRequest, _ viewer: Viewer, _ folder: ConsoleFolder, id: String) -> HTTPResponse {
        do throws(SystemError) {
            var files = try BatchFiles.list(folder.layout, id)
            let everything = request.query["report"] == "1"
            if !everything, let report = catalog.report(folder.layout, id) {
                let photos = BatchPage.photoFiles(report)
                files = files.filter { photos.contains($0.path.map(\.readable).joined(separator: "/")) }
            }
            let zip = try BatchZip(folder: try BatchFiles.folder(folder.layout, id), id: id, files: files, log: log)
            log.info("web: \(viewer.name) downloads batch \(id) as a ZIP (\(files.count) files\(everything ? ", with its report" : ""))",
                     ["INBOX": folder.name, "BATCH": id, "USER": viewer.name])
            return HTTPResponse(status: 200, headers: [("Content-Type", "application/zip"),
                                                       ("Content-Disposition", Self.attachment(id + (everything ? "-with-report" : "") + ".zip")),
                                                       ("Cache-Control", "no-store"), ("X-Content-Type-Options", "nosniff")],
                                body: .stream(zip))
        } catch {
            return notFound(viewer, request)
        }
    }

    /// `POST /inbox/NAME/batch/ID/retry|redo|delete|share|revoke|approve`.
    func batchAction(_ action: Route.BatchAction, _ id: String, _ fields: [String: [String]], _ viewer: Viewer,
                     _ folder: ConsoleFolder, _ request: HTTPRequest) -> HTTPResponse {
        guard Self.checked(fields, viewer) else { return staleForm(viewer, request) }
        let fields1: LogFields = ["INBOX": folder.name, "BATCH": id, "USER": viewer.name]
        guard let report = catalog.report(folder.layout, id) else { return notFound(viewer, request) }
        switch action {
        case .share, .revoke, .approve:
            return sharingAction(action, id, report, fields, viewer, folder, request)
        case .delete:
            guard viewer.admin else {
                return page(403, Pages.error(viewer, title: "For administrators", message: "Only an administrator may delete a batch."), request)
            }
            var removed: [String] = []
            var problems: [String] = []
            for kind in [folder.layout.out, folder.layout.originals, folder.layout.failed] {
                guard let parent = try? Directory(kind), let name = FileName(id), (try? parent.status(of: name)) != nil else { continue }
                do throws(SystemError) {
                    try parent.removeTree(name)
                    try parent.sync()
                    removed.append(String(kind.dropFirst(folder.layout.root.count + 1)) + "/" + id)
                } catch {
                    problems.append("\(error)")
                }
            }
            catalog.forget(folder.layout, id)
            guard problems.isEmpty else {
                log.error("web: \(viewer.name) deleted batch \(id), but not all of it: \(problems.joined(separator: "; "))", fields1)
                return page(500, Pages.error(viewer, title: "Not all deleted", message: "Some of the batch could not be removed: \(problems.joined(separator: "; "))."), request)
            }
            log.notice("web: \(viewer.name) deleted batch \(id) (\(removed.joined(separator: ", ")))", fields1)
            return redirect(Paths.folder(folder.name) + "?deleted=" + Paths.encode(id))
        case .redo, .retry:
            var only: Set<FileName>?
            if action == .retry {
                let wanted = Set(fields["photo"] ?? [])
                let items = report.items.filter { $0.status != .ok && (wanted.isEmpty || wanted.contains($0.source)) }
                let names = Set(items.compactMap(BatchPage.filedName))
                guard !names.isEmpty else {
                    return batchPage(request, viewer, folder, id: id, message: .failure("There is no failed photo of that name to try again."), status: 422)
                }
                only = names
            }
            switch source.redo(inbox: folder.name, batch: id, only: only) {
            case .failure(let refusal):
                log.warning("web: \(viewer.name) asked to \(action == .redo ? "finish batch \(id) again" : "try failed photos of \(id) again"): \(refusal)", fields1)
                return batchPage(request, viewer, folder, id: id, message: .failure("Not started: \(refusal)."), status: 409)
            case .success(let newID):
                let what = action == .redo ? "the whole batch" : (only!.count == 1 ? only!.first!.escaped : Words.photos(only!.count))
                log.notice("web: \(viewer.name) has \(what) of batch \(id) finished again as batch \(newID)", fields1)
                // Answered with the batch's page (a reload asks nothing again), saying so.
                return redirect(Paths.batch(folder.name, id) + "?again=" + (action == .redo ? "batch" : "\(only!.count)"))
            }
        }
    }
}
