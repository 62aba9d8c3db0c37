import Batches
import Configuration
import Foundation
import HTTP
import HotFolders
import Service
import Sharing
import System

/// What an action on a batch's sharing did, said on the batch's page it redirects to
/// (`?shared=WORD`: a reload asks nothing again).
enum SharingDone: String {
    case link, ended, approved

    var words: String {
        switch self {
        case .link: "The link is made: send it to the client (it is listed below, with its QR code)."
        case .ended: "The link is ended: it answers “no longer available” from now on."
        case .approved: "The batch is approved: its deliveries that wait for the approval start."
        }
    }
}

/// The batch page's share panel and its actions (reference: Share links, QR codes; Approval):
/// a link made, a link ended, the studio's approval — each by a user of the hot folder, with
/// the session's form token, logged with who did it.
extension ConsoleHandler {
    /// The panel for the batch `id` (its links from the hot folder's store, its approval from
    /// its report); a store that cannot be read is said in the panel.
    func sharePanel(_ viewer: Viewer, _ folder: ConsoleFolder, id: String, report: Report) -> String {
        let sharing = source.sharing(inbox: folder.name)
        var note = ""
        var links: [SharePanel.Link] = []
        do throws(ShareError) {
            links = try SharePanel.links(batch: id, store: ShareStore(root: folder.layout.root), publicURL: sharing.publicURL)
        } catch {
            log.error("web: the share links of batch \(id) cannot be read: \(error.message)", ["INBOX": folder.name, "BATCH": id])
            note = Pages.Message.failure("Its links cannot be read: \(error.message).").html
        }
        let panel = SharePanel(links: links, approve: sharing.settings.approve, approval: BatchApproval.read(report),
                               photos: BatchApproval.photos(report), csrf: viewer.csrf,
                               actions: .init(share: Paths.action(folder.name, id, .share), revoke: Paths.action(folder.name, id, .revoke),
                                              approve: Paths.action(folder.name, id, .approve)),
                               hasPublicURL: sharing.publicURL != nil, expires: sharing.settings.shareExpires, now: Date())
        return note + panel.html
    }

    /// `POST …/share` (`expires`, `password`), `…/revoke` (`share`: its name), `…/approve`
    /// (`approve`: each photo chosen, `note`).
    func sharingAction(_ action: Route.BatchAction, _ id: String, _ report: Report, _ fields: [String: [String]], _ viewer: Viewer,
                       _ folder: ConsoleFolder, _ request: HTTPRequest) -> HTTPResponse {
        let logFields: LogFields = ["INBOX": folder.name, "BATCH": id, "USER": viewer.name]
        let sharing = source.sharing(inbox: folder.name)
        let store = ShareStore(root: folder.layout.root)
        func refused(_ status: Int, _ text: String) -> HTTPResponse {
            batchPage(request, viewer, folder, id: id, message: .failure(text), status: status)
        }
        let done: SharingDone
        switch action {
        case .share:
            var expires = sharing.settings.shareExpires
            if let text = fields["expires"]?.first?.trimmingCharacters(in: .whitespaces), !text.isEmpty {
                guard let duration = Config.parseDuration(text), duration > .zero else {
                    return refused(422, "Not made: “\(text)” is not a duration like 7d, 48h or 30m (at most a year).")
                }
                expires = duration
            }
            var password: String?
            if let given = fields["password"]?.first, !given.isEmpty {
                do throws(PasswordHash.Refused) {
                    password = try PasswordHash.make(given)
                } catch {
                    return refused(422, "Not made: \(error.description).")
                }
            }
            let now = Date()
            do throws(ShareError) {
                let made = try store.make(batch: id, expires: now + Double(expires.components.seconds), password: password,
                                          by: viewer.name, now: now)
                log.notice("web: \(viewer.name) made a share link to batch \(id) (\(made.share.name)), until \(HumanTime.words(made.share.expires))"
                           + (password == nil ? "" : ", with a password"), logFields)
            } catch {
                log.error("web: \(viewer.name) asked for a share link to batch \(id): \(error.message)", logFields)
                return refused(500, "Not made: \(error.message).")
            }
            done = .link
        case .revoke:
            let name = fields["share"]?.first ?? ""
            do throws(ShareError) {
                guard let share = try store.share(named: name), share.batch == id else {
                    return refused(404, "There is no such link to this batch.")
                }
                try store.revoke(named: name, by: viewer.name)
                log.notice("web: \(viewer.name) ended the share link \(name) to batch \(id)", logFields)
            } catch {
                log.error("web: \(viewer.name) asked to end the share link \(name) to batch \(id): \(error.message)", logFields)
                return refused(500, "Not ended: \(error.message).")
            }
            done = .ended
        case .approve:
            guard sharing.settings.approve == .owner else {
                return refused(409, sharing.settings.approve == .client ? "The client approves this batch, on the link's page."
                                                                        : "This hot folder's batches need no approval.")
            }
            guard report.approval == nil else { return refused(409, "This batch is approved already.") }
            let photos = BatchApproval.photos(report)
            let approval: Approval
            do throws(ShareError) {
                approval = try Approval.make(photos: photos, chosen: fields["approve"] ?? [], note: fields["note"]?.first,
                                             by: viewer.name, at: Date())
            } catch {
                return refused(422, "Not approved: \(error.message).")
            }
            do throws(ReportError) {
                guard try BatchApproval.record(approval, batchFolder: folder.layout.out + "/" + id) else {
                    return refused(409, "This batch is approved already.")
                }
            } catch {
                log.error("web: \(viewer.name)'s approval of batch \(id) cannot be written: \(error)", logFields)
                return refused(500, "Not approved: the batch's report cannot be written (\(error)).")
            }
            log.notice("web: \(viewer.name) approved \(approval.approved.count) of \(photos.count) photos of batch \(id)"
                       + (approval.note == nil ? "" : ", with a note"), logFields)
            source.approved(inbox: folder.name, batch: id)
            done = .approved
        default:
            return notFound(viewer, request)
        }
        if action != .approve {
            // The report's own link (what report.html shows) follows the store.
            do {
                try BatchLink.refresh(batch: id, root: folder.layout.root, publicURL: sharing.publicURL)
            } catch {
                log.warning("web: the report of batch \(id) does not show the change to its links: \(error)", logFields)
            }
        }
        return redirect(Paths.batch(folder.name, id) + "?shared=" + done.rawValue + "#share")
    }
}
