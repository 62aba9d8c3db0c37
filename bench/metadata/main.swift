// The metadata template's own cost (reference: Metadata templates), measured apart from any
// photo: reading a codes file of N lines (once a template load), and filling one photo's texts
// — variables, then codes — as `Template.filled(with:)` does for each photo. Built by
// bench/metadata/run.sh with CodeReplacements.swift and Variables.swift.
import Foundation

let lines = CommandLine.arguments.count > 1 ? Int(CommandLine.arguments[1]) ?? 2000 : 2000
let photos = CommandLine.arguments.count > 2 ? Int(CommandLine.arguments[2]) ?? 20000 : 20000

// A roster: team-and-jersey codes with three forms each, as a sports desk keeps one.
var text = "// a roster\n"
for i in 0..<lines { text += "P\(i)\tPlayer Number \(i) Lovelace-Öhman\tÖhman \(i)\t#\(i % 99) (Choo-Choos)\n" }

func seconds(_ body: () -> Void) -> Double {
    let start = DispatchTime.now().uptimeNanoseconds
    body()
    return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
}

var codes: CodeReplacements?
var best = Double.infinity
for _ in 0..<20 {
    best = min(best, seconds { codes = try? CodeReplacements(file: "roster.tsv", text: text) })
}
guard let codes, codes.count == lines else { fatalError("the roster did not read") }
print(String(format: "read a codes file of %d lines (%d KiB): %.2f ms (best of 20)", lines, text.utf8.count / 1024, best * 1000))

// One photo's texts: a title, a caption with three codes, five keywords, a creator made from the
// uploader, copyright, usage terms, city, country, event — every code found in the roster.
let texts = ["={hotFolder}= — {date}", "=P7= passes to =P1999#2= as =P1000#3= looks on, {date}, {camera}",
             "basketball", "=P7#2=", "=P1999#2=", "=P1000#2=", "{camera}", "={uploader}=", "© {year} Sports Desk",
             "Editorial use only", "Chattanooga", "USA", "={hotFolder}="]
var written = 0
var facts = PhotoFacts(filename: "IMG_0001.jpg", batch: "20261205-101010-abcd", index: 1, count: photos)
facts.captured = "2026:04:12 19:30:00"
facts.make = "Canon"
facts.model = "Canon EOS R5"
facts.hotFolder = "P42"
facts.uploader = "P12"
var perPhoto = Double.infinity
for _ in 0..<5 {
    let time = seconds {
        for index in 1...photos {
            facts.index = index
            let values = facts.values
            for text in texts {
                let (out, unknown) = CodeReplacements.replace(in: text, with: codes) { Variables.render(String($0), values).text }
                written &+= out.utf8.count + unknown.count
            }
        }
    }
    perPhoto = min(perPhoto, time / Double(photos))
}
print(String(format: "fill one photo's %d texts (variables and codes) with it: %.1f µs a photo (best of 5 runs of %d photos; %d bytes)",
             texts.count, perPhoto * 1e6, photos, written / 5))
