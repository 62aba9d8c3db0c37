import Configuration
import Foundation
import JSON5
import Testing

/// Parses `text` as a config, returning the errors (empty when valid).
func configTestErrors(_ text: String) -> [JSON5Error] {
    do throws(JSON5Errors) {
        _ = try Config.parse(text: text, file: "pf.json5")
        return []
    } catch {
        return error.errors
    }
}

/// The checked-in example config, found from this file's place in the repository.
let exampleConfigPath = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    .appendingPathComponent("etc/photofinish/photofinish.json5").path

@Suite struct ConfigTests {
    @Test func exampleConfig() throws {
        let config = try Config.parse(
            text: String(contentsOfFile: exampleConfigPath, encoding: .utf8), file: "pf.json5")
        #expect(config.templatesDir == "/etc/photofinish/templates")
        #expect(config.inboxes == [Config.Inbox(name: "shop", root: "/srv/photofinish/shop", template: "shop")])
        var expected = Config.defaults
        expected.inboxes = config.inboxes
        #expect(config == expected)
        #expect(config.templatePath(named: "shop") == "/etc/photofinish/templates/shop.json5")
    }

    /// What `photofinish init` reads: the templates folder (relative to the config's) and the
    /// hot folders' names, roots and templates, whatever else the config holds; nil when the
    /// text cannot be read so (the full load says why).
    @Test func theOutlineIsWhatInitNeeds() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("pf-outline-\(getpid())").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }  // best effort: a temp folder
        let path = dir + "/photofinish.json5"
        try "\u{FEFF}{ templatesDir: 'templates', settle: '2s', inboxes: [ { name: 'shop', root: '/srv/shop', template: 'shop', keep: { out: '30d' } }, ], }"
            .write(toFile: path, atomically: true, encoding: .utf8)
        let outline = try #require(Config.outline(path: path))
        #expect(outline.templatesDir == dir + "/templates")
        #expect(outline.inboxes == [Config.Inbox(name: "shop", root: "/srv/shop", template: "shop")])
        try "{ inboxes: [ { name: 'shop' } ] }".write(toFile: path, atomically: true, encoding: .utf8)
        #expect(Config.outline(path: path) == nil)
        try "{ inboxes: [ ".write(toFile: path, atomically: true, encoding: .utf8)
        #expect(Config.outline(path: path) == nil)
    }

    @Test func defaultsAreTheSpecs() {
        let d = Config.defaults
        #expect(d.settle == .seconds(2) && d.quiet == .seconds(5) && d.maxWait == .seconds(120))
        #expect(d.maxBatch == 500 && d.workers == 0 && d.memoryBudget == .auto)
        #expect(d.rescanInterval == .seconds(300) && d.staleAfter == .seconds(86_400) && d.pollInterval == .seconds(2))
        #expect(d.maxPixels == 150_000_000 && d.maxFileBytes == 536_870_912 && d.itemTimeout == .seconds(120))
    }

    @Test func valuesAreRead() throws {
        let config = try Config.parse(text: """
            { settle: "500ms", quiet: "1.5s", maxWait: "2m", staleAfter: "7d", workers: 3, pollInterval: "750ms",
              memoryBudget: "2GiB", maxFileBytes: 1000000, maxPixels: 1000, maxBatch: 10, itemTimeout: "1h" }
            """, file: "pf.json5")
        #expect(config.settle == .milliseconds(500))
        #expect(config.pollInterval == .milliseconds(750))
        #expect(config.quiet == .milliseconds(1500))
        #expect(config.maxWait == .seconds(120))
        #expect(config.staleAfter == .seconds(7 * 86_400))
        #expect(config.workers == 3)
        #expect(config.memoryBudget == .bytes(2 << 30))
        #expect(config.maxFileBytes == 1_000_000)
        #expect(config.itemTimeout == .seconds(3600))
    }

    @Test(arguments: [
        ("500ms", Duration.milliseconds(500)), ("2s", .seconds(2)), ("5m", .seconds(300)),
        ("24h", .seconds(86_400)), ("1.5s", .milliseconds(1500)), (".5s", .milliseconds(500)),
    ])
    func durations(text: String, duration: Duration) {
        #expect(Config.parseDuration(text) == duration)
    }

    @Test(arguments: ["", "2", "2 s", "-2s", "2sec", "s", "1e3s", "1..2s", "9999d"])
    func badDurations(text: String) {
        #expect(Config.parseDuration(text) == nil)
    }

    @Test(arguments: [
        ("512KiB", 524_288), ("1GiB", 1_073_741_824), ("3MiB", 3_145_728), ("20MB", 20_000_000),
        ("1kB", 1000), ("4096", 4096), ("100B", 100), ("1.5KiB", 1536), ("2 MiB", 2_097_152),
    ])
    func sizes(text: String, bytes: Int) {
        #expect(Config.parseSize(text) == bytes)
    }

    @Test(arguments: ["", "1.5B", "12XB", "-1KiB", "1 GB GB", "KiB", "1e6"])
    func badSizes(text: String) {
        #expect(Config.parseSize(text) == nil)
    }

    @Test func errorsNameFileLineAndKey() {
        let errors = configTestErrors("""
            {
              settle: 2,
              quiet: "5s",
              inboxes: [
                { name: "shop", root: "/srv/a", template: "shop" },
                { name: "shop", root: "relative", template: "../x" },
                { name: "web", root: "/srv/a/", template: "web", extra: 1 },
                { name: "print" },
              ],
              maxFileBytes: "lots",
              memoryBudget: "half",
              workers: -1,
              maxWiat: "10s",
            }
            """)
        let text = errors.map(\.description)
        #expect(text.contains("pf.json5:2: settle: must be a duration like \"500ms\", \"2s\", \"5m\" or \"24h\" (more than 0, at most a year), got 2"))
        #expect(text.contains("pf.json5:6: inboxes[1].name: \"shop\" is already the name of inboxes[0]: names must be unique"))
        #expect(text.contains("pf.json5:6: inboxes[1].root: must be an absolute path (starting with '/'), got \"relative\""))
        #expect(errors.contains { $0.keyPath == "inboxes[1].template" && $0.line == 6 })
        #expect(errors.contains { $0.keyPath == "inboxes[2].root" && $0.message.contains("already the root of inboxes[0]") })
        #expect(errors.contains { $0.keyPath == "inboxes[2].extra" && $0.line == 7 })
        #expect(errors.contains { $0.keyPath == "inboxes[3]" && $0.message.contains("missing key 'root'") && $0.line == 8 })
        #expect(errors.contains { $0.keyPath == "maxFileBytes" && $0.line == 10 })
        #expect(errors.contains { $0.keyPath == "memoryBudget" && $0.message.contains("or \"auto\"") })
        #expect(errors.contains { $0.keyPath == "workers" && $0.line == 12 })
        #expect(text.contains("pf.json5:13: maxWiat: unknown key 'maxWiat' (did you mean 'maxWait'?)"))
    }

    @Test func pollIntervalIsADurationLikeTheOthers() {
        #expect(configTestErrors("{ pollInterval: 2 }").first?.keyPath == "pollInterval")
        #expect(configTestErrors("{ pollInterval: \"0s\" }").first?.message.contains("more than 0") == true)
        #expect(configTestErrors("{ pollInterval: \"1s\" }").isEmpty)
    }

    @Test func quietLongerThanMaxWaitIsAnError() {
        #expect(configTestErrors("{ quiet: \"3m\" }").first?.keyPath == "quiet")
    }

    @Test func loadResolvesTemplatesDirAndChecksTemplatesExist() throws {
        let folder = TemporaryFolder.path("config-tests")
        try FileManager.default.createDirectory(atPath: folder + "/templates", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }  // best effort: a temp folder
        let configPath = folder + "/photofinish.json5"
        try Data("""
            { templatesDir: "templates",
              inboxes: [ { name: "shop", root: "/srv/shop", template: "shop" },
                         { name: "web", root: "/srv/web", template: "web" } ] }
            """.utf8).write(to: URL(fileURLWithPath: configPath))
        try Data("{ version: 1 }".utf8).write(to: URL(fileURLWithPath: folder + "/templates/shop.json5"))
        do throws(JSON5Errors) {
            _ = try Config.load(path: configPath)
            Issue.record("a missing template must be an error")
        } catch {
            #expect(error.errors.map(\.description) == [
                configPath + ":3: inboxes[1].template: no template 'web': " + folder + "/templates/web.json5 does not exist",
            ])
        }
        try Data("{ version: 1 }".utf8).write(to: URL(fileURLWithPath: folder + "/templates/web.json5"))
        #expect(try Config.load(path: configPath).templatesDir == folder + "/templates")
    }

    @Test func onBatchAndMetricsFileAreRead() throws {
        let config = try Config.parse(text: """
            {
              onBatch: { exec: ["/usr/local/bin/notify", "--batch={batch}", "{report}"], timeout: "10s",
                         webhook: { url: "https://example.org/hook", headers: { Authorization: "Bearer x" }, retries: 2 } },
              metricsFile: "/var/lib/prometheus/node-exporter/photofinish.prom",
              inboxes: [ { name: "a", root: "/srv/a", template: "t", onBatch: { webhook: { url: "http://h:8080/" } } },
                         { name: "b", root: "/srv/b", template: "t" } ],
            }
            """, file: "pf.json5")
        let hooks = try #require(config.onBatch)
        #expect(hooks.exec == ["/usr/local/bin/notify", "--batch={batch}", "{report}"])
        #expect(hooks.timeout == .seconds(10))
        #expect(hooks.webhook?.url == "https://example.org/hook")
        #expect(hooks.webhook?.headers == [BatchHooks.Header(name: "Authorization", value: "Bearer x")])
        #expect(hooks.webhook?.retries == 2 && hooks.webhook?.timeout == .seconds(10))
        #expect(hooks.arguments(["batch": "B", "report": "/r.json"]) == ["/usr/local/bin/notify", "--batch=B", "/r.json"])
        #expect(config.metricsFile == "/var/lib/prometheus/node-exporter/photofinish.prom")
        #expect(config.inboxes[0].onBatch?.webhook?.url == "http://h:8080/" && config.inboxes[0].onBatch?.exec == nil)
        #expect(config.inboxes[1].onBatch == nil)
    }

    @Test func badHooksAreNamed() {
        let errors = configTestErrors("""
            {
              onBatch: { exec: ["notify", "{report}"] },
              inboxes: [
                { name: "a", root: "/srv/a", template: "t", onBatch: { exec: ["/bin/x", "{reprot}"] } },
                { name: "b", root: "/srv/b", template: "t", onBatch: { webhook: { url: "ftp://x/" } } },
                { name: "c", root: "/srv/c", template: "t", onBatch: { } },
              ],
              metricsFile: "photofinish.txt",
            }
            """).map(\.description)
        #expect(errors == [
            "pf.json5:2: onBatch.exec[0]: must be the program's absolute path (no shell runs it; for one, use [\"/bin/sh\", \"-c\", \"…\"]), got \"notify\"",
            "pf.json5:4: inboxes[0].onBatch.exec[1]: unknown placeholder {reprot} (known: {report}, {batch}, {inbox}, {status}) (did you mean {report}?)",
            "pf.json5:5: inboxes[1].onBatch.webhook.url: must be an http:// or https:// URL with a host, got \"ftp://x/\"",
            "pf.json5:6: inboxes[2].onBatch: needs exec: [\"/path/to/program\", \"{report}\"] or webhook: { url: \"https://…\" } (or both)",
            "pf.json5:8: metricsFile: must be an absolute path ending in .prom (node_exporter's textfile collector reads *.prom), got \"photofinish.txt\"",
        ])
    }

    @Test func aTemplateGivenAsTheConfigIsNamedOnce() {
        #expect(configTestErrors("{ version: 1, resize: { longSide: 10 } }").map(\.description) == [
            "pf.json5: this is a template (it has 'version' and no 'inboxes'), not a config: check it with photofinish check pf.json5",
        ])
    }

    // MARK: - Retention and free space (SPEC §9)

    @Test func keepAndMinFreeSpaceAreGlobalAndPerInboxKeyByKey() throws {
        let config = try Config.parse(text: """
            { keep: { out: "30d", originals: "90d", failed: "180d" }, minFreeSpace: "2GiB",
              inboxes: [
                { name: "a", root: "/srv/a", template: "t" },
                { name: "b", root: "/srv/b", template: "t", keep: { out: "12h", failed: "forever" }, minFreeSpace: "500MB" },
                { name: "c", root: "/srv/c", template: "t", keep: { originals: "3650d" } },
              ] }
            """, file: "pf.json5")
        let day = Duration.seconds(86_400)
        #expect(config.keep == Config.Keep(out: .duration(day * 30), originals: .duration(day * 90), failed: .duration(day * 180)))
        #expect(config.minFreeSpace == 2 << 30)
        #expect(config.inboxes[0].keep == config.keep && config.inboxes[0].minFreeSpace == 2 << 30)
        #expect(config.inboxes[1].keep == Config.Keep(out: .duration(.seconds(43_200)), originals: .duration(day * 90), failed: .forever))
        #expect(config.inboxes[1].minFreeSpace == 500_000_000)
        #expect(config.inboxes[2].keep.originals == .duration(day * 3650) && config.inboxes[2].keep.out == .duration(day * 30))
        #expect(config.inboxes[1].keep.out.description == "12h" && config.keep.failed.description == "180d")
    }

    @Test func keepDefaultsToForever() throws {
        let config = try Config.parse(text: "{ inboxes: [ { name: \"a\", root: \"/srv/a\", template: \"t\" } ] }", file: "pf.json5")
        #expect(config.keep.isForever && config.inboxes[0].keep.isForever)
        #expect(config.minFreeSpace == nil && config.inboxes[0].minFreeSpace == nil)
        #expect(Config.defaults.keep == Config.Keep())
    }

    @Test func badKeepAndMinFreeSpaceAreNamedByFileLineAndKey() {
        let errors = configTestErrors("""
            {
              keep: { out: "30 days", originals: 90, trash: "1d" },
              minFreeSpace: "lots",
              inboxes: [
                { name: "a", root: "/srv/a", template: "t",
                  keep: { failed: "0s" }, minFreeSpace: -1 },
                { name: "b", root: "/srv/b", template: "t", keep: "30d" },
              ],
            }
            """).map(\.description)
        #expect(errors == [
            "pf.json5:2: keep.trash: unknown key 'trash' (allowed here: out, originals, failed)",
            "pf.json5:2: keep.out: must be \"forever\" or a duration like \"30d\", \"12h\" (how long out/<batch-id>/ folders are kept after their batch was claimed), got \"30 days\"",
            "pf.json5:2: keep.originals: must be \"forever\" or a duration like \"30d\", \"12h\" (how long originals/<batch-id>/ folders are kept after their batch was claimed), or \"until-delivered\" (until every destination of the batch has it), got 90",
            "pf.json5:3: minFreeSpace: must be a size like \"512KiB\", \"1GiB\", \"20MB\" or a number of bytes (more than 0), got \"lots\"",
            "pf.json5:6: inboxes[0].keep.failed: must be \"forever\" or a duration like \"30d\", \"12h\" (how long failed/<batch-id>/ folders are kept after their batch was claimed), got \"0s\"",
            "pf.json5:6: inboxes[0].minFreeSpace: must be a size like \"512KiB\", \"1GiB\", \"20MB\" or a number of bytes (more than 0), got -1",
            "pf.json5:7: inboxes[1].keep: must be an object { … } with keys out, originals, failed, got \"30d\"",
        ])
    }

    @Test func originalsUntilDeliveredNeedsADestinationAndDuplicatesAreGlobalAndPerInbox() throws {
        let config = try Config.parse(text: """
            { keep: { originals: "until-delivered" }, duplicates: "skip",
              deliver: [ { name: "outbox", to: "file:///srv/outbox/" } ],
              inboxes: [
                { name: "a", root: "/srv/a", template: "t" },
                { name: "b", root: "/srv/b", template: "t", duplicates: "finish", deliver: [], keep: { originals: "30d" } },
              ] }
            """, file: "pf.json5")
        #expect(config.inboxes[0].keep.originals == .untilDelivered && config.inboxes[0].keep.originals.description == "until-delivered")
        #expect(config.inboxes[0].duplicates == .skip && config.inboxes[1].duplicates == .finish)
        #expect(config.inboxes[1].keep.originals == .duration(.seconds(30 * 86_400)))
        #expect(Config.defaults.duplicates == .finish)
        #expect(configTestErrors("""
            { keep: { out: "until-delivered", originals: "until-delivered" }, duplicates: "drop",
              inboxes: [ { name: "a", root: "/srv/a", template: "t" } ] }
            """).map(\.description) == [
            "pf.json5:1: keep.out: must be \"forever\" or a duration like \"30d\", \"12h\" (how long out/<batch-id>/ folders are kept after their batch was claimed), got \"until-delivered\"",
            "pf.json5:1: duplicates: must be \"finish\" (a photo dropped again is finished again) or \"skip\" (listed as duplicate, not finished), got \"drop\"",
            "pf.json5:2: inboxes[0].name: keep.originals is \"until-delivered\" but inbox \"a\" has no destination (deliver): its originals would be kept for ever; give it a deliver list, or its own keep: { originals: \"forever\" }",
        ])
    }

    @Test(arguments: [("30d", "30d"), ("36h", "36h"), ("90m", "90m"), ("45s", "45s"), ("1.5s", "1500ms"), ("2h", "2h")])
    func durationsAreWrittenBackAsTheConfigWritesThem(text: String, words: String) throws {
        #expect(Config.words(try #require(Config.parseDuration(text))) == words)
    }
}
