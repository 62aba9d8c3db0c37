import Batches
import Finishing
import Foundation

/// `photofinish demo [DIR] [--template F]`: makes sample photos in DIR/photos and finishes
/// them as one batch into DIR/out, so a new user sees a result within a minute.
/// `photofinish demo --drop ROOT`: only drops the sample photos into the hot folder ROOT's
/// `drop/` (for a `watch` or a daemon to finish).
enum DemoCommand {
    static func main(_ a: Arguments) async throws(UsageError) -> Int32 {
        if let root = a[.drop] {
            do {
                let paths = try SamplePhotos.write(into: root + "/drop")
                Terminal.note("dropped \(paths.count) sample files into \(root)/drop/ (broken.jpg fails on purpose; "
                              + "IMG_0001.dng, IMG_0001.xmp and notes.txt are filed with the photos)")
                return 0
            } catch {
                Terminal.error("cannot write sample photos into \(root)/drop: \(error)")
                return 2
            }
        }
        let dir = a.positional.first ?? "demo"
        // The built-in template, with the batch's own outputs: the story (made without the
        // photo that fails on purpose) and the colour card.
        var template = Template.builtInDefault
        template.stitch = Template.Stitch()
        template.colorCard = true
        if let path = a[.template] {
            do {
                template = try TemplateLoader.load(path: path)
            } catch {
                for e in error.errors { Terminal.note(e.description) }
                return 2
            }
        }
        let photos = dir + "/photos"
        Terminal.note("making sample photos in \(photos)/ …")
        let paths: [String]
        do {
            paths = try SamplePhotos.write(into: photos)
        } catch {
            Terminal.error("cannot write sample photos: \(error)")
            return 2
        }
        Terminal.note("finishing them with the template '\(template.name)' (broken.jpg fails on purpose) …")
        // broken.jpg fails on purpose; anything else failing is a real failure.
        return await RunCommand.execute(template: template, paths: paths, outRoot: dir + "/out", limits: BatchLimits()) {
            let failed = $0.items.filter { $0.status != .ok }.map(\.source)
            return failed == SamplePhotos.demoSet.filter(\.truncated).map(\.name) ? 0 : 1
        }
    }
}
