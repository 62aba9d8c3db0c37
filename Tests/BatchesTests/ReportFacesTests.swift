import Foundation
import Testing
@testable import Batches
@testable import Finishing

/// The item's `faces`: written as `[x, y, w, h]` boxes, `[]` when the detector found none,
/// left out when no face was looked for; `report.html` draws them beside the crop boxes.
@Suite struct ReportFacesTests {
    static func report(faces: [[Int]]?) -> Report {
        var item = Report.Item(index: 1, source: "group.jpg", status: .ok)
        item.size = [1280, 886]
        item.thumbnail = "thumbs/group.jpg"
        item.faces = faces
        item.outputs = [.init(file: "group-4x5.jpg", size: [864, 1080], bytes: 1000, variant: nil,
                              applied: .init(decodeScale: "1/1", crop: .init(ratio: "4:5", box: [0, 0, 709, 886], focus: "faces"),
                                             resizedTo: .init(864, 1080), removed: []))]
        return Report(batch: "b", inbox: nil, template: .init(name: "t", sha256: ""), started: "", finished: "", items: [item])
    }

    @Test func facesInTheJSON() throws {
        let json = ReportWriter.json(Self.report(faces: [[58, 286, 117, 116], [261, 172, 116, 116]]))
        #expect(json.contains("\"faces\": [\n        [58, 286, 117, 116],\n        [261, 172, 116, 116]\n      ],"), "\(json)")
        #expect(json.contains("\"focus\": \"faces\""))
        let back = try JSONDecoder().decode(Report.self, from: Data(json.utf8))
        #expect(back.items[0].faces == [[58, 286, 117, 116], [261, 172, 116, 116]])
        #expect(ReportWriter.json(Self.report(faces: [])).contains("\"faces\": []"))
        #expect(!ReportWriter.json(Self.report(faces: nil)).contains("\"faces\":"))
    }

    @Test func facesOnTheThumbnail() {
        let html = ReportHTML.render(Self.report(faces: [[58, 286, 117, 116], [261, 172, 116, 116]]))
        #expect(html.components(separatedBy: "<g class=\"face\">").count == 3, "\(html)")
        #expect(html.contains("<title>face · 58, 286, 117 × 116</title>"))
        #expect(html.contains("x=\"261\" y=\"172\" width=\"116\" height=\"116\" class=\"face\""))
        #expect(html.contains("placed on the faces"))
        #expect(!ReportHTML.render(Self.report(faces: nil)).contains("class=\"face\""))
    }
}
