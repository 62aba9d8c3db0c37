import Configuration
import Foundation
import HTTP
import HotFolders
import Sharing
import System
import Testing
import TestSupport
@testable import Web

/// What a person does in the console, over HTTP to the console in this process: a batch's
/// gallery and its actions, logins and passwords, sessions across a restart, a stale tab,
/// an upload followed to "ready".
@Suite struct ConsoleActionTests {
    static let users: [(String, String, [String]?)] = [("anna", "anna's password", ["shop"]), ("boss", "the owner's password", nil)]

    /// The batch page: failed photos first, with why in plain words and their original to
    /// download (the very bytes dropped); then the finished ones as thumbnails linking to their
    /// outputs; named by when it started and its first photo, not by its id.
    @Test func aBatchIsAGalleryWithItsFailuresFirst() async throws {
        let rig = try ConsoleRig()
        let id = try await rig.publish(["IMG_1.jpg", "IMG_2.jpg", "x-broken.jpg"])
        let (anna, _) = try rig.loggedIn()
        let page = try anna.request("GET", "/inbox/shop/batch/\(id)/")
        #expect(page.status == 200)
        let html = page.text
        let failures = try #require(html.range(of: "class=\"failures\"")), gallery = try #require(html.range(of: "class=\"gallery\""))
        #expect(failures.lowerBound < gallery.lowerBound)
        #expect(html.contains("This file is not a photo PhotoFinish can read.") && html.contains("x-broken.jpg"))
        #expect(html.contains("IMG_1.jpg and 2 more") && html.contains("<h1><time datetime="))
        #expect(html.contains("src=\"/inbox/shop/batch/\(id)/thumbs/IMG_1.jpg\"") && html.contains("src=\"/inbox/shop/batch/\(id)/thumbs/IMG_2.jpg\""))
        #expect(html.contains("href=\"/inbox/shop/original/\(id)/x-broken.jpg\""))
        let original = try anna.request("GET", "/inbox/shop/original/\(id)/x-broken.jpg")
        #expect(original.status == 200 && original.text == "not a photo at all")
        #expect(original.header("Content-Disposition")?.hasPrefix("attachment") == true)
        // Only what the batch filed: nothing else of the hot folder is reachable that way.
        for bad in ["/inbox/shop/original/\(id)/..%2f..%2fusers.json5", "/inbox/shop/original/\(id)/.hidden",
                    "/inbox/shop/original/nosuch/x.jpg", "/inbox/studio/original/\(id)/x-broken.jpg"] {
            #expect([403, 404].contains(try anna.request("GET", bad).status), "\(bad)")
        }
        // The folder page lists it by its label, with thumbnails; the dashboard too.
        let folder = try anna.request("GET", "/inbox/shop/").text
        #expect(folder.contains("IMG_1.jpg and 2 more · 3 photos") && folder.contains("ready, 1 failed"))
    }

    /// Try a failed photo again, finish the batch again, delete it: each a form with the
    /// session's token, each checked for who asks (deleting is for administrators).
    @Test func actionsAreCheckedPerUser() async throws {
        let rig = try ConsoleRig(users: Self.users)
        let id = try await rig.publish(["IMG_1.jpg", "x-broken.jpg"])
        let (anna, token) = try rig.loggedIn(page: "/inbox/shop/batch/\(id)/")
        func post(_ c: ConsoleClient, _ path: String, _ form: String) throws -> ConsoleClient.Response {
            try c.request("POST", path, headers: [("Content-Type", "application/x-www-form-urlencoded")], body: Array(form.utf8))
        }
        let retried = try post(anna, "/inbox/shop/batch/\(id)/retry", "csrf=\(token)&photo=x-broken.jpg")
        #expect(retried.status == 303, "\(retried.status)")
        let location = try #require(retried.header("Location"))
        #expect(try anna.request("GET", location).text.contains("The photo is being finished again"))
        #expect(rig.source.redos.value.last.map { $0.inbox == "shop" && $0.batch == id && $0.only == [FileName("x-broken.jpg")] } == true)
        #expect(try post(anna, "/inbox/shop/batch/\(id)/redo", "csrf=\(token)").status == 303)
        #expect(rig.source.redos.value.last.map { $0.only == nil } == true)
        // Without the token, or with another session's: refused, nothing asked of the service.
        let asked = rig.source.redos.value.count
        #expect(try post(anna, "/inbox/shop/batch/\(id)/redo", "csrf=0000").status == 403)
        #expect(rig.source.redos.value.count == asked)
        // Deleting: not anna's to do.
        #expect(try post(anna, "/inbox/shop/batch/\(id)/delete", "csrf=\(token)").status == 403)
        #expect(FileManager.default.fileExists(atPath: rig.shop.out + "/" + id))
        let (boss, bossToken) = try rig.loggedIn("boss", "the owner's password", page: "/inbox/shop/batch/\(id)/")
        #expect(try boss.request("GET", "/inbox/shop/batch/\(id)/").text.contains("Delete the batch"))
        #expect(!(try anna.request("GET", "/inbox/shop/batch/\(id)/").text.contains("Delete the batch")))
        let deleted = try post(boss, "/inbox/shop/batch/\(id)/delete", "csrf=\(bossToken)")
        #expect(deleted.status == 303 && deleted.header("Location")?.hasPrefix("/inbox/shop/") == true)
        #expect(try boss.request("GET", deleted.header("Location") ?? "/").text.contains("is deleted."))
        for kind in [rig.shop.out, rig.shop.originals, rig.shop.failed] {
            #expect(!FileManager.default.fileExists(atPath: kind + "/" + id), "\(kind)")
        }
        #expect(try anna.request("GET", "/inbox/shop/batch/\(id)/").status == 404)
        #expect(rig.log.contains("boss deleted batch \(id)"))
    }

    /// The batch page's share panel (reference: Share links, QR codes; Approval): a user of
    /// the hot folder makes a link, sees it with its QR code (a scanner reads exactly the link),
    /// the client opens it, the user ends it (it answers 410 from then on), and approves the
    /// batch photo by photo (`approve: "owner"`): report.json says who approved what, and the
    /// service hears of it. A user of another hot folder, or a form without the session's
    /// token, changes nothing.
    @Test func aBatchIsSharedEndedAndApprovedFromItsPage() async throws {
        let rig = try ConsoleRig(users: Self.users + [("carl", "carl's password", ["studio"])], shares: true)
        var sharing = ConsoleSharing(publicURL: "http://127.0.0.1:\(rig.port)")
        sharing.settings.approve = .owner
        rig.source.shares.update { $0["shop"] = sharing }
        let id = try await rig.publish(["IMG_1.jpg", "IMG_2.jpg", "IMG_3.jpg"])
        let batch = "/inbox/shop/batch/\(id)/"
        let (anna, token) = try rig.loggedIn(page: batch)
        func post(_ c: ConsoleClient, _ action: String, _ form: String) throws -> ConsoleClient.Response {
            try c.request("POST", batch + action, headers: [("Content-Type", "application/x-www-form-urlencoded")], body: Array(form.utf8))
        }
        let before = try anna.request("GET", batch).text
        #expect(before.contains("Share with the client") && before.contains("No link yet.") && before.contains("action=\"\(batch)share\""))

        let made = try post(anna, "share", "csrf=\(token)&expires=2d&password=")
        #expect(made.status == 303 && made.header("Location") == batch + "?shared=link#share", "\(made.status) \(made.text.prefix(300))")
        let page = try anna.request("GET", batch + "?shared=link").text
        #expect(page.contains("The link is made"))
        let links = page.matches(of: /href="(http:\/\/127\.0\.0\.1:[0-9]+\/s\/[A-Za-z0-9_-]+\/)"/).map { String($0.output.1) }
        let link = try #require(links.first, "no link on the page:\n\(page)")
        #expect(links.count == 1)
        // Its QR code, drawn as the page's SVG draws it, read by a scanner.
        if let reason = QRScanner.unavailable {
            print("QR part skipped: \(reason)")
        } else {
            let svg = try #require(page.firstMatch(of: /<div class="qr">(<svg.*?<\/svg>)<\/div>/).map { String($0.output.1) })
            #expect(try QRScanner.texts(in: Self.raster(svg: svg), suffix: ".pgm") == [link])
        }
        let path = String(link.dropFirst("http://127.0.0.1:\(rig.port)".count))
        let client = rig.client()
        #expect(try client.request("GET", path).status == 200)
        #expect(try anna.request("GET", batch).text.contains("opened once"))

        // Carl uses another hot folder: neither his to share nor to end; a stale form neither.
        let name = try #require(page.firstMatch(of: /name="share" value="([0-9a-f]{32})"/).map { String($0.output.1) })
        let (carl, carlToken) = try rig.loggedIn("carl", "carl's password", page: "/inbox/studio/")
        #expect(try post(carl, "share", "csrf=\(carlToken)").status == 403)
        #expect(try post(carl, "revoke", "csrf=\(carlToken)&share=\(name)").status == 403)
        #expect(try post(anna, "revoke", "csrf=0000&share=\(name)").status == 403)
        #expect(try client.request("GET", path).status == 200)
        #expect(try ShareStore(root: rig.shop.root).all().count == 1)

        let ended = try post(anna, "revoke", "csrf=\(token)&share=\(name)")
        #expect(ended.status == 303 && ended.header("Location") == batch + "?shared=ended#share")
        #expect(try client.request("GET", path).status == 410)
        let after = try anna.request("GET", batch).text
        #expect(after.contains("withdrawn") && after.contains("by anna") && !after.contains("<div class=\"qr\">"))

        // The approval: a box per photo, two of three ticked, with a note.
        let photos = after.matches(of: /name="approve" value="([^"]+)"/).map { String($0.output.1) }
        #expect(photos.count == 3, "\(photos)")
        #expect(try post(carl, "approve", "csrf=\(carlToken)&approve=\(photos[0])").status == 403)
        let form = "csrf=\(token)&approve=\(photos[0])&approve=\(photos[2])&note=" + "Lovely, thanks".replacingOccurrences(of: " ", with: "+")
        let approved = try post(anna, "approve", form)
        #expect(approved.status == 303 && approved.header("Location") == batch + "?shared=approved#share", "\(approved.status) \(approved.text.prefix(300))")
        let report = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: rig.shop.out + "/\(id)/report.json"))) as? [String: Any]
        let approval = try #require(report?["approval"] as? [String: Any])
        #expect(approval["by"] as? String == "anna" && approval["note"] as? String == "Lovely, thanks")
        #expect(approval["approved"] as? [String] == [photos[0], photos[2]] && approval["rejected"] as? [String] == [photos[1]])
        #expect(rig.source.approvals.value.map { "\($0.inbox) \($0.batch)" } == ["shop \(id)"])
        #expect(try anna.request("GET", batch).text.contains("approved 2 of 3 photos"))
        // Once: a second approval changes nothing.
        #expect(try post(anna, "approve", "csrf=\(token)&approve=\(photos[1])").status == 409)
        #expect(rig.source.approvals.value.count == 1)
        #expect(rig.log.contains("anna made a share link to batch \(id)") && rig.log.contains("anna approved 2 of 3 photos of batch \(id)"))
    }

    /// The page's SVG QR code (`M x y h n v1 h-n z`: a run of dark modules) as a greyscale PGM,
    /// 8 pixels a module: what a phone's camera would see of it on the screen.
    static func raster(svg: String) throws -> [UInt8] {
        let side = try #require(svg.firstMatch(of: /viewBox="0 0 ([0-9]+) [0-9]+"/).flatMap { Int($0.output.1) })
        let scale = 8, width = side * scale
        var pixels = [UInt8](repeating: 255, count: width * width)
        for run in svg.matches(of: /M([0-9]+) ([0-9]+)h([0-9]+)v1h-[0-9]+z/) {
            let x = Int(run.output.1)!, y = Int(run.output.2)!, n = Int(run.output.3)!
            for row in y * scale..<(y + 1) * scale {
                for column in x * scale..<(x + n) * scale { pixels[row * width + column] = 0 }
            }
        }
        return Array("P5\n\(width) \(width)\n255\n".utf8) + pixels
    }

    /// An administrator adds a login, who logs in; gives it a new password (its sessions end);
    /// the login changes its own password (its other sessions end, this one goes on); it is
    /// removed (its session ends). Others may not see the logins page.
    @Test func loginsAndPasswordsFromTheConsole() throws {
        let rig = try ConsoleRig(users: Self.users)
        let (boss, token) = try rig.loggedIn("boss", "the owner's password", page: "/users")
        func post(_ c: ConsoleClient, _ path: String, _ form: String) throws -> ConsoleClient.Response {
            try c.request("POST", path, headers: [("Content-Type", "application/x-www-form-urlencoded")], body: Array(form.utf8))
        }
        let added = try post(boss, "/users", "csrf=\(token)&name=carl&password=carl%27s+first&inbox=shop&inbox=studio")
        #expect(added.status == 200 && added.text.contains("carl may log in now"), "\(added.text.prefix(500))")
        let users = try Users.load(path: rig.usersFile)
        #expect(users["carl"]?.inboxes == ["shop", "studio"] && users["carl"]?.admin == false)
        let (carl, _) = try rig.loggedIn("carl", "carl's first")
        #expect(try carl.request("GET", "/").text.contains("/inbox/studio/"))
        #expect(try carl.request("GET", "/users").status == 403)
        #expect(try post(carl, "/users", "csrf=x&name=eve&password=12345678&admin=on").status == 403)
        // A new password from the administrator: carl's sessions end.
        #expect(try post(boss, "/users/carl", "csrf=\(token)&do=password&password=carl%27s+second").status == 200)
        #expect(try carl.request("GET", "/").status == 303)
        #expect(try rig.client().login("carl", "carl's first").status == 401)
        let (phone, _) = try rig.loggedIn("carl", "carl's second")
        let (laptop, laptopToken) = try rig.loggedIn("carl", "carl's second", page: "/account")
        // carl's own change: the current password first.
        #expect(try post(laptop, "/account", "csrf=\(laptopToken)&current=wrong&password=carl%27s+third&again=carl%27s+third").status == 403)
        #expect(try post(laptop, "/account", "csrf=\(laptopToken)&current=carl%27s+second&password=carl%27s+third&again=different").status == 422)
        let changed = try post(laptop, "/account", "csrf=\(laptopToken)&current=carl%27s+second&password=carl%27s+third&again=carl%27s+third")
        #expect(changed.status == 200 && changed.text.contains("Your password is changed"))
        #expect(try laptop.request("GET", "/").status == 200)
        #expect(try phone.request("GET", "/").status == 303)
        #expect(try rig.client().login("carl", "carl's third").status == 303)
        // Removed: carl's session ends.
        #expect(try post(boss, "/users/carl", "csrf=\(token)&do=remove").status == 200)
        #expect(try laptop.request("GET", "/").status == 303)
        // The administrator cannot remove themselves.
        #expect(try post(boss, "/users/boss", "csrf=\(token)&do=remove").status == 422)
    }

    /// Plain HTTP on every address: said to administrators at the foot of every page (and in
    /// the log), not to others; on loopback, to nobody.
    @Test func plainHTTPBeyondThisMachineIsSaidToAdministrators() throws {
        let rig = try ConsoleRig(users: Self.users, address: "0.0.0.0")
        let (boss, _) = try rig.loggedIn("boss", "the owner's password")
        let (anna, _) = try rig.loggedIn()
        #expect(try boss.request("GET", "/").text.contains("speaks plain HTTP beyond this machine"))
        #expect(!(try anna.request("GET", "/").text.contains("plain HTTP")))
        #expect(rig.log.contains("the console at http://0.0.0.0:\(rig.port)/ speaks plain HTTP beyond this machine"), "\(rig.log)")
        let local = try ConsoleRig(users: Self.users)
        let (owner, _) = try local.loggedIn("boss", "the owner's password")
        #expect(!(try owner.request("GET", "/").text.contains("plain HTTP")))
    }

    /// The daemon restarted: the session goes on (the same cookie, the same form token).
    @Test func sessionsSurviveARestart() throws {
        let rig = try ConsoleRig()
        let (anna, token) = try rig.loggedIn()
        try rig.restart()
        let again = ConsoleClient(port: rig.port)
        again.cookies = anna.cookies
        #expect(try again.request("GET", "/inbox/shop/").status == 200)
        #expect(try again.csrf(on: "/inbox/shop/") == token)
        #expect(try again.upload("shop", [("after.jpg", try ConsoleRig.photo(1))], csrf: token).status == 200)
    }

    /// A tab opened before its user's last login sends the old form token: told the page is
    /// out of date (and to reload), not "refused". A tab whose session ended is told so.
    @Test func aStaleTabIsToldWhatToDo() throws {
        let rig = try ConsoleRig()
        let (anna, oldToken) = try rig.loggedIn()
        // Log out and in again in another tab (the cookie is the browser's, shared by the tabs).
        #expect(try anna.request("POST", "/logout", headers: [("Content-Type", "application/x-www-form-urlencoded")],
                                 body: Array("csrf=\(oldToken)".utf8)).status == 303)
        let ended = try anna.upload("shop", [("a.jpg", try ConsoleRig.photo(1))], csrf: oldToken)
        #expect(ended.status == 401 && ended.header("X-Console-Session") == "ended")
        #expect(try anna.login("anna", "anna's password").status == 303)
        let stale = try anna.upload("shop", [("a.jpg", try ConsoleRig.photo(1))], csrf: oldToken)
        #expect(stale.status == 403 && stale.header("X-Console-Stale") == "1")
        let answer = try #require(try JSONSerialization.jsonObject(with: Data(stale.body)) as? [String: Any])
        #expect(answer["stale"] as? Bool == true && (answer["note"] as? String)?.contains("reload") == true)
        #expect(rig.files(rig.shop.drop).isEmpty)
        // Every page says the assets' version: a tab from before an upgrade sees it differ.
        #expect(try anna.request("GET", "/").header("X-Console-Version") == Assets.version)
    }

    /// Where an upload's photos are: in drop/, in the open batch (with its counts), published
    /// (ready, with a link and thumbnails) — by their names, only in batches after the upload.
    @Test func anUploadIsFollowedToItsBatch() async throws {
        let rig = try ConsoleRig()
        let (anna, token) = try rig.loggedIn()
        // An older batch with the same names: never taken for this upload's.
        _ = try await rig.publish(["IMG_1.jpg", "IMG_2.jpg"])
        let r = try anna.upload("shop", [("IMG_1.jpg", try ConsoleRig.photo(1)), ("IMG_2.jpg", try ConsoleRig.photo(2))], csrf: token)
        let answer = try #require(try JSONSerialization.jsonObject(with: Data(r.body)) as? [String: Any])
        let accepted = try #require(answer["accepted"] as? [[String: Any]])
        let tracks = accepted.compactMap { $0["track"] as? String }.joined(separator: ".")
        let since = try #require(accepted.first?["at"] as? Double)
        func track() throws -> [String: Any] {
            let t = try anna.request("GET", "/inbox/shop/track?f=\(tracks)&since=\(since)")
            #expect(t.status == 200)
            return try #require(try JSONSerialization.jsonObject(with: Data(t.body)) as? [String: Any])
        }
        func states(_ t: [String: Any]) -> [String] { ((t["photos"] as? [[String: Any]]) ?? []).compactMap { $0["state"] as? String } }
        #expect(states(try track()) == ["waiting", "waiting"])
        // Claimed into an open batch, 1 of 2 done and 1 in progress (as the service says).
        let open = rig.shop.workFolder("20991205-021627-05c3")
        try FileManager.default.createDirectory(atPath: open + "/src", withIntermediateDirectories: true)
        for name in ["IMG_1.jpg", "IMG_2.jpg"] { try FileManager.default.moveItem(atPath: rig.shop.drop + "/" + name, toPath: open + "/src/" + name) }
        rig.source.update("shop") { $0.open = .init(batch: "20991205-021627-05c3", done: 1, total: 2, inProgress: 1, stage: .open) }
        let opened = try track()
        #expect(states(opened) == ["open", "open"])
        let batch = try #require((opened["batches"] as? [String: [String: Any]])?["20991205-021627-05c3"])
        #expect(batch["words"] as? String == "1 of 2 done, 1 in progress" && batch["done"] as? Int == 1 && batch["total"] as? Int == 2)
        // Finished: ready, with its link.
        for name in ["IMG_1.jpg", "IMG_2.jpg"] { try FileManager.default.moveItem(atPath: open + "/src/" + name, toPath: rig.shop.drop + "/" + name) }
        try FileManager.default.removeItem(atPath: open)
        rig.source.update("shop") { $0.open = nil }
        let id = try await rig.finish(["IMG_1.jpg", "IMG_2.jpg"])
        let ready = try track()
        #expect(states(ready) == ["ready", "ready"])
        let published = try #require((ready["batches"] as? [String: [String: Any]])?[id])
        #expect(published["link"] as? String == "/inbox/shop/batch/\(id)/")
        #expect((published["thumbs"] as? [String])?.count == 2)
    }
}
