import Foundation
import Service
import Testing

/// `photofinish check`: the config, its inboxes' templates and the templates named.
@Suite struct ConfigurationCheckTests {
    @Test func theConfigIsCheckedThenItsTemplates() throws {
        let folder = CheckTestFolder()
        let configPath = try folder.write("photofinish.json5", """
            { templatesDir: "templates",
              inboxes: [ { name: "shop", root: "/srv/shop", template: "shop" },
                         { name: "web", root: "/srv/web", template: "web" } ] }
            """)
        try folder.write("templates/shop.json5", "{ version: 1 }")
        let errors = ConfigurationCheck.check(configPath: configPath, templates: [])
        #expect(errors.count == 1)
        #expect(errors.first?.line == 3)
        #expect(errors.first?.keyPath == "inboxes[1].template")
        #expect(errors.first?.message.contains(folder.path + "/templates/web.json5 does not exist") == true)

        try folder.write("templates/web.json5", "{ version: 1, resize: { longSide: 0 } }")
        // Now the config is fine, and the check goes on into its templates.
        let templateErrors = ConfigurationCheck.check(configPath: configPath, templates: ["shop"])
        #expect(templateErrors.map(\.description) == [
            folder.path + "/templates/web.json5:1: resize.longSide: must be a whole number between 1 and 65535, got 0",
        ])
    }
}

/// A temporary folder for one test, removed afterwards.
final class CheckTestFolder {
    let path = TemporaryFolder.path("check-tests")

    deinit {
        try? FileManager.default.removeItem(atPath: path)  // best effort: it is only a temp folder
    }

    @discardableResult
    func write(_ name: String, _ text: String) throws -> String {
        let file = (path as NSString).appendingPathComponent(name)
        try FileManager.default.createDirectory(atPath: (file as NSString).deletingLastPathComponent,
                                                withIntermediateDirectories: true)
        try Data(text.utf8).write(to: URL(fileURLWithPath: file))
        return file
    }
}
