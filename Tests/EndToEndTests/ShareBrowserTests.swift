import Foundation
import Notifications
import Testing
import TestSupport

/// A studio hands a set to its client (README "Sending a set to a client"): the real daemon on
/// a socket as systemd passes it, its hot folder asking the client's approval, an SFTP
/// delivery `when: "approved"` to OpenSSH's sshd, notices to a webhook receiver and to an SMTP
/// server (aiosmtpd), all on loopback and started once here; the client is Chromium at phone
/// size over WebDriver.
@Suite(.serialized) struct ShareBrowserTests {
    static let artefacts = FileManager.default.currentDirectoryPath + "/.build/artefacts/share"

    static var skipReason: String? {
        if !WebDriver.canRun { return "chromium or chromium-driver is missing (scripts/bootstrap --browser installs them; scripts/test does)" }
        if !ConsoleFixture.canRun { return "systemd-socket-activate is missing" }
        if let why = QRScanner.unavailable { return why }
        if !FileManager.default.isExecutableFile(atPath: "/usr/bin/python3")
            || (try? Harness.exec("/usr/bin/python3", ["-c", "import aiosmtpd"], deadline: .seconds(30)))?.status != 0 {
            return "python3-aiosmtpd is missing (scripts/bootstrap installs it)"
        }
        return DeliveryServers.missing(["/usr/sbin/sshd", "/usr/bin/ssh-keygen"])
    }

    @Test(.timeLimit(.minutes(8)))
    func aClientApprovesFourOfSixAndOnlyThoseAreDelivered() throws {
        if let why = Self.skipReason { print("skipped: \(why)"); return }
        let hot = try ConsoleFixture(template: """
            { version: 1, resize: { longSide: 640 }, output: { format: "jpeg", quality: 85 },
              qr: { text: "{shareURL}", width: 0.3, position: "bottom-right", padding: 0.03 } }
            """)
        let base = "http://127.0.0.1:\(hot.port)"
        // The servers: sshd (the client's SFTP), aiosmtpd (the owner's mail), a webhook receiver.
        let export = hot.dir + "/export"
        try FileManager.default.createDirectory(atPath: export + "/in", withIntermediateDirectories: true)
        try ShareLab.giveToNobody(export + "/in")
        let ssh = try SSHServer(dir: hot.dir)
        defer { ssh.stop() }
        try Harness.write(ssh.knownHostsLine, to: hot.dir + "/known_hosts")
        let maildir = hot.dir + "/maildir"
        let smtp = try SMTPServer(dir: hot.dir, maildir: maildir)
        defer { smtp.stop() }
        let hook = try TestHTTPServer(status: 200)
        defer { hook.close() }
        let secret = "the hook's shared secret"
        let credentials = hot.dir + "/credentials.json5"
        try Harness.write("""
            { client: { user: "root", privateKey: "\(ssh.identity)" }, hook: { secret: "\(secret)" },
              smtp: { user: "\(SMTPServer.user)", password: "\(SMTPServer.password)" } }
            """, to: credentials)
        chmod(credentials, 0o600)
        try Harness.write("""
            { templatesDir: "templates", users: "users.json5", credentials: "\(credentials)",
              web: { publicURL: "\(base)/" },
              mail: { server: "smtp://127.0.0.1:\(smtp.port)", from: "Studio <photos@example.org>", credentials: "smtp", caFile: "\(smtp.certificate)" },
              inboxes: [ { name: "shop", root: "\(hot.shop)", template: "small", approve: "client",
                           notify: [ "mailto:owner@example.org", { webhook: "http://127.0.0.1:\(hook.port)/hook", secret: "hook" } ],
                           deliver: [ { name: "client-sftp", to: "sftp://root@127.0.0.1:\(ssh.port)\(export)/in/", when: "approved",
                                        credentials: "client", knownHosts: "\(hot.dir)/known_hosts" } ] } ],
              settle: "300ms", quiet: "700ms", maxWait: "20s", rescanInterval: "2s", workers: 2, maxFileBytes: "8MiB" }
            """, to: hot.config)
        let daemon = try hot.start()
        defer { daemon.signal(SIGTERM); _ = daemon.wait() }
        // systemd-socket-activate starts the daemon at the first connection.
        _ = try ConsoleClient(port: hot.port).request("GET", "/login")
        #expect(daemon.waitUntilReady(), "\(daemon.log)")

        // Six photos from the shoot, dropped together: one batch.
        try FileManager.default.createDirectory(atPath: hot.shop + "/drop", withIntermediateDirectories: true)
        for n in 1...6 {
            let image = Harness.marked(width: n % 2 == 0 ? 900 : 1200, height: n % 2 == 0 ? 1200 : 900)
            try Harness.write(try Harness.jpeg(upright: image), to: hot.dir + "/IMG_\(n).jpg")
            try FileManager.default.moveItem(atPath: hot.dir + "/IMG_\(n).jpg", toPath: hot.shop + "/drop/IMG_\(n).jpg")
        }
        #expect(Poll.until(.seconds(240)) { hot.reports(hot.shop).count == 1 }, "\(daemon.log)")
        let batch = try #require(hot.reports(hot.shop).keys.first)
        let out = hot.shop + "/out/" + batch
        // Held: the webhook hears finished then held; nothing is delivered yet.
        #expect(Poll.until(.seconds(60)) { Self.events(hook).count >= 2 }, "\(daemon.log)")

        // The owner shares the batch; its link starts with web.publicURL.
        let made = try Harness.run(["share", hot.shop, batch, "--expires", "7d", "--config", hot.config])
        let link = made.stdout.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: "\n").first.map(String.init) ?? ""
        #expect(made.status == 0 && link.hasPrefix(base + "/s/"), "\(made.stdout)\(made.stderr)")
        #expect(try Harness.report(in: out)["link"] as? String == link)

        // Every finished photo carries the batch's own link as a QR code (its template's mark),
        // which opens the same gallery.
        let photoLinks = try QRScanner.texts(inFile: out + "/IMG_1.jpg")
        #expect(photoLinks.count == 1 && photoLinks.first?.hasPrefix(base + "/s/") == true, "\(photoLinks)")
        if let own = photoLinks.first {
            #expect(try ConsoleClient(port: hot.port).request("GET", String(own.dropFirst(base.count))).status == 200)
        }

        // The client, on a phone, no login: the gallery, its QR code read from a screenshot.
        try FileManager.default.createDirectory(atPath: Self.artefacts, withIntermediateDirectories: true)
        let browser = try WebDriver(dir: hot.dir, downloads: hot.dir + "/downloads")
        try browser.resize(width: 390, height: 844)
        try browser.open(link)
        #expect(try browser.text("h1") == "Your photos", "\((try? browser.run("return document.body.innerText;")) ?? "")\n\(daemon.log)")
        #expect(try browser.run("return document.querySelectorAll('.slide img').length;") as? Int == 6)
        #expect(try browser.run("return document.documentElement.scrollWidth <= window.innerWidth;") as? Bool == true,
                "the page does not scroll sideways at 390 px (the strip scrolls inside itself)")
        // Next ›: the strip moves to the second photo.
        try browser.click("#p1 a.step")
        #expect(Poll.until(.seconds(20)) { (try? browser.url)?.hasSuffix("#p2") == true })
        _ = try browser.run("document.querySelector('.qr').scrollIntoView(); return true;")
        let shot = try browser.screenshot()
        try Data(shot).write(to: URL(fileURLWithPath: Self.artefacts + "/gallery-390-qr.png"))
        #expect(try QRScanner.texts(in: shot) == [link])

        // Approves four of six with a note.
        let names = (1...6).map { "IMG_\($0).jpg" }
        let chosen = ["IMG_1.jpg", "IMG_2.jpg", "IMG_4.jpg", "IMG_6.jpg"]
        // Photo by photo, as a thumb would: tick, then Next › (the strip snaps to the next one;
        // a box off screen cannot be clicked, as on the phone).
        try browser.open(link)
        func settled(on n: Int) -> Bool {
            (try? browser.run("return Math.abs(document.querySelector('#p\(n)').getBoundingClientRect().left) < 1;") as? Bool) == true
        }
        for n in 1...6 {
            #expect(Poll.until(.seconds(20)) { settled(on: n) }, "the strip did not come to photo \(n)")
            if chosen.contains("IMG_\(n).jpg") {
                let box = "#p\(n) input[name=approve]"
                #expect(Poll.until(.seconds(20)) {
                    if (try? browser.run("return document.querySelector(\(WebDriver.quoted(box))).checked;") as? Bool) == true { return true }
                    try? browser.click(box)
                    return false
                }, "photo \(n) not ticked")
            }
            if n < 6 { try browser.click("#p\(n) a.step[href='#p\(n + 1)']") }
        }
        #expect(try browser.run("return document.querySelectorAll('input[name=approve]:checked').length;") as? Int == 4)
        let note = "Please crop IMG_4 a little tighter — thanks! Zoë"
        try browser.type(note, into: "#note")
        try browser.click("form.approval button")
        #expect(Poll.until(.seconds(30)) { (try? browser.text(".notice"))?.contains("You approved 4 of 6 photos") == true },
                "\((try? browser.run("return document.body.innerText;")) ?? "")\n\(daemon.log)")
        _ = try browser.run("window.scrollTo(0, 0); return true;")
        try Data(try browser.screenshot()).write(to: URL(fileURLWithPath: Self.artefacts + "/gallery-390-approved.png"))

        // The report says who approved what, and when.
        let approval = try #require(try Harness.report(in: out)["approval"] as? [String: Any])
        #expect(approval["by"] as? String == "client")
        #expect(approval["approved"] as? [String] == chosen)
        #expect(approval["rejected"] as? [String] == names.filter { !chosen.contains($0) })
        #expect(approval["note"] as? String == note)

        // The SFTP delivery carries those four, not the others.
        let delivered = Poll.until(.seconds(120)) {
            ((try? Harness.report(in: out))?["deliveries"] as? [[String: Any]])?.first?["status"] as? String == "delivered"
        }
        #expect(delivered, "\(daemon.log)")
        let received = DeliveryStory.read(folder: export + "/in/" + batch)
        // (`what: "outputs"`, the default: the photos alone.)
        #expect(received.keys.sorted() == chosen)
        for name in chosen { #expect(received[name] == (try? Harness.read(out + "/" + name))) }

        // The webhook: each notice signed with the secret, in order.
        #expect(Poll.until(.seconds(60)) { Self.events(hook).count >= 4 }, "\(Self.events(hook))\n\(daemon.log)")
        #expect(Self.events(hook).map(\.event) == ["finished", "held", "approved", "delivered"])
        for request in hook.requests {
            let signature = request.head.split(separator: "\r\n").first { $0.lowercased().hasPrefix("x-photofinish-signature:") }
                .map { String($0.split(separator: ":", maxSplits: 1)[1]).trimmingCharacters(in: .whitespaces) } ?? ""
            #expect(WebhookSignature.isValid(signature, body: request.body, secret: Array(secret.utf8)), "\(request.head)")
        }
        let approvedBody = try #require(Self.events(hook).first { $0.event == "approved" }?.json)
        #expect((approvedBody["approval"] as? [String: Any])?["note"] as? String == note)
        #expect(approvedBody["batch"] as? String == batch && approvedBody["inbox"] as? String == "shop")
        // The mails: one per notice, to the owner.
        #expect(Poll.until(.seconds(60)) { Self.mails(maildir).count >= 4 }, "\(smtp.log)\n\(daemon.log)")
        let mails = Self.mails(maildir)
        #expect(mails.allSatisfy { $0.to == "owner@example.org" }, "\(mails)")
        // Its text as it was meant: its line breaks, the note's dash and name, the link whole
        // (quoted-printable: its lines real lines, none over 76 characters, no `=0A`).
        let approvedMail = try #require(mails.first { $0.subject == "shop: 4 of 6 photos approved" }, "\(mails)")
        #expect(approvedMail.text == """
            The client approved 4 of the 6 photos of batch \(batch) in shop.

            Approved: IMG_1.jpg, IMG_2.jpg, IMG_4.jpg, IMG_6.jpg

            Not approved: IMG_3.jpg, IMG_5.jpg

            Their note:

            > \(note)

            The photos: \(link)

            -- \("")
            PhotoFinish, shop

            """, "\(approvedMail.text)")
        for mail in mails {
            #expect(mail.encoding == "quoted-printable" && !mail.raw.contains("=0A"), "\(mail.raw)")
            let lines = mail.raw.replacingOccurrences(of: "\r\n", with: "\n").split(separator: "\n", omittingEmptySubsequences: false)
            #expect(lines.count > 3 && lines.allSatisfy { $0.count <= 76 }, "\(mail.raw)")
        }
        #expect(approvedMail.raw.contains("\nApproved: IMG_1.jpg, IMG_2.jpg, IMG_4.jpg, IMG_6.jpg\n"), "\(approvedMail.raw)")

        // A second approval is refused: the choice is made.
        let again = try ConsoleClient(port: hot.port).request("POST", String(link.dropFirst(base.count)) + "approve",
                                                             headers: [("Content-Type", "application/x-www-form-urlencoded")],
                                                             body: Array("approve=IMG_3.jpg".utf8))
        #expect(again.status == 403 || again.status == 409)

        // Revoked: 410. Expired: 410. A token never made: 404.
        let client = ConsoleClient(port: hot.port)
        #expect(try Harness.run(["share", "revoke", hot.shop, link, "--config", hot.config]).status == 0)
        #expect(try client.request("GET", String(link.dropFirst(base.count))).status == 410)
        let brief = try Harness.run(["share", hot.shop, batch, "--expires", "1s", "--config", hot.config])
        let briefPath = String(brief.stdout.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: "\n").first ?? "").dropFirst(base.count)
        #expect(Poll.until(.seconds(30)) { (try? client.request("GET", String(briefPath)))?.status == 410 }, "\(brief.stdout)\(brief.stderr)")
        var forged = Array(link.dropFirst(base.count))
        forged[10] = forged[10] == "A" ? "B" : "A"
        #expect(try client.request("GET", String(forged)).status == 404)

        // A password: the page asks for it; a wrong one is refused, then slowed (429,
        // Retry-After); the right one opens the gallery.
        let locked = try Harness.exec("/bin/sh", ["-c", "printf '%s\\n' 'bride and groom 2026' | \"$BIN\" share \(hot.shop) \(batch) --password-stdin --config \(hot.config)"],
                                      deadline: .seconds(120), extraEnvironment: ["BIN": Harness.binary])
        let lockedPath = String(locked.stdout.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: "\n").first ?? "").dropFirst(base.count)
        #expect(locked.status == 0, "\(locked.stderr)")
        let guest = ConsoleClient(port: hot.port)
        let ask = try guest.request("GET", String(lockedPath))
        #expect(ask.status == 401 && ask.text.contains("type=\"password\""))
        let form = try #require(ask.text.range(of: "name=\"csrf\" value=\"").map { String(ask.text[$0.upperBound...].prefix { $0 != "\"" }) })
        func tryPassword(_ password: String) throws -> ConsoleClient.Response {
            try guest.request("POST", String(lockedPath), headers: [("Content-Type", "application/x-www-form-urlencoded")],
                              body: Array("csrf=\(form)&password=\(password.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!)".utf8))
        }
        #expect(try tryPassword("wrong").status == 401)
        var slowed: ConsoleClient.Response?
        for _ in 0..<12 {
            let r = try tryPassword("wrong")
            if r.status == 429 { slowed = r; break }
            #expect(r.status == 401)
        }
        #expect(slowed?.header("Retry-After") != nil, "never slowed")
        #expect(slowed?.text.contains("Too many wrong passwords") == true)
        #expect(Poll.until(.seconds(120)) { (try? tryPassword("bride and groom 2026"))?.status == 303 })
        #expect(try guest.request("GET", String(lockedPath)).status == 200)
        // Nothing else of the server through a link: not the report, not another batch's files.
        #expect(try guest.request("GET", String(lockedPath) + "report.json").status == 404)
        #expect(try guest.request("GET", String(lockedPath) + "IMG_3.jpg").status == 200)
        #expect(try guest.request("GET", String(lockedPath) + "..%2freport.json").status == 404)

        // Openings were counted, per link.
        let list = try Harness.run(["share", "list", hot.shop, "--config", hot.config])
        #expect(list.status == 0, "\(list.stderr)")
        print("share: screenshots in \(Self.artefacts)/\n\(list.stdout)")
    }

    struct Event {
        var event: String
        var json: [String: Any]
    }

    static func events(_ hook: TestHTTPServer) -> [Event] {
        hook.requests.compactMap { r in
            guard let json = (try? JSONSerialization.jsonObject(with: Data(r.body))) as? [String: Any], let event = json["event"] as? String else { return nil }
            return Event(event: event, json: json)
        }
    }

    struct Mail: CustomStringConvertible {
        var to: String
        /// Decoded (RFC 2047).
        var subject: String
        /// The text part decoded, its line ends LF.
        var text: String
        /// The text part as the server kept it (encoded), and its Content-Transfer-Encoding.
        var raw: String
        var encoding: String
        var description: String { "To: \(to)\nSubject: \(subject)\n\(raw)" }
    }

    /// Each mail received, read with Python's own MIME parser.
    static func mails(_ maildir: String) -> [Mail] {
        let script = """
            import email, email.header, json, sys
            m = email.message_from_binary_file(open(sys.argv[1], "rb"))
            part = m.get_payload(0) if m.is_multipart() else m
            print(json.dumps({"to": m["To"] or "", "subject": str(email.header.make_header(email.header.decode_header(m["Subject"] or ""))),
                              "text": part.get_payload(decode=True).decode("utf-8").replace("\\r\\n", "\\n"),
                              "raw": part.get_payload(decode=False), "encoding": part["Content-Transfer-Encoding"] or ""}))
            """
        return DeliveryServers.files(under: maildir + "/new").compactMap { name in
            guard let r = try? Harness.exec("/usr/bin/python3", ["-c", script, maildir + "/new/" + name], deadline: .seconds(30)), r.status == 0,
                  let json = (try? JSONSerialization.jsonObject(with: Data(r.stdout.utf8))) as? [String: String] else { return nil }
            return Mail(to: json["to"] ?? "", subject: json["subject"] ?? "", text: json["text"] ?? "", raw: json["raw"] ?? "",
                        encoding: json["encoding"] ?? "")
        }
    }
}
