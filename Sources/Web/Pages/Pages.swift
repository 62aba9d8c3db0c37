import Foundation
import HotFolders
import System

/// The console's pages, as HTML text (pure: made from plain values; tested without a server).
/// Plain HTML that works without script and reads on a 390 px phone; the parts marked
/// `data-live` are refreshed by the script every 2 s.
enum Pages {
    /// What a form's answer says above the page: done, or why not.
    enum Message: Equatable {
        case success(String)
        case failure(String)

        var html: String {
            switch self {
            case .success(let text): "<p class=\"ok-note\" role=\"status\">\(HTML.escape(text))</p>\n"
            case .failure(let text): "<p class=\"error\" role=\"alert\">\(HTML.escape(text))</p>\n"
            }
        }
    }

    static func login(error: String?, name: String, csrf: String, next: String) -> String {
        let message = error.map { "<p class=\"error\" role=\"alert\">\(HTML.escape($0))</p>" } ?? ""
        return HTML.page(title: "Log in", viewer: nil, body: """
            <form class="login card" method="post" action="/login">
            <h1>Log in</h1>
            \(message)
            <input type="hidden" name="csrf" value="\(HTML.escape(csrf))">
            <input type="hidden" name="next" value="\(HTML.escape(next))">
            <label for="user">User</label>
            <input id="user" name="user" autocomplete="username" autocapitalize="none" required value="\(HTML.escape(name))">
            <label for="password">Password</label>
            <input id="password" name="password" type="password" autocomplete="current-password" required>
            <button type="submit">Log in</button>
            </form>
            """)
    }

    static func dashboard(_ viewer: Viewer, folders: [ConsoleFolder], lasts: [BatchCatalog.Summary?], running: Bool) -> String {
        var body = "<h1>Hot folders</h1>\n"
        if !running { body += "<p class=\"error\">PhotoFinish is stopping: uploads wait in drop/ for its next start.</p>\n" }
        if folders.isEmpty {
            body += "<p>No hot folder for \(HTML.escape(viewer.name)) yet: an administrator gives them one on the Logins page "
                + "(or with <code>photofinish user add \(HTML.escape(viewer.name)) --inbox NAME</code>).</p>"
        }
        body += "<ul id=\"folders\" class=\"cards\" data-live>\n"
        for (folder, last) in zip(folders, lasts) {
            body += "<li class=\"card folder-card\">\n<h2><a href=\"\(Paths.folder(folder.name))\">\(HTML.escape(folder.name))</a></h2>\n"
            body += stateLine(folder) + now(folder)
            if let last {
                body += "<a class=\"last\" href=\"\(Paths.batch(folder.name, last.id))\">" + thumbs(folder.name, last)
                    + "<span><strong>\(HTML.escape(last.label.when()))</strong> " + badge(last)
                    + "<br><span class=\"dim\">\(HTML.escape(last.label.photos)) · \(HTML.escape(Words.photos(last.items)))</span></span></a>\n"
            } else {
                body += "<p class=\"dim\">No batch yet.</p>\n"
            }
            body += notes(folder) + "</li>\n"
        }
        body += "</ul>\n"
        return HTML.page(title: "Hot folders", viewer: viewer, body: body)
    }

    static func folder(_ viewer: Viewer, _ folder: ConsoleFolder, batches: [BatchCatalog.Summary], more: Bool,
                       maxFileBytes: Int, accept: String, hasProof: Bool, message: Message? = nil) -> String {
        let limit = HTML.escape(Upload.limitWords(maxFileBytes))
        var body = "<p class=\"crumbs\"><a href=\"/\">Hot folders</a> › \(HTML.escape(folder.name))</p>\n<h1>\(HTML.escape(folder.name))</h1>\n"
            + (message?.html ?? "")
        body += "<section id=\"state\" class=\"now\" data-live>\(stateLine(folder))\(now(folder))\(notes(folder))</section>\n"
        body += """
            <form class="upload card" method="post" action="\(Paths.upload(folder.name))" enctype="multipart/form-data" \
            data-max-bytes="\(maxFileBytes)" data-max-text="\(limit)" data-track="\(Paths.track(folder.name))">
            <input type="hidden" name="csrf" value="\(HTML.escape(viewer.csrf))">
            <div class="dropzone">
            <p class="lead"><span class="wide">Drop photos here, or </span><label class="button" for="photos">Choose photos</label></p>
            <input id="photos" type="file" name="photos" multiple accept="\(HTML.escape(accept))">
            <p class="dim">Up to \(limit) each. They are finished together once no more arrive for a few seconds.</p>
            <button type="submit" class="send">Upload</button>
            </div>
            <div class="result" hidden>
            <p class="headline" aria-live="polite"></p>
            <progress max="1" value="0"></progress>
            <p class="detail dim"></p>
            <div class="ready-thumbs thumbs"></div>
            <details class="each"><summary>Each photo</summary><ul class="files"></ul></details>
            </div>
            </form>

            """
        body += "<h2>Batches</h2>\n<ul id=\"batches\" class=\"batches\" data-live>\n"
        if batches.isEmpty {
            body += "<li class=\"dim\">No batch yet: photos uploaded or dropped here are finished together once they stop arriving.</li>\n"
        }
        for b in batches { body += batchCard(folder.name, b) }
        if more, let last = batches.last {
            body += "<li><a class=\"button plain\" href=\"\(Paths.folder(folder.name))?before=\(Paths.encode(last.id))\">Older batches</a></li>\n"
        }
        body += "</ul>\n"
        body += "<details class=\"proof card\"><summary>What the template “\(HTML.escape(folder.template))” does</summary>\n"
        body += hasProof
            ? "<a href=\"\(Paths.proof(folder.name))\"><img src=\"\(Paths.proof(folder.name))\" alt=\"proof sheet of the template \(HTML.escape(folder.template))\" loading=\"lazy\"></a>\n"
            : "<p class=\"dim\">Its proof sheet is being made.</p>\n"
        body += "</details>\n"
        return HTML.page(title: folder.name, viewer: viewer, body: body)
    }

    /// One batch in a folder's list: its label, state and first thumbnails, a link to it.
    static func batchCard(_ inbox: String, _ b: BatchCatalog.Summary) -> String {
        "<li class=\"card batch-card\"><a href=\"\(Paths.batch(inbox, b.id))\">" + thumbs(inbox, b)
            + "<span class=\"meta\"><strong>\(HTML.time(b.started))</strong> \(badge(b))"
            + "<span class=\"dim\">\(HTML.escape(b.label.photos)) · \(HTML.escape(Words.photos(b.items)))"
            + (b.redoes.map { " · again, from the batch of \(HTML.escape(BatchLabel.when(id: $0)))" } ?? "") + "</span></span></a></li>\n"
    }

    /// A batch's state for people: ready, ready with failures, failed, stopped.
    static func badge(_ b: BatchCatalog.Summary) -> String {
        switch b.status {
        case "complete": return "<span class=\"state complete\">ready</span>"
        case "partial": return "<span class=\"state partial\">ready, \(b.failed) failed</span>"
        case "failed": return "<span class=\"state failed\">failed</span>"
        case "interrupted": return "<span class=\"state interrupted\">stopped</span>"
        default: return "<span class=\"state\">\(HTML.escape(b.status))</span>"
        }
    }

    static func thumbs(_ inbox: String, _ b: BatchCatalog.Summary) -> String {
        guard !b.thumbnails.isEmpty else { return "<span class=\"thumbs empty\"></span>" }
        return "<span class=\"thumbs\">" + b.thumbnails.map {
            "<img src=\"\(Paths.batchFile(inbox, b.id, $0))\" alt=\"\" loading=\"lazy\" width=\"64\" height=\"64\">"
        }.joined() + (b.items > b.thumbnails.count ? "<span class=\"more\">+\(b.items - b.thumbnails.count)</span>" : "") + "</span>"
    }

    static func uploaded(_ viewer: Viewer, inbox: String, _ upload: Upload) -> String {
        var body = "<p class=\"crumbs\"><a href=\"/\">Hot folders</a> › <a href=\"\(Paths.folder(inbox))\">\(HTML.escape(inbox))</a></p>\n<h1>Upload</h1>\n"
        if let note = upload.note { body += "<p class=\"error\">\(HTML.escape(note))</p>\n" }
        if !upload.accepted.isEmpty {
            body += "<h2>\(HTML.escape(Words.photos(upload.accepted.count))) uploaded</h2>\n<ul class=\"files\">\n" + upload.accepted.map {
                "<li class=\"accepted\">\(HTML.escape($0.sent)) <span class=\"dim\">→ drop/\(HTML.escape($0.name)) (\(HTML.bytes($0.bytes)))</span></li>\n"
            }.joined() + "</ul>\n<p>They are finished together once no more arrive: see <a href=\"\(Paths.folder(inbox))\">\(HTML.escape(inbox))</a>.</p>\n"
        }
        if !upload.refused.isEmpty {
            body += "<h2>Refused</h2>\n<ul class=\"files\">\n" + upload.refused.map {
                "<li class=\"refused\">\(HTML.escape($0.sent)) <span class=\"dim\">— \(HTML.escape($0.reason))</span></li>\n"
            }.joined() + (upload.refusedMore > 0 ? "<li class=\"refused\">and \(upload.refusedMore) more</li>\n" : "") + "</ul>\n"
        }
        return HTML.page(title: "Upload", viewer: viewer, body: body)
    }

    static func error(_ viewer: Viewer?, title: String, message: String) -> String {
        HTML.page(title: title, viewer: viewer,
                  body: "<h1>\(HTML.escape(title))</h1>\n<p>\(HTML.escape(message))</p>\n<p><a href=\"/\">Back to the hot folders</a></p>\n")
    }

    /// The account page: change my password.
    static func account(_ viewer: Viewer, message: Message?) -> String {
        let scope = viewer.admin ? "an administrator: every hot folder" : "hot folders " + viewer.user.inboxes.joined(separator: ", ")
        return HTML.page(title: viewer.name, viewer: viewer, body: """
            <h1>\(HTML.escape(viewer.name))</h1>
            <p class="dim">Logged in as \(HTML.escape(viewer.name)), \(HTML.escape(scope)).</p>
            \(message?.html ?? "")<form class="card narrow" method="post" action="/account">
            <h2>Change my password</h2>
            <input type="hidden" name="csrf" value="\(HTML.escape(viewer.csrf))">
            <input type="text" name="user" value="\(HTML.escape(viewer.name))" autocomplete="username" hidden>
            <label for="current">Current password</label>
            <input id="current" name="current" type="password" autocomplete="current-password" required>
            <label for="password">New password <span class="dim">(at least \(PasswordHash.minimumLength) characters)</span></label>
            <input id="password" name="password" type="password" autocomplete="new-password" minlength="\(PasswordHash.minimumLength)" required>
            <label for="again">New password again</label>
            <input id="again" name="again" type="password" autocomplete="new-password" minlength="\(PasswordHash.minimumLength)" required>
            <button type="submit">Change my password</button>
            </form>

            """)
    }

    /// The logins page (administrators): each login, a form to add one.
    static func users(_ viewer: Viewer, users: [Users.User], folders: [String], problem: String?, message: Message?) -> String {
        var body = "<h1>Logins</h1>\n" + (message?.html ?? "")
        if let problem { body += "<p class=\"error\">\(HTML.escape(problem))</p>\n" }
        let csrf = "<input type=\"hidden\" name=\"csrf\" value=\"\(HTML.escape(viewer.csrf))\">"
        func choices(_ id: String, _ user: Users.User?) -> String {
            "<fieldset class=\"choices\"><legend>May use</legend>"
                + "<label><input type=\"checkbox\" name=\"admin\"\(user?.admin == true ? " checked" : "")> every hot folder (administrator)</label>"
                + folders.map { f in
                    "<label><input type=\"checkbox\" name=\"inbox\" value=\"\(HTML.escape(f))\"\(user?.inboxes.contains(f) == true ? " checked" : "")> \(HTML.escape(f))</label>"
                }.joined() + "</fieldset>"
        }
        body += "<ul class=\"cards users\">\n"
        for user in users {
            let me = user.name == viewer.name
            body += "<li class=\"card\" id=\"user-\(HTML.escape(user.name))\"><h2>\(HTML.escape(user.name))\(me ? " <span class=\"dim\">(you)</span>" : "")</h2>"
                + "<p class=\"dim\">\(HTML.escape(user.scope))</p>\n"
                + "<details><summary>New password</summary><form method=\"post\" action=\"\(Paths.user(user.name))\">\(csrf)"
                + "<input type=\"hidden\" name=\"do\" value=\"password\">"
                + "<input type=\"text\" name=\"user\" value=\"\(HTML.escape(user.name))\" autocomplete=\"username\" hidden>"
                + "<label for=\"pw-\(HTML.escape(user.name))\">New password for \(HTML.escape(user.name))</label>"
                + "<input id=\"pw-\(HTML.escape(user.name))\" name=\"password\" type=\"password\" autocomplete=\"new-password\" minlength=\"\(PasswordHash.minimumLength)\" required>"
                + "<button type=\"submit\">Set the password</button></form></details>\n"
                + "<details><summary>Hot folders</summary><form method=\"post\" action=\"\(Paths.user(user.name))\">\(csrf)"
                + "<input type=\"hidden\" name=\"do\" value=\"folders\">\(choices(user.name, user))"
                + "<button type=\"submit\">Save</button></form></details>\n"
            if !me {
                body += "<form method=\"post\" action=\"\(Paths.user(user.name))\" data-confirm=\"Remove the login \(HTML.escape(user.name))? They are logged out at once.\">\(csrf)"
                    + "<input type=\"hidden\" name=\"do\" value=\"remove\"><button class=\"danger\" type=\"submit\">Remove \(HTML.escape(user.name))</button></form>\n"
            }
            body += "</li>\n"
        }
        body += "</ul>\n"
        body += """
            <form class="card narrow add-user" method="post" action="/users">
            <h2>Add a login</h2>
            \(csrf)
            <label for="name">Name</label>
            <input id="name" name="name" autocomplete="off" autocapitalize="none" pattern="[A-Za-z0-9._@-]{1,64}" required>
            <label for="new-password">Password <span class="dim">(at least \(PasswordHash.minimumLength) characters)</span></label>
            <input id="new-password" name="password" type="password" autocomplete="new-password" minlength="\(PasswordHash.minimumLength)" required>
            \(choices("new", nil))
            <button type="submit">Add the login</button>
            </form>

            """
        return HTML.page(title: "Logins", viewer: viewer, body: body)
    }

    /// The folder's state in a badge: watching, refused (why, and the fix), and so on.
    static func stateLine(_ f: ConsoleFolder) -> String {
        var out = ""
        switch f.state {
        case .refused(let why, let fix):
            out += "<p><span class=\"state refused\">refused</span> \(HTML.escape(why))</p>\n"
            if !fix.isEmpty {
                out += "<p class=\"dim\">To fix it:</p>\n<ul class=\"fix\">"
                    + fix.map { "<li><code>\(HTML.escape($0))</code></li>" }.joined() + "</ul>\n"
            }
        case .lowSpace(let why):
            out += "<p><span class=\"state unavailable\">low on space</span> \(HTML.escape(why))</p>\n"
        case .unavailable(let since, let error):
            out += "<p><span class=\"state unavailable\">share unavailable</span> \(HTML.escape(error))"
                + (since.map { " · since \(HTML.time($0))" } ?? "") + "</p>\n"
        case .stopped:
            out += "<p><span class=\"state stopped\">stopped</span></p>\n"
        case .starting:
            out += "<p><span class=\"state stopped\">starting</span></p>\n"
        case .watching:
            let busy = f.processing != nil || f.open != nil || f.queued > 0 || f.waiting > 0
            out += busy ? "<p><span class=\"state processing\">working</span></p>\n" : "<p><span class=\"state idle\">ready for photos</span></p>\n"
        }
        return out
    }

    /// The batches on their way, each with its counts and a bar: the same words `status` and
    /// STATUS.txt say.
    static func now(_ f: ConsoleFolder) -> String {
        var out = ""
        for (p, lead) in [(f.processing, "Finishing"), (f.open, "Taking photos")] {
            guard let p else { continue }
            let stage = p.stage == .outputs ? "outputs" : p.stage == .open ? "open" : "photos"
            out += "<div class=\"progress-line\" data-batch=\"\(HTML.escape(p.batch))\" data-stage=\"\(stage)\">"
                + "<p><strong>\(lead)</strong> <span class=\"words\">\(HTML.escape(p.words))</span>"
                + (p.stage == .open ? " <span class=\"dim\">(more may join)</span>" : "") + "</p>"
                + "<progress max=\"\(max(1, p.total))\" value=\"\(p.done)\">\(p.done) of \(p.total)</progress></div>\n"
        }
        var counts: [String] = []
        if f.queued > 0 {
            counts.append(HTML.count(f.queued, "batch", "batches") + (f.parked > 0 ? " (\(Words.photos(f.parked)))" : "") + " waiting")
        }
        if f.waiting > 0 { counts.append(HTML.count(f.waiting, "file") + " arriving") }
        if !counts.isEmpty { out += "<p class=\"dim\">\(counts.joined(separator: " · "))</p>\n" }
        return out
    }

    private static func notes(_ f: ConsoleFolder) -> String {
        guard !f.notes.isEmpty else { return "" }
        return "<details class=\"notes\"><summary>\(HTML.count(f.notes.count, "file")) in drop/ not taken</summary><ul>"
            + f.notes.prefix(20).map { "<li>\(HTML.escape($0))</li>" }.joined() + "</ul></details>\n"
    }
}
