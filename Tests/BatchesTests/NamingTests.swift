@testable import Batches
@testable import Finishing
import Foundation
import Testing

@Suite struct NamingTests {
    @Test func naturalOrderPutsTwoBeforeTen() {
        let names = ["IMG_10.jpg", "IMG_2.jpg", "img_1.jpg", "IMG_0003.jpg", "b.jpg", "a10b2.png", "a10b10.png", "a9.png"]
        #expect(names.sorted(by: NaturalOrder.less)
                == ["a9.png", "a10b2.png", "a10b10.png", "b.jpg", "img_1.jpg", "IMG_2.jpg", "IMG_0003.jpg", "IMG_10.jpg"])
        #expect(NaturalOrder.less("IMG_2", "IMG_10"))
        #expect(!NaturalOrder.less("IMG_10", "IMG_2"))
    }

    @Test func batchIDsHaveTheSpecShape() {
        let date = Date(timeIntervalSince1970: 1_795_964_645.123)  // 2026-11-29T15:04:05.123Z
        let id = BatchID.make(at: date)
        #expect(id.hasPrefix("20261129-150405-"))
        #expect(BatchID.isValid(id))
        #expect(!BatchID.isValid("20261129-150405-XYZW"))
        #expect(BatchID.timestamp(date) == "2026-11-29T15:04:05.123Z")
        let many = Set((0..<50).map { _ in BatchID.make(at: date) })
        #expect(many.count > 40)
    }

    @Test func outputNamesAreUniqueAndShareSafe() {
        #expect(OutputName.file(pattern: nil, suffix: "-web", values: ["stem": "IMG_1"], variant: nil, crop: "4:5",
                                extension: "jpg") == "IMG_1-web-4x5.jpg")
        #expect(OutputName.file(pattern: nil, suffix: "", values: ["stem": "IMG_1"], variant: nil, crop: nil,
                                extension: "png") == "IMG_1.png")
        #expect(OutputName.file(pattern: nil, suffix: "", values: ["stem": "IMG_1"], variant: "thumb", crop: "1:1",
                                extension: "png") == "IMG_1-thumb-1x1.png")
        #expect(OutputNames.uniqueStems(["IMG_1.jpg", "IMG_1.png", "img_1.heic", ".hidden", "noext"])
                == ["IMG_1", "IMG_1-2", "img_1-3", ".hidden", "noext"])
    }

    @Test(arguments: [".DS_Store", "._IMG_1.jpg", "~$doc.jpg", "x.jpg.part", "y.partial", "z.TMP", "a.crdownload",
                      "b.download", ".c.swp", "d.swp", "Thumbs.db", "desktop.ini"])
    func ignoredNames(_ name: String) {
        #expect(IgnoreRules.ignores(name))
    }

    @Test(arguments: ["IMG_1.jpg", "photo.part.jpg", "Thumbs.db.jpg", "partial.png"])
    func takenNames(_ name: String) {
        #expect(!IgnoreRules.ignores(name))
    }
}

@Suite struct ReportJSONTests {
    func sampleReport() -> Report {
        var ok = Report.Item(index: 1, source: "IMG_0001.HEIC", status: .ok)
        ok.bytes = 2_400_000
        ok.sha256 = String(repeating: "a", count: 64)
        ok.format = "heic"
        ok.size = [3024, 4032]
        ok.orientation = 6
        ok.ms = 412
        ok.host = "studio-2"
        ok.outputs = [.init(file: "IMG_0001.jpg", size: [1536, 2048], bytes: 512_000,
                            applied: .init(decodeScale: "1/1", crop: nil, resizedTo: .init(1536, 2048),
                                           icc: "Display P3 (kept)", removed: ["GPS"]))]
        ok.skipped = [.init(ratio: "16:9", cut: 0.578, reason: "too much cut")]
        ok.original = "originals/b/IMG_0001.HEIC"
        var bad = Report.Item(index: 2, source: "broken \"quoted\".jpg", status: .failed)
        bad.error = .init(code: "corrupt-image", message: "JPEG data ends early at byte 40960")
        return Report(batch: "20261129-150405-3f2a", inbox: nil, template: .init(name: "shop", sha256: "abc"),
                      started: "2026-11-29T15:04:05.123Z", finished: "2026-11-29T15:04:06.000Z", items: [ok, bad])
    }

    @Test func statusAndCountsFollowTheItems() {
        let r = sampleReport()
        #expect(r.status == .partial)
        #expect(r.counts == .init(items: 2, ok: 1, failed: 1, skippedOutputs: 1))
        let allBad = Report(batch: "b", inbox: nil, template: .init(name: "t", sha256: ""), started: "", finished: "",
                            items: [r.items[1]])
        #expect(allBad.status == .failed)
    }

    @Test func writtenInSpecOrderAndReadBack() throws {
        let text = ReportWriter.json(sampleReport())
        let keys = ["\"schema\"", "\"batch\"", "\"inbox\"", "\"template\"", "\"started\"", "\"finished\"", "\"status\"",
                    "\"counts\"", "\"items\"", "\"outputs\""]
        let positions = keys.map { text.range(of: $0)!.lowerBound }
        #expect(positions == positions.sorted())
        #expect(text.contains("\"crop\": null"))
        #expect(text.contains("\"size\": [3024, 4032]"))
        let back = try JSONDecoder().decode(Report.self, from: Data(text.utf8))
        #expect(back.items.count == 2)
        #expect(back.items[1].source == "broken \"quoted\".jpg")
        #expect(back.items[1].error?.message == "JPEG data ends early at byte 40960")
        #expect(back.items[0].outputs?[0].applied == sampleReport().items[0].outputs?[0].applied)
        #expect(back.status == .partial)
        // Valid JSON for any reader, not just ours.
        let any = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any]
        #expect(any?["schema"] as? Int == 1)
    }

    /// Every kind of field, present and absent, against the exact text: the report's bytes
    /// (field order, nulls, left-out keys, number forms, escapes) do not change by accident.
    @Test func everyFieldInItsExactForm() throws {
        var ok = sampleReport().items[0]
        ok.outputs = [
            .init(file: "IMG_0001.jpg", size: [1636, 2148], bytes: 512_000,
                  applied: .init(decodeScale: "1/2", crop: nil, resizedTo: .init(1536, 2048), frame: 50,
                                 text: .init(capHeightPx: 54, box: [1118, 1948, 372, 54], text: "© Example Studio", clamped: false),
                                 logo: .init(box: [61, 82, 246, 123], scale: 0.49),
                                 tile: .init(capHeightPx: 20, angle: -30, step: [300, 80], opacity: 0.25, clamped: true),
                                 icc: "Display P3 (kept)", removed: ["GPS"])),
            .init(file: "IMG_0001-4x5.jpg", size: [1200, 1500], bytes: 300_000,
                  applied: .init(decodeScale: "1/1", crop: .init(ratio: "4:5", box: [0, 62, 1500, 1875]),
                                 resizedTo: .init(1200, 1500),
                                 text: .init(capHeightPx: 9, box: [1, 2, 3, 4], text: "IMG_0001", clamped: true),
                                 tile: .init(capHeightPx: 20, angle: 12.5, step: [300, 80], opacity: 0.3, clamped: false),
                                 icc: nil, removed: [])),
        ]
        ok.warnings = ["logo scaled up 1.8×"]
        ok.color = "#5a7d9a"
        ok.thumbnail = "thumbs/IMG_0001.jpg"
        var second = Report.Item(index: 2, source: "b.png", status: .ok)
        second.outputs = []
        second.skipped = []
        second.warnings = []
        var bad = Report.Item(index: 3, source: "broken \"quoted\"\n\t\u{1}.jpg", status: .failed)
        bad.error = .init(code: "corrupt-image", message: "JPEG data ends early at byte 40960")
        bad.ms = 3
        bad.host = "studio-1"
        bad.original = "failed/b/broken.jpg"
        let stopped = Report.Item(index: 4, source: "c.jpg", status: .interrupted)
        var r = Report(batch: "20261129-150405-3f2a", inbox: "shop", template: .init(name: "shop", sha256: "abc"),
                       started: "2026-11-29T15:04:05.123Z", finished: "2026-11-29T15:04:06.000Z",
                       items: [ok, second, bad, stopped],
                       outputs: [.init(file: "s-story-1-of-1.jpg", size: [1080, 3000], items: [1, 2]),
                                 .init(file: "card.png", size: [1200, 800], items: nil)])
        r.warnings = ["a story warning"]
        #expect(ReportWriter.json(r) == Self.golden)
        // Read back (the daemon's journal, `photofinish report`) and written again: the same text.
        let back = try JSONDecoder().decode(Report.self, from: Data(Self.golden.utf8))
        #expect(ReportWriter.json(back) == Self.golden)
        var empty = Report(batch: "b", inbox: nil, template: .init(name: "t", sha256: ""), started: "", finished: "",
                           items: [])
        empty.warnings = []
        #expect(ReportWriter.json(empty) == Self.goldenEmpty)
    }

    static let golden = #"""
{
  "schema": 1,
  "batch": "20261129-150405-3f2a",
  "inbox": "shop",
  "template": {
    "name": "shop",
    "sha256": "abc"
  },
  "started": "2026-11-29T15:04:05.123Z",
  "finished": "2026-11-29T15:04:06.000Z",
  "status": "interrupted",
  "counts": {
    "items": 4,
    "ok": 2,
    "failed": 1,
    "skippedOutputs": 1
  },
  "items": [
    {
      "index": 1,
      "source": "IMG_0001.HEIC",
      "bytes": 2400000,
      "sha256": "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
      "format": "heic",
      "size": [3024, 4032],
      "orientation": 6,
      "status": "ok",
      "ms": 412,
      "host": "studio-2",
      "outputs": [
        {
          "file": "IMG_0001.jpg",
          "size": [1636, 2148],
          "bytes": 512000,
          "applied": {
            "decodeScale": "1/2",
            "crop": null,
            "resizedTo": [1536, 2048],
            "frame": 50,
            "text": {
              "capHeightPx": 54,
              "box": [1118, 1948, 372, 54],
              "text": "© Example Studio"
            },
            "logo": {
              "box": [61, 82, 246, 123],
              "scale": 0.49
            },
            "tile": {
              "capHeightPx": 20,
              "angle": -30,
              "step": [300, 80],
              "opacity": 0.25,
              "clamped": true
            },
            "icc": "Display P3 (kept)",
            "removed": [
              "GPS"
            ]
          }
        },
        {
          "file": "IMG_0001-4x5.jpg",
          "size": [1200, 1500],
          "bytes": 300000,
          "applied": {
            "decodeScale": "1/1",
            "crop": {
              "ratio": "4:5",
              "box": [0, 62, 1500, 1875]
            },
            "resizedTo": [1200, 1500],
            "text": {
              "capHeightPx": 9,
              "box": [1, 2, 3, 4],
              "text": "IMG_0001",
              "clamped": true
            },
            "tile": {
              "capHeightPx": 20,
              "angle": 12.5,
              "step": [300, 80],
              "opacity": 0.3
            },
            "icc": null,
            "removed": []
          }
        }
      ],
      "skipped": [
        {
          "ratio": "16:9",
          "cut": 0.578,
          "reason": "too much cut"
        }
      ],
      "warnings": [
        "logo scaled up 1.8×"
      ],
      "color": "#5a7d9a",
      "thumbnail": "thumbs/IMG_0001.jpg",
      "original": "originals/b/IMG_0001.HEIC"
    },
    {
      "index": 2,
      "source": "b.png",
      "status": "ok",
      "outputs": []
    },
    {
      "index": 3,
      "source": "broken \"quoted\"\n\t\u0001.jpg",
      "status": "failed",
      "ms": 3,
      "host": "studio-1",
      "error": {
        "code": "corrupt-image",
        "message": "JPEG data ends early at byte 40960"
      },
      "original": "failed/b/broken.jpg"
    },
    {
      "index": 4,
      "source": "c.jpg",
      "status": "interrupted"
    }
  ],
  "outputs": [
    {
      "file": "s-story-1-of-1.jpg",
      "size": [1080, 3000],
      "items": [1, 2]
    },
    {
      "file": "card.png",
      "size": [1200, 800]
    }
  ],
  "warnings": [
    "a story warning"
  ]
}

"""#

    static let goldenEmpty = #"""
{
  "schema": 1,
  "batch": "b",
  "inbox": null,
  "template": {
    "name": "t",
    "sha256": ""
  },
  "started": "",
  "finished": "",
  "status": "complete",
  "counts": {
    "items": 0,
    "ok": 0,
    "failed": 0,
    "skippedOutputs": 0
  },
  "items": [],
  "outputs": []
}

"""#
}
