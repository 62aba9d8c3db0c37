import Batches
import Delivery
import Foundation
import HotFolders
import Testing
@testable import Service

/// A `when: "approved"` delivery: planned empty while the batch waits, then with the approved
/// photos alone (every output of each, no story), carried to a folder destination.
@Suite struct ApprovedDeliveryTests {
    func report(batch: String) -> String {
        func item(_ n: Int, _ status: String = "ok") -> String {
            let outputs = status == "ok" ? """
                , "outputs": [ { "file": "IMG_\(n).jpg", "size": [20, 10], "bytes": 3, "applied": { "decodeScale": "1/1", "crop": null, "resizedTo": [20, 10], "icc": null, "removed": [] } },
                               { "file": "IMG_\(n)-1x1.jpg", "size": [10, 10], "bytes": 3, "applied": { "decodeScale": "1/1", "crop": null, "resizedTo": [10, 10], "icc": null, "removed": [] } } ]
                """ : #", "error": { "code": "corrupt-image", "message": "cut" }"#
            return #"{ "index": \#(n), "source": "IMG_\#(n).JPG", "status": "\#(status)"\#(outputs) }"#
        }
        return """
            { "schema": 1, "batch": "\(batch)", "inbox": "shop", "template": { "name": "t", "sha256": "x" },
              "started": "2026-11-29T15:04:05.000Z", "finished": "2026-11-29T15:04:09.000Z", "status": "partial",
              "counts": { "items": 4, "ok": 3, "failed": 1, "skippedOutputs": 0 },
              "items": [ \(item(1)), \(item(2)), \(item(3)), \(item(4, "failed")) ],
              "outputs": [ { "file": "\(batch)-story-1-of-1.jpg", "size": [20, 40], "items": [1, 2, 3] } ] }
            """
    }

    @Test func theApprovedPhotosAloneAreDelivered() throws {
        let dir = try TemporaryFolder.make("approved-delivery")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let layout = HotFolderLayout(root: dir + "/shop")
        try layout.create()
        let batch = "20261129-150405-3f2a"
        let folder = layout.out + "/" + batch
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        for n in 1...3 { for suffix in ["", "-1x1"] { try Data("p\(n)".utf8).write(to: URL(fileURLWithPath: "\(folder)/IMG_\(n)\(suffix).jpg")) } }
        try Data("story".utf8).write(to: URL(fileURLWithPath: "\(folder)/\(batch)-story-1-of-1.jpg"))
        try Data(report(batch: batch).utf8).write(to: URL(fileURLWithPath: folder + "/report.json"))
        try FileManager.default.createDirectory(atPath: dir + "/client", withIntermediateDirectories: true)
        var destination = DestinationSettings(name: "client", destination: try Destination.parse("file://\(dir)/client/"))
        destination.when = .approved
        var zipped = DestinationSettings(name: "archive", destination: try Destination.parse("file://\(dir)/client/"))
        zipped.when = .approved
        zipped.what = .zip

        // Before the approval: waiting, nothing planned to send.
        var report = try #require(try ReportReader.read(batchFolder: folder))
        let waiting = try DeliveryReceipts.plan(report, layout: layout, destination: destination, inbox: "shop", approvalAsked: true)
        #expect(waiting.phase == .awaitingApproval && waiting.files.isEmpty)
        // A hot folder that asks for no approval: every photo and the story, at once.
        let open = try DeliveryReceipts.plan(report, layout: layout, destination: destination, inbox: "shop", approvalAsked: false)
        #expect(open.phase == .pending && open.files.count == 7)

        report.approval = .init(by: "client", at: "2026-11-29T16:00:00.000Z", approved: ["IMG_1.jpg", "IMG_3.jpg"],
                                rejected: ["IMG_2.jpg"], note: nil)
        let approved = try DeliveryReceipts.plan(report, layout: layout, destination: destination, inbox: "shop", approvalAsked: true)
        #expect(approved.phase == .pending)
        #expect(approved.files.map(\.name).sorted() == ["\(batch)/IMG_1-1x1.jpg", "\(batch)/IMG_1.jpg", "\(batch)/IMG_3-1x1.jpg", "\(batch)/IMG_3.jpg"])
        let path = DeliveryReceipts.folder(layout, batch: batch) + "/client.json"
        try DeliveryRun.write(approved, to: path)
        guard case .ran(let done, _) = DeliveryRun.attempt(path, context: .init(settings: destination, credentialsFile: "/nonexistent")) else {
            Issue.record("the delivery did not run")
            return
        }
        #expect(done.phase == .delivered)
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir + "/client/" + batch).sorted()
                == ["IMG_1-1x1.jpg", "IMG_1.jpg", "IMG_3-1x1.jpg", "IMG_3.jpg"])

        // The ZIP of the approved set holds those four alone, and the report (as every ZIP does).
        let zip = try DeliveryReceipts.plan(report, layout: layout, destination: zipped, inbox: "shop", approvalAsked: true)
        let made = DeliveryReceipts.folder(layout, batch: batch) + "/" + DeliveryReceipts.approvedFolder + "/\(batch).zip"
        #expect(zip.files.map(\.name) == ["\(batch).zip"] && FileManager.default.fileExists(atPath: made))
        // Listed with Python's zipfile (python3 is installed wherever the tests run).
        let listing = try Harness.exec("/usr/bin/python3", ["-c", "import sys, zipfile\nfor i in zipfile.ZipFile(sys.argv[1]).infolist(): print(i.filename)", made])
        #expect(listing.split(separator: "\n").map(String.init).sorted()
                == ["\(batch)/IMG_1-1x1.jpg", "\(batch)/IMG_1.jpg", "\(batch)/IMG_3-1x1.jpg", "\(batch)/IMG_3.jpg", "\(batch)/report.json"])
    }
}

private enum Harness {
    static func exec(_ program: String, _ arguments: [String]) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: program)
        process.arguments = arguments
        let out = Pipe()
        process.standardOutput = out
        try process.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: data, as: UTF8.self)
    }
}
