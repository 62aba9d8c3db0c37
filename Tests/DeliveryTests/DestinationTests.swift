import Foundation
import System
import Testing
import TestSupport
@testable import Delivery

struct DestinationTests {
    @Test func eachSchemeIsTakenApart() throws {
        let sftp = try Destination.parse("sftp://studio@files.example.org:2222/incoming/client/")
        #expect(sftp.kind == .sftp && sftp.user == "studio" && sftp.host == "files.example.org" && sftp.port == 2222)
        #expect(sftp.url("b1/IMG 1.jpg") == "sftp://files.example.org:2222/incoming/client/b1/IMG%201.jpg")
        let dav = try Destination.parse("webdavs://dav.example.org/remote.php/dav/files/studio")
        #expect(dav.path == "/remote.php/dav/files/studio/" && dav.url("a.jpg") == "https://dav.example.org/remote.php/dav/files/studio/a.jpg")
        let ftps = try Destination.parse("ftps://ftp.example.org/up/")
        #expect(ftps.url("a.jpg") == "ftp://ftp.example.org/up/a.jpg" && !ftps.implicitTLS)
        #expect(try Destination.parse("ftps://ftp.example.org/up/?implicit").url("a") == "ftps://ftp.example.org/up/a")
        let s3 = try Destination.parse("s3://photos/clients/acme?endpoint=http://127.0.0.1:9000&region=eu-west-1")
        #expect(s3.bucket == "photos" && s3.path == "clients/acme/" && s3.region == "eu-west-1")
        #expect(s3.url("b1/a.jpg") == "http://127.0.0.1:9000/photos/clients/acme/b1/a.jpg")
        #expect(try Destination.parse("s3://photos/").url("a.jpg") == "https://photos.s3.us-east-1.amazonaws.com/a.jpg")
        #expect(try Destination.parse("mailto:a@example.org,b@example.org").recipients == ["a@example.org", "b@example.org"])
        #expect(try Destination.parse("file:///srv/outbox").url("b1/a.jpg") == "file:///srv/outbox/b1/a.jpg")
    }

    @Test(arguments: [
        ("gopher://h/", "must start with"), ("sftp://u:secret@h/x/", "must not hold a password"), ("sftp:///x/", "needs a host"),
        ("file://host/x/", "three slashes"), ("s3://b/?endpoint=ftp://x", "endpoint must be"), ("mailto:nobody", "needs one or more"),
        ("sftp://h/a/../b/", "'..'"), ("webdav://h/x/?q=1", "takes no query key"),
    ])
    func aBadURLSaysWhy(url: String, says: String) {
        #expect(throws: Destination.Problem.self) { try Destination.parse(url) }
        do { _ = try Destination.parse(url) } catch { #expect(error.description.contains(says), "\(error)") }
    }

    @Test func credentialsAreReadOnlyFromAPrivateFileAndSystemdWins() throws {
        let dir = try TemporaryFolder.make("credentials")
        let file = dir + "/credentials.json5"
        try "{ client: { user: \"studio\", password: \"from-file\" }, bucket: { accessKey: \"AK\", secretKey: \"SK\" } }"
            .write(toFile: file, atomically: true, encoding: .utf8)
        chmod(file, 0o644)
        let open = CredentialStore(path: file, environment: [:])
        #expect(throws: CredentialStore.CredentialError.self) { try open.credential("client") }
        #expect(open.problem?.contains("chmod 600") == true)
        chmod(file, 0o600)
        try FileManager.default.createDirectory(atPath: dir + "/creds", withIntermediateDirectories: true)
        try "{ password: \"from-systemd\" }".write(toFile: dir + "/creds/client", atomically: true, encoding: .utf8)
        let store = CredentialStore(path: file, environment: ["CREDENTIALS_DIRECTORY": dir + "/creds"])
        #expect(try store.credential("client").password == "from-systemd")
        #expect(try store.credential("bucket").secretKey == "SK")
        #expect(throws: CredentialStore.CredentialError.self) { try store.credential("nobody") }
        #expect(CredentialStore(path: dir + "/missing.json5", environment: [:]).problem == nil)
    }

    @Test func aPlanNamesTheFilesByBatchAndMakesOneZip() throws {
        let dir = try TemporaryFolder.make("plan")
        let batch = dir + "/out/b1"
        try FileManager.default.createDirectory(atPath: batch + "/thumbs", withIntermediateDirectories: true)
        for (name, text) in [("a.jpg", "AAAA"), ("b.jpg", "BB"), ("report.json", "{}"), ("report.html", "<p>"), ("thumbs/a.jpg", "t")] {
            try text.write(toFile: batch + "/" + name, atomically: true, encoding: .utf8)
        }
        let parts = [DeliveryPlan.Part("a.jpg"), .init("b.jpg"), .init("report.json", isReport: true),
                     .init("report.html", isReport: true), .init("thumbs/a.jpg", isReport: true)]
        var settings = DestinationSettings(name: "c", destination: try Destination.parse("file:///srv/x/"))
        let outputs = try DeliveryPlan.make(batch: "b1", inbox: "shop", batchFolder: batch, parts: parts, settings: settings, folder: dir + "/d")
        #expect(outputs.files.map(\.name) == ["b1/a.jpg", "b1/b.jpg"])
        #expect(outputs.files[0].sha256 == SHA256.hex(of: Array("AAAA".utf8)) && outputs.files[0].bytes == 4)
        settings.what = .outputsAndReport
        let all = try DeliveryPlan.make(batch: "b1", inbox: "shop", batchFolder: batch, parts: parts, settings: settings, folder: dir + "/d")
        #expect(all.files.map(\.name) == ["b1/a.jpg", "b1/b.jpg", "b1/report.json", "b1/report.html", "b1/thumbs/a.jpg"])
        #expect(all.files[2].local == dir + "/d/report/report.json", "the report sent is the copy made when the batch finished")
        settings.what = .zip
        settings.when = .approved
        let zip = try DeliveryPlan.make(batch: "b1", inbox: "shop", batchFolder: batch, parts: parts, settings: settings, folder: dir + "/d")
        #expect(zip.files.map(\.name) == ["b1.zip"] && zip.phase == .awaitingApproval)
        let listing = try #require(try? String(contentsOfFile: dir + "/d/b1.zip", encoding: .isoLatin1))
        #expect(listing.contains("b1/thumbs/a.jpg") && listing.contains("b1/report.json"))
        #expect(zip.token.count == 8 && zip.token != all.token)
    }

    @Test func anS3ETagIsTheMD5OfASinglePartUploadOnly() throws {
        #expect(Courier.singlePartETag("\"9E107D9D372BB6826BD81D3542A419D6\"") == "9e107d9d372bb6826bd81d3542a419d6")
        #expect(Courier.singlePartETag("9e107d9d372bb6826bd81d3542a419d6") == "9e107d9d372bb6826bd81d3542a419d6")
        #expect(Courier.singlePartETag("\"9e107d9d372bb6826bd81d3542a419d6-3\"") == nil)
        #expect(Courier.singlePartETag(nil) == nil && Courier.singlePartETag("\"\"") == nil)
        let file = try TemporaryFolder.make("md5") + "/fox.txt"
        try Data("The quick brown fox jumps over the lazy dog".utf8).write(to: URL(fileURLWithPath: file))
        #expect(try MD5.hex(ofFile: file) == "9e107d9d372bb6826bd81d3542a419d6")
    }
}
