import Batches
import Codecs
import Configuration
import Foundation
import HotFolders
import Pixels
import Synchronization
import System
import Testing
import TestSupport
@testable import Web

/// The console in this process, on a loopback port, over two real hot folders (shop, studio)
/// and a users file, with a stand-in for the service (`RigSource`): what its HTTP tests drive
/// with `ConsoleClient`, each test its own rig, no daemon. What the console logs is kept.
final class ConsoleRig: @unchecked Sendable {
    let dir: String
    let shop: HotFolderLayout
    let studio: HotFolderLayout
    let usersFile: String
    let source: RigSource
    let lines = Locked<[String]>([])
    private(set) var console: WebConsole
    private(set) var port: UInt16 = 0
    let settings: WebConsole.Settings

    /// - Parameters:
    ///   - users: name, password, hot folders (nil: admin).
    ///   - tweak: changes to the console's settings.
    /// Where the console listens (`0.0.0.0`: every address, as the package's socket does).
    let address: String

    ///   - shares: whether the console serves share links (`/s/TOKEN/`), as the daemon's does.
    init(_ label: String = #function, users: [(String, String, [String]?)] = [("anna", "anna's password", ["shop"])],
         maxFileBytes: Int = 4 << 20, address: String = "127.0.0.1", shares: Bool = false,
         tweak: (inout WebConsole.Settings) -> Void = { _ in }) throws {
        self.address = address
        dir = try TemporaryFolder.make("rig")
        shop = HotFolderLayout(root: dir + "/shop")
        studio = HotFolderLayout(root: dir + "/studio")
        try shop.create()
        try studio.create()
        usersFile = dir + "/users.json5"
        let made = try users.map { name, password, inboxes in
            Users.User(name: name, hash: try PasswordHash.make(password), inboxes: inboxes ?? [], admin: inboxes == nil)
        }
        try Users(users: made).write(to: usersFile)
        source = RigSource(folders: [ConsoleFolder(name: "shop", layout: shop, template: "small"),
                                     ConsoleFolder(name: "studio", layout: studio, template: "small")], maxFileBytes: maxFileBytes)
        var s = WebConsole.Settings(usersFile: usersFile)
        s.sessionsFile = dir + "/sessions.json"
        tweak(&s)
        settings = s
        site = shares ? source.site : nil
        console = WebConsole(settings: s, source: source, shares: site, log: Self.logger(lines))
        try start()
    }

    private let site: ShareSite?

    deinit { console.stop() }

    static func logger(_ lines: Locked<[String]>) -> Logger {
        Logger { _, text, _ in lines.update { $0.append(text) } }
    }

    private func start() throws {
        let (socket, port) = try HTTPPriorityTests.listener(address: address)
        self.port = port
        #expect(console.start(sockets: [socket]))
    }

    /// The console stopped and started again on a new port (a restart of the daemon): what it
    /// knows comes from its files.
    func restart() throws {
        console.stop()
        console = WebConsole(settings: settings, source: source, shares: site, log: Self.logger(lines))
        try start()
    }

    func client() -> ConsoleClient { ConsoleClient(port: port) }

    /// A client logged in as `user`, and the form token of `page`.
    func loggedIn(_ user: String = "anna", _ password: String = "anna's password", page: String = "/inbox/shop/") throws -> (ConsoleClient, String) {
        let c = client()
        let r = try c.login(user, password)
        try #require(r.status == 303, "login as \(user): \(r.status) \(r.text.prefix(300))")
        return (c, try c.csrf(on: page))
    }

    var log: String { lines.value.joined(separator: "\n") }

    func files(_ folder: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).sorted()
    }

    // MARK: - A published batch

    /// The files now in drop/ named `names` claimed as one batch and finished (what the service
    /// does with an upload): its id.
    func finish(_ names: [String], inbox: String = "shop") async throws -> String {
        let layout = inbox == "shop" ? shop : studio
        let claimed = try Claim.claim(names.map { FileName($0)! }, layout: layout, inbox: inbox,
                                      template: .builtIn, order: .name, locks: BatchLocks(), mover: Mover(.renameNoReplace))
        let batch = try #require(claimed.batch)
        _ = try await BatchWork.finish(batch, limits: BatchLimits(), stop: StopRequest(), log: .silent)
        return batch.id
    }

    /// A small JPEG, `seed` making it differ.
    static func photo(_ seed: Int) throws -> [UInt8] {
        let image = Canvas(width: 64 + seed, height: 48, channels: 3, fill: [UInt8(40 * seed % 256), 120, 200])
        return try encodeImage(image.finished(), options: EncodeOptions(format: .jpeg, quality: 80))
    }

    /// A batch of `names` finished in `layout` by the real claim and run (outputs, thumbnails,
    /// report, originals filed; a name ending in `-broken.jpg` is no JPEG and fails): its id.
    func publish(_ names: [String], inbox: String = "shop") async throws -> String {
        let layout = inbox == "shop" ? shop : studio
        for (i, name) in names.enumerated() {
            let bytes = name.hasSuffix("-broken.jpg") ? Array("not a photo at all".utf8) : try Self.photo(i)
            try Data(bytes).write(to: URL(fileURLWithPath: layout.drop + "/" + name))
        }
        let claimed = try Claim.claim(names.map { FileName($0)! }, layout: layout, inbox: inbox,
                                      template: .builtIn, order: .name, locks: BatchLocks(), mover: Mover(.renameNoReplace))
        let batch = try #require(claimed.batch)
        guard case .finished = try await BatchWork.finish(batch, limits: BatchLimits(), stop: StopRequest(), log: .silent) else {
            Issue.record("the batch did not finish")
            return batch.id
        }
        return batch.id
    }
}

/// The service as the console sees it, set by the test: the folders and their progress, and
/// the redos the console asked for.
final class RigSource: ConsoleSource, @unchecked Sendable {
    let state: Locked<ConsoleSnapshot>
    /// Each redo asked for: hot folder, batch, the sources named (nil: all).
    let redos = Locked<[(inbox: String, batch: String, only: Set<FileName>?)]>([])
    /// Each folder's sharing (none set: the defaults), and each approval the console announced.
    let shares = Locked<[String: ConsoleSharing]>([:])
    let approvals = Locked<[(inbox: String, batch: String)]>([])

    init(folders: [ConsoleFolder], maxFileBytes: Int) {
        state = Locked(ConsoleSnapshot(folders: folders, maxFileBytes: maxFileBytes))
    }

    func snapshot() -> ConsoleSnapshot { state.value }

    func redo(inbox: String, batch id: String, only: Set<FileName>?) -> Result<String, ConsoleRefusal> {
        redos.update { $0.append((inbox, id, only)) }
        return .success(BatchID.make())
    }

    func sharing(inbox: String) -> ConsoleSharing { shares.value[inbox] ?? ConsoleSharing() }

    func approved(inbox: String, batch id: String) { approvals.update { $0.append((inbox, id)) } }

    /// The share pages over the same folders and settings (what `WebConsole.serve` gives the daemon's console).
    var site: ShareSite {
        ShareSite(folders: { [self] in
            let folders = snapshot().folders.map { ShareSite.Folder(name: $0.name, layout: $0.layout, approve: sharing(inbox: $0.name).settings.approve) }
            return (folders, shares.value.values.compactMap(\.publicURL).first)
        }, approved: { [self] inbox, batch in approved(inbox: inbox, batch: batch) })
    }

    /// Changes the folder `name`.
    func update(_ name: String, _ change: (inout ConsoleFolder) -> Void) {
        state.update { s in
            if let i = s.folders.firstIndex(where: { $0.name == name }) { change(&s.folders[i]) }
        }
    }
}
