import Configuration
import Foundation
import HTTP
import HotFolders
import System
import Testing
import TestSupport
@testable import Web

/// Each way to bring the console down or around that a logged-in user or a loopback peer
/// tried, over HTTP to the console in this process (`ConsoleRig`): each answered, and nothing
/// of it kept.
@Suite struct ConsoleAttackTests {
    /// Six 1.5 MB photos sent chunked (no Content-Length) into a console whose request total is
    /// 4 MiB + 1 MiB: the connection is cut once the body passes the total; what landed before
    /// is whole, nothing half-written stays in .work/.
    @Test func aChunkedUploadIsHeldToTheRequestTotal() throws {
        let rig = try ConsoleRig()
        let (anna, token) = try rig.loggedIn()
        let photo = [UInt8](repeating: 0xAB, count: 1_500_000)
        let r = try anna.upload("shop", (1...6).map { ("p\($0).jpg", photo) }, csrf: token, chunked: true)
        #expect(r.status == 0 || r.status == 413, "\(r.status) \(r.text)")
        let landed = rig.files(rig.shop.drop)
        #expect(landed.count <= 3, "\(landed)")
        for name in landed {
            #expect(try FileManager.default.attributesOfItem(atPath: rig.shop.drop + "/" + name)[.size] as? Int == photo.count)
        }
        #expect(Poll.until(.seconds(10)) { rig.files(rig.shop.work).isEmpty }, "\(rig.files(rig.shop.work))")
        #expect(rig.log.contains("passed its limit"), "\(rig.log)")
        // The same form with its length said is refused from its head: nothing lands.
        let told = try anna.upload("shop", (7...12).map { ("p\($0).jpg", photo) }, csrf: token)
        #expect(told.status == 413)
        #expect(rig.files(rig.shop.drop) == landed)
    }

    /// 200,000 parts the hot folder never takes (`x.tmp`), chunked: answered at the thousandth
    /// part, and the body is read no further than its total (the connection is cut there).
    /// What one request keeps is bounded: the receiver lists 50 refusals and counts the rest.
    @Test func aFloodOfRefusedPartsIsCutAtItsLimit() throws {
        let rig = try ConsoleRig()
        let (anna, token) = try rig.loggedIn()
        let boundary = "flood"
        let part = Array("--\(boundary)\r\nContent-Disposition: form-data; name=\"photos\"; filename=\"x.tmp\"\r\n\r\nx\r\n".utf8)
        var left = 200_000
        var first = true
        let r = try anna.request("POST", "/inbox/shop/upload", headers: [("Content-Type", "multipart/form-data; boundary=\(boundary)"),
                                                                        ("Accept", "application/json")], length: nil) { piece in
            if first {
                first = false
                piece = Array("--\(boundary)\r\nContent-Disposition: form-data; name=\"csrf\"\r\n\r\n\(token)\r\n".utf8)
                return true
            }
            guard left > 0 else { return false }
            piece = []
            for _ in 0..<min(500, left) { piece += part }
            left -= min(500, left)
            return true
        }
        #expect(r.status == 0 || r.status == 413, "\(r.status)")
        // Cut near the total (4 MiB + 1 MiB, plus what the socket buffers held), not after 15 MB.
        #expect(r.sent < 12 << 20, "\(r.sent) bytes sent")
        #expect(rig.log.contains("more than \(Upload.maxParts) parts"), "\(rig.log.suffix(2000))")
        #expect(rig.files(rig.shop.drop).isEmpty)

        // The receiver itself: at most `listed` refusals kept, the rest counted, the answer at
        // the limit.
        let upload = try Upload(inbox: "shop", layout: rig.shop, mover: Mover(.renameNoReplace), maxFileBytes: 1 << 20, csrf: "t",
                                wantsJSON: true, user: "anna", log: .silent) { _ in HTTPResponse(status: 200) }
        _ = upload.partBegins(name: "csrf", filename: nil, contentType: nil)
        _ = "t".utf8.withContiguousStorageIfAvailable { upload.partData(UnsafeRawBufferPointer($0)) }
        var answer: HTTPResponse?
        for _ in 0..<5_000 where answer == nil {
            answer = upload.partBegins(name: "photos", filename: Array("x.tmp".utf8), contentType: nil) ?? upload.partEnds()
        }
        #expect(answer?.status == 413)
        #expect(upload.refused.count == Upload.listed && upload.refusedMore == Upload.maxParts - 1 - Upload.listed)
    }

    /// A FIFO (or a device, a socket) planted in a batch folder is never opened for reading:
    /// every console thread asking for it answers 404 at once, and the console goes on.
    @Test func aFIFOInABatchFolderIsNeverWaitedOn() async throws {
        let rig = try ConsoleRig()
        let id = try await rig.publish(["a.jpg", "b.jpg"])
        let out = rig.shop.out + "/" + id
        #expect(mkfifo(out + "/trap.jpg", 0o644) == 0)
        #expect(mkfifo(out + "/thumbs/trap.jpg", 0o644) == 0)
        #expect(mkfifo(rig.shop.originals + "/" + id + "/trap.jpg", 0o644) == 0)
        let (anna, _) = try rig.loggedIn()
        // More at once than the console has threads.
        let answers = Locked<[Int]>([])
        let cookies = anna.cookies, port = rig.port
        await withTaskGroup(of: Void.self) { group in
            for path in Array(repeating: ["/inbox/shop/batch/\(id)/trap.jpg", "/inbox/shop/batch/\(id)/thumbs/trap.jpg",
                                          "/inbox/shop/original/\(id)/trap.jpg"], count: 4).joined() {
                group.addTask {
                    let c = ConsoleClient(port: port)
                    c.cookies = cookies
                    answers.update { $0.append((try? c.request("GET", path))?.status ?? -1) }
                }
            }
        }
        #expect(answers.value.count == 12 && answers.value.allSatisfy { $0 == 404 }, "\(answers.value)")
        #expect(try anna.request("GET", "/inbox/shop/batch/\(id)/").status == 200)
        // The ZIP with the report leaves it out and is whole.
        let zip = try anna.request("GET", "/inbox/shop/batch/\(id).zip?report=1")
        #expect(zip.status == 200 && zip.body.count > 1000)
    }

    /// `X-Forwarded-For` from a peer the config does not name (loopback included) changes
    /// nothing: the throttle counts the peer. From a proxy it names, each client is its own.
    @Test func forwardedForResetsNoThrottleUnlessFromATrustedProxy() throws {
        let rig = try ConsoleRig()
        let guesser = rig.client()
        for i in 0..<3 { #expect(try guesser.login("anna", "guess \(i)").status == 401) }
        let token = try guesser.csrf(on: "/login")
        let form = "csrf=\(token)&user=anna&password=anna%27s+password"
        let spoofed = try guesser.request("POST", "/login", headers: [("Content-Type", "application/x-www-form-urlencoded"),
                                                                     ("X-Forwarded-For", "203.0.113.77")], body: Array(form.utf8))
        #expect(spoofed.status == 429, "\(spoofed.status)")

        let proxied = try ConsoleRig(tweak: { $0.trustedProxies = [AddressRange("127.0.0.1")!] })
        let client = proxied.client()
        for i in 0..<3 {
            let t = try client.csrf(on: "/login")
            let f = "csrf=\(t)&user=anna&password=guess\(i)"
            #expect(try client.request("POST", "/login", headers: [("Content-Type", "application/x-www-form-urlencoded"),
                                                                  ("X-Forwarded-For", "203.0.113.1")], body: Array(f.utf8)).status == 401)
        }
        let t = try client.csrf(on: "/login")
        let other = try client.request("POST", "/login", headers: [("Content-Type", "application/x-www-form-urlencoded"),
                                                                  ("X-Forwarded-For", "203.0.113.2")],
                                       body: Array("csrf=\(t)&user=anna&password=anna%27s+password".utf8))
        #expect(other.status == 303, "another client behind the proxy: \(other.status)")
        #expect(proxied.log.contains("failed login as 'anna' from 203.0.113.1"), "\(proxied.log)")
    }

    /// Eight wrong passwords for one login at once: never eight checks. One check runs per
    /// login name at a time, the others are refused at once; after three failures the next
    /// attempts wait.
    @Test func concurrentGuessesAreCheckedOneAtATime() async throws {
        let rig = try ConsoleRig()
        let tokens = try (0..<8).map { _ -> ([String: String], String) in
            let c = rig.client()
            let token = try c.csrf(on: "/login")
            return (c.cookies, token)
        }
        let statuses = Locked<[Int]>([])
        let port = rig.port
        await withTaskGroup(of: Void.self) { group in
            for (i, (cookies, token)) in tokens.enumerated() {
                group.addTask {
                    let c = ConsoleClient(port: port)
                    c.cookies = cookies
                    let form = "csrf=\(token)&user=anna&password=guess\(i)"
                    let r = try? c.request("POST", "/login", headers: [("Content-Type", "application/x-www-form-urlencoded")], body: Array(form.utf8))
                    statuses.update { $0.append(r?.status ?? -1) }
                }
            }
        }
        let checked = statuses.value.filter { $0 == 401 }.count
        #expect(checked >= 1 && checked <= 3, "\(statuses.value)")
        #expect(statuses.value.allSatisfy { $0 == 401 || $0 == 429 }, "\(statuses.value)")
        #expect(rig.log.components(separatedBy: "failed login as 'anna'").count - 1 == checked)
    }

    /// One user logging in again and again ends only their own oldest sessions: another's
    /// session goes on.
    @Test func repeatedLoginsEvictOnlyTheirOwnSessions() throws {
        let rig = try ConsoleRig(users: [("anna", "anna's password", ["shop"]), ("boss", "the owner's password", nil)])
        let (boss, _) = try rig.loggedIn("boss", "the owner's password")
        var annas: [ConsoleClient] = []
        for _ in 0..<(Sessions.perUser + 5) { annas.append(try rig.loggedIn().0) }
        #expect(try boss.request("GET", "/").status == 200)
        #expect(try annas.last!.request("GET", "/").status == 200)
        #expect(try annas.first!.request("GET", "/").status == 303)
    }

    /// Connections from one address beyond its share are closed as they come; another address
    /// is answered meanwhile.
    @Test func oneAddressCannotHoldEveryConnection() throws {
        let rig = try ConsoleRig(tweak: { $0.perAddressLimit = 8 })
        var held: [Int32] = []
        defer { for fd in held { close(fd) } }
        for _ in 0..<20 { held.append(try ConsoleClient.connect(port: rig.port, from: "127.0.0.2")) }
        // The ones over the limit are closed by the server: a read sees their end.
        var closed = Set<Int32>()
        let seen = Poll.until(.seconds(20)) {
            for fd in held where !closed.contains(fd) {
                var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                var byte: UInt8 = 0
                if poll(&p, 1, 0) > 0, recv(fd, &byte, 1, 0) <= 0 { closed.insert(fd) }
            }
            return closed.count >= 12
        }
        #expect(seen && closed.count == 12, "\(closed.count) of 20 closed")
        #expect(try rig.client().request("GET", "/login").status == 200)
    }

    /// Names cleaned of bidirectional and control characters as they land; the log escapes
    /// what a client sent (a login name with an escape sequence, a forged line).
    @Test func namesAreCleanedAndTheLogEscaped() throws {
        let rig = try ConsoleRig()
        let (anna, token) = try rig.loggedIn()
        let r = try anna.upload("shop", [("holiday\u{202E}gpj.exe.jpg", try ConsoleRig.photo(1))], csrf: token)
        #expect(r.status == 200, "\(r.text)")
        #expect(rig.files(rig.shop.drop) == ["holidaygpj.exe.jpg"])
        _ = try rig.client().login("\u{1B}[2Jroot\nweb: boss logged in", "x")
        #expect(rig.lines.value.allSatisfy { !$0.unicodeScalars.contains(where: ControlCharacters.contains) }, "\(rig.log)")
        #expect(rig.log.contains("failed login as '\\x1B[2Jroot\\x0Aweb: boss logged in'"), "\(rig.log)")
    }

    /// A phone names every photo `image.jpg`: four uploaded one after another, while the
    /// first already waits in the open batch, each land at once under a name of their own;
    /// 900 of one name in one form land in one pass (each number tried once).
    @Test func samePhoneNamesEachLandUnderTheirOwnName() throws {
        let rig = try ConsoleRig()
        let (anna, token) = try rig.loggedIn()
        // The open batch holds an image.jpg already (claimed from drop/ a moment ago).
        let open = rig.shop.workFolder("20261205-021627-05c3")
        try FileManager.default.createDirectory(atPath: open + "/src", withIntermediateDirectories: true)
        try Data(try ConsoleRig.photo(9)).write(to: URL(fileURLWithPath: open + "/src/image.jpg"))
        var landed: [String] = []
        for i in 0..<4 {
            let r = try anna.upload("shop", [("image.jpg", try ConsoleRig.photo(i))], csrf: token)
            let answer = try #require(try JSONSerialization.jsonObject(with: Data(r.body)) as? [String: Any])
            landed += ((answer["accepted"] as? [[String: Any]]) ?? []).compactMap { $0["as"] as? String }
        }
        #expect(landed == ["image (2).jpg", "image (3).jpg", "image (4).jpg", "image (5).jpg"])
        #expect(rig.files(rig.shop.drop) == landed.sorted())

        let r = try anna.upload("shop", Array(repeating: ("IMG.jpg", [UInt8]("x".utf8)), count: 900), csrf: token)
        let answer = try #require(try JSONSerialization.jsonObject(with: Data(r.body)) as? [String: Any])
        let names = ((answer["accepted"] as? [[String: Any]]) ?? []).compactMap { $0["as"] as? String }
        #expect(names.count == 900 && Set(names).count == 900)
        #expect(names.first == "IMG.jpg" && names.last == "IMG (900).jpg")
    }

    /// The ZIP holds the photos (and the report only when asked), under names Windows can
    /// unpack: a name with a backslash does not become a folder.
    @Test func theZipHoldsThePhotosUnderSafeNames() async throws {
        let rig = try ConsoleRig()
        let id = try await rig.publish(["a.jpg", "b\\..\\c.jpg", "z-broken.jpg"])
        let (anna, _) = try rig.loggedIn()
        let zip = try anna.request("GET", "/inbox/shop/batch/\(id).zip")
        #expect(zip.status == 200)
        let listed = try Self.entries(zip.body, dir: rig.dir)
        #expect(listed == ["\(id)/a.jpg", "\(id)/b_.._c.jpg"], "\(listed)")
        let whole = try Self.entries(try anna.request("GET", "/inbox/shop/batch/\(id).zip?report=1").body, dir: rig.dir)
        #expect(whole.contains("\(id)/report.json") && whole.contains("\(id)/report.html") && whole.contains("\(id)/thumbs/a.jpg"), "\(whole)")
    }

    /// The names in a ZIP (Python's zipfile), its CRCs checked.
    static func entries(_ zip: [UInt8], dir: String) throws -> [String] {
        let path = dir + "/x-\(UInt32.random(in: 0...UInt32.max)).zip"
        try Data(zip).write(to: URL(fileURLWithPath: path))
        let python = Process()
        python.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        python.arguments = ["-c", "import sys, zipfile\nz = zipfile.ZipFile(sys.argv[1])\nassert z.testzip() is None\nprint('\\n'.join(sorted(z.namelist())))", path]
        let out = Pipe()
        python.standardOutput = out
        try python.run()
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        python.waitUntilExit()
        try #require(python.terminationStatus == 0)
        return text.split(separator: "\n").map(String.init)
    }
}
