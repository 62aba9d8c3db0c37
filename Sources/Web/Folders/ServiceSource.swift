import Configuration
import HotFolders
import Service
import System

/// The console's view of a running service: its live status (`ServiceStatus`) and the setup
/// in force (`ServiceSetup`), each asked for at every request. The one place that knows the
/// service's types: when the service's status model changes, only this adapter does.
public struct ServiceSource: ConsoleSource {
    private let status: @Sendable () -> ServiceStatus
    private let setup: @Sendable () -> ServiceSetup
    private let again: @Sendable (String, String, Set<FileName>?) throws(Redo.Refusal) -> String
    private let approvedHook: @Sendable (String, String) -> Void

    /// - Parameters:
    ///   - status: the live status (a snapshot under the service's lock: cheap).
    ///   - setup: the setup in force (changes at a reload).
    ///   - redo: a batch finished again by the service (`HotFolderService.redo`).
    ///   - approved: a batch approved in the console (`HotFolderService.approved`).
    public init(status: @escaping @Sendable () -> ServiceStatus, setup: @escaping @Sendable () -> ServiceSetup,
                redo: @escaping @Sendable (String, String, Set<FileName>?) throws(Redo.Refusal) -> String = { _, _, _ throws(Redo.Refusal) in
                    throw Redo.Refusal(description: "batches are not finished again from here")
                },
                approved: @escaping @Sendable (String, String) -> Void = { _, _ in }) {
        self.status = status
        self.setup = setup
        again = redo
        approvedHook = approved
    }

    public func sharing(inbox: String) -> ConsoleSharing {
        let config = setup().config
        return ConsoleSharing(settings: config.inboxes.first { $0.name == inbox }?.sharing ?? ShareSettings(), publicURL: config.publicURL)
    }

    public func approved(inbox: String, batch id: String) { approvedHook(inbox, id) }

    public func redo(inbox: String, batch id: String, only: Set<FileName>?) -> Result<String, ConsoleRefusal> {
        do throws(Redo.Refusal) {
            return .success(try again(inbox, id, only))
        } catch {
            return .failure(ConsoleRefusal(error.description))
        }
    }

    public func snapshot() -> ConsoleSnapshot {
        let setup = setup()
        let status = status()
        let folders = setup.inboxes.map { inbox -> ConsoleFolder in
            var folder = ConsoleFolder(name: inbox.name, layout: inbox.layout, template: inbox.template.name)
            guard let s = status.inboxes.first(where: { $0.name == inbox.name }) else {
                folder.state = .starting
                return folder
            }
            folder.state = Self.state(s.state, running: status.state == .running)
            folder.waiting = s.settling + s.pending
            folder.queued = s.queued
            folder.processing = s.processing
            folder.open = s.open
            folder.parked = s.parked ?? 0
            folder.last = s.last
            folder.notes = (s.refused ?? []) + (s.neverTaken ?? [])
            return folder
        }
        return ConsoleSnapshot(folders: folders, maxFileBytes: setup.config.maxFileBytes,
                               running: status.state == .running)
    }

    /// The service's folder state as the console shows it (a status without one: watching
    /// while the service runs).
    static func state(_ state: ServiceStatus.FolderState?, running: Bool) -> ConsoleFolder.State {
        guard running else { return .stopped }
        switch state?.kind {
        case .starting: return .starting
        case .refused: return .refused(why: state?.why ?? "not watched", fix: state?.fix ?? [])
        case .shareUnavailable: return .unavailable(since: state?.since, error: state?.why ?? "the share does not answer")
        case .lowSpace: return .lowSpace(why: state?.why ?? "below minFreeSpace: nothing new is claimed")
        case .stopped: return .stopped
        case .watching, .other, nil: return .watching
        }
    }
}

extension WebConsole {
    /// The console of a running service (`photofinish daemon`, `watch --config`), on the
    /// sockets systemd passed as `web`; nil when there are none (no console is wanted).
    /// - Parameter initial: the setup the service starts with (used until it applied one).
    public static func serve(_ service: HotFolderService, initial: ServiceSetup, log: Logger) -> WebConsole? {
        let sockets = socketsFromSystemd()
        guard !sockets.isEmpty else { return nil }
        let source = ServiceSource(status: { service.liveStatus() }, setup: { service.setupInForce ?? initial },
                                   redo: { inbox, id, only throws(Redo.Refusal) in try service.redo(inbox: inbox, batch: id, only: only) },
                                   approved: { inbox, id in service.approved(inbox: inbox, batch: id) })
        let shares = ShareSite(folders: {
            let setup = service.setupInForce ?? initial
            let folders = setup.config.inboxes.map { ShareSite.Folder(name: $0.name, layout: HotFolderLayout(root: $0.root), approve: $0.sharing.approve) }
            return (folders, setup.config.publicURL)
        }, approved: { inbox, batch in service.approved(inbox: inbox, batch: batch) })
        let console = WebConsole(settings: Settings(config: initial.config), source: source, shares: shares, log: log)
        return console.start(sockets: sockets) ? console : nil
    }
}
