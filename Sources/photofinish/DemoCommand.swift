import Batches
import Finishing
import Foundation

/// `photofinish demo [DIR] [--template F]`: makes sample photos in DIR/photos and finishes
/// them as one batch into DIR/out, so a new user sees a result within a minute.
enum DemoCommand {
    static func main(_ args: [String]) async throws(UsageError) -> Int32 {
        let a = try Arguments(args, valued: ["template"])
        let dir = a.positional.first ?? "demo"
        var template = Template.builtInDefault
        if let path = a.options["template"] {
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
        let code = await RunCommand.execute(template: template, paths: paths, outRoot: dir + "/out", limits: BatchLimits())
        return code == 1 ? 0 : code
    }
}
