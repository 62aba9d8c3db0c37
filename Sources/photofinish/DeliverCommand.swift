import Batches
import Configuration
import Delivery
import Foundation
import HotFolders
import JSON5
import Service
import Synchronization
import System

/// `photofinish deliver ROOT BATCH-ID [--to NAME] [--config FILE]`: a finished batch delivered
/// again by hand, now, to its hot folder's destinations (or the one named): a delivery that
/// failed is resumed where it stopped, one delivered is sent again under the same names.
enum DeliverCommand {
    static func main(_ a: Arguments) throws(UsageError) -> Int32 {
        guard a.positional.count == 2 else { throw UsageError("deliver needs ROOT and BATCH-ID") }
        let root = WatchCommand.absolute(a.positional[0]), id = a.positional[1]
        let layout = HotFolderLayout(root: root)
        guard layout.exists else { throw UsageError("\(root) is not a hot folder (it has no drop/)") }
        let configPath = a[.config] ?? Commands.defaultConfig
        let config: Config
        do throws(JSON5Errors) {
            config = try Config.load(path: configPath)
        } catch {
            for e in error.errors { Terminal.note(e.description) }
            return 2
        }
        guard let inbox = config.inboxes.first(where: { WatchCommand.absolute($0.root) == root }) else {
            throw UsageError("\(configPath) names no hot folder at \(root)")
        }
        var destinations = inbox.deliver
        if let name = a[.to] {
            destinations = destinations.filter { $0.name == name }
            if destinations.isEmpty {
                let known = inbox.deliver.map(\.name)
                throw UsageError("\(inbox.name) has no destination '\(name)'"
                                 + (known.isEmpty ? " (its config names none)" : " (it has \(known.joined(separator: ", ")))"))
            }
        }
        guard !destinations.isEmpty else { throw UsageError("\(configPath) gives \(inbox.name) no destination (deliver: [ … ])") }
        let batchFolder = layout.out + "/" + id
        let report: Report
        do throws(ReportError) {
            guard let read = try ReportReader.read(batchFolder: batchFolder) else {
                Terminal.error("\(batchFolder)/report.json does not exist: batch \(id) is not finished (or was removed)")
                return 2
            }
            report = read
        } catch {
            Terminal.error("cannot read \(batchFolder)/report.json: \(error)")
            return 2
        }
        // The journals are the service's: written as the owner of .work/ when run as root.
        if ProcessIdentity.isRoot, let owner = try? ProcessIdentity.owner(of: layout.work), owner.uid != 0 {
            do throws(SystemError) {
                try ProcessIdentity.become(owner)
            } catch {
                Terminal.error("deliver: cannot become \(owner), the owner of \(layout.work)/: \(error)")
                return 2
            }
        }
        let log = ServiceLog.make()
        let lock = Mutex(())
        let fields: LogFields = ["INBOX": inbox.name, "BATCH": id]
        let folder = DeliveryReceipts.folder(layout, batch: id)
        // Failed (exit 1); or refused, being sent by the daemon now (exit 3).
        var failed = false, refused = false
        for destination in destinations {
            let path = folder + "/" + destination.name + ".json"
            do throws(SystemError) {
                if try DeliveryRun.read(path) == nil {
                    let made = try DeliveryReceipts.plan(report, layout: layout, destination: destination, inbox: inbox.name,
                                                         approvalAsked: inbox.sharing.approve != .none)
                    try DeliveryRun.write(made, to: path)
                }
            } catch {
                Terminal.error("\(destination.name): \(error)")
                failed = true
                continue
            }
            let context = DeliveryRun.Context(settings: destination, credentialsFile: config.credentials, mail: config.mail)
            let outcome = DeliveryRun.attempt(path, context: context, first: .again, handOver: handOver, onWait: { held in
                Terminal.note("\(destination.name): the daemon is ending its attempt at batch \(id) (its receipt says \(held.phase.rawValue)); waiting for it")
            }, onReceipt: { journal in
                DeliveryReceipts.write([DeliveryReceipts.receipt(journal)], batchFolder: batchFolder, lock: lock, log: log, fields: fields)
            })
            switch outcome {
            case .ran(let journal, _):
                let receipt = DeliveryReceipts.receipt(journal)
                print(ReportText.deliveryLine(receipt))
                if journal.phase != .delivered { failed = true }
            case .busy:
                Terminal.error("\(destination.name): " + busy(path, batch: id))
                refused = true
            case .broken(let why):
                Terminal.error("\(destination.name): \(why)")
                failed = true
            }
        }
        // The batch delivered everywhere now: with keep.originals "until-delivered" its
        // originals go, as the daemon removes them.
        if !failed, !refused, inbox.keep.originals == .untilDelivered, DeliveryReceipts.delivered(id, layout: layout) {
            _ = Retention.removeDelivered(id, layout: layout, inbox: inbox.name, log: log)
        }
        return failed ? 1 : refused ? 3 : 0
    }

    /// How long a delivery the daemon has told the end of (its receipt written, its attempt
    /// ending) is waited for before it counts as being sent now.
    static let handOver = Duration.seconds(30)

    /// What a refused delivery says: the daemon is sending it now, nothing was done here.
    private static func busy(_ path: String, batch: String) -> String {
        let held: DeliveryJournal?
        do throws(SystemError) {
            held = try DeliveryRun.read(path)
        } catch {
            return "the daemon is delivering batch \(batch) there now (its journal: \(error)); nothing was sent: see photofinish status"
        }
        if let held, !held.isUnderWay {
            return "the daemon still holds the delivery of batch \(batch) after \(handOver.components.seconds) s (its receipt says \(held.phase.rawValue));"
                + " nothing was sent: run this again"
        }
        let done = held.map { " (\($0.files.filter { $0.stage == .verified }.count) of \($0.files.count) files verified)" } ?? ""
        return "the daemon is delivering batch \(batch) there now\(done); nothing was sent: its receipt says when it is delivered (photofinish status, report.json)"
    }
}
