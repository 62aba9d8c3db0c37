import Batches
import Configuration
import Finishing
import Foundation
import HotFolders
import JSON5

/// What the service runs: the config's timing and limits, and each hot folder with its
/// validated template.
public struct ServiceSetup: Sendable {
    public var config: Config
    public var inboxes: [Inbox]

    public struct Inbox: Sendable {
        public var name: String
        public var layout: HotFolderLayout
        public var template: TemplateSnapshot
        public var order: Template.Order
        /// What to run or call after each of its batches (its own `onBatch`, else the config's).
        public var hooks: BatchHooks?
        /// How long its finished batches are kept (`keep`, resolved at load).
        public var keep: Retention.Keep
        /// Below this many free bytes nothing new is claimed (`minFreeSpace`); nil: no minimum.
        public var minFreeSpace: Int?

        public init(name: String, layout: HotFolderLayout, template: TemplateSnapshot, order: Template.Order,
                    hooks: BatchHooks? = nil, keep: Retention.Keep = Retention.Keep(), minFreeSpace: Int? = nil) {
            self.name = name
            self.layout = layout
            self.template = template
            self.order = order
            self.hooks = hooks
            self.keep = keep
            self.minFreeSpace = minFreeSpace
        }
    }

    public init(config: Config, inboxes: [Inbox]) {
        self.config = config
        self.inboxes = inboxes
    }

    /// The setup of `photofinish daemon --config FILE`: the config and every template it names.
    /// - Throws: `JSON5Errors` with every problem, each naming file, line and key.
    public static func load(configPath: String) throws(JSON5Errors) -> ServiceSetup {
        let config = try Config.load(path: configPath)
        var inboxes: [Inbox] = []
        var errors: [JSON5Error] = []
        // Each template is read once, however many hot folders use it (10,000 shop folders
        // with one shop.json5 read it once, and share its text).
        var loaded: [String: Result<(TemplateSnapshot, Template.Order), JSON5Errors>] = [:]
        var reported: Set<String> = []
        for inbox in config.inboxes {
            let path = config.templatePath(named: inbox.template)
            let result = loaded[path] ?? Result { () throws(JSON5Errors) in
                let (snapshot, template) = try TemplateSnapshot.load(path: path)
                return (snapshot, template.order)
            }
            loaded[path] = result
            switch result {
            case .success(let (snapshot, order)):
                inboxes.append(Inbox(name: inbox.name, layout: HotFolderLayout(root: inbox.root), template: snapshot,
                                     order: order, hooks: inbox.onBatch ?? config.onBatch,
                                     keep: Retention.Keep(inbox.keep), minFreeSpace: inbox.minFreeSpace))
            case .failure(let error):
                // Said once per template, not once per hot folder using it.
                if reported.insert(path).inserted { errors += error.errors }
            }
        }
        guard errors.isEmpty else { throw JSON5Errors(errors: errors) }
        return ServiceSetup(config: config, inboxes: inboxes)
    }

    var rules: BatchRules {
        BatchRules(settle: config.settle, quiet: config.quiet, maxWait: config.maxWait, maxBatch: config.maxBatch)
    }

    var limits: BatchLimits { BatchLimits(config: config) }
}
