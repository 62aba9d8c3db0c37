import Foundation
import System
import Testing
import TestSupport
@testable import Delivery

/// A delivery carried out whole against a folder (`file:///`), through libcurl: written under a
/// temporary name, renamed, read back and hashed; a run cut off resumed without a second name.
struct DeliveryRunTests {
    static func batch(_ dir: String) throws -> (folder: String, parts: [DeliveryPlan.Part]) {
        let folder = dir + "/out/b1"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        var parts: [DeliveryPlan.Part] = []
        for n in 0..<3 {
            try Data((0..<(50_000 + n)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ n) }).write(to: URL(fileURLWithPath: folder + "/p\(n).jpg"))
            parts.append(.init("p\(n).jpg"))
        }
        return (folder, parts)
    }

    @Test func aFolderGetsEachFileOnceVerifiedAndAnInterruptedRunResumes() throws {
        let dir = try TemporaryFolder.make("deliver-run")
        let (folder, parts) = try Self.batch(dir)
        let settings = DestinationSettings(name: "outbox", destination: try Destination.parse("file://\(dir)/outbox/"))
        let journal = dir + "/work/outbox.json"
        var plan = try DeliveryPlan.make(batch: "b1", inbox: "shop", batchFolder: folder, parts: parts, settings: settings, folder: dir + "/work")
        // As a kill leaves it: the first file verified, the second cut off under its temporary name.
        try FileManager.default.createDirectory(atPath: dir + "/outbox/b1", withIntermediateDirectories: true)
        plan.phase = .sending
        plan.files[0].stage = .verified
        plan.files[0].verified = .sha256
        try Data(try Files.read(folder + "/p0.jpg")!).write(to: URL(fileURLWithPath: dir + "/outbox/b1/p0.jpg"))
        plan.files[1].stage = .sending
        plan.files[1].temporary = plan.temporaryName(of: plan.files[1])
        try Data([1, 2, 3]).write(to: URL(fileURLWithPath: dir + "/outbox/" + plan.files[1].temporary!))
        try DeliveryRun.write(plan, to: journal)

        var receipts: [DeliveryJournal.Phase] = []
        let outcome = DeliveryRun.attempt(journal, context: .init(settings: settings, credentialsFile: dir + "/none.json5"),
                                          onReceipt: { receipts.append($0.phase) })
        guard case .ran(let ended, let retry) = outcome else { Issue.record("\(outcome)"); return }
        #expect(ended.phase == .delivered && retry == nil && ended.verified == .sha256)
        #expect(receipts == [.sending, .delivered])
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir + "/outbox/b1").sorted() == ["p0.jpg", "p1.jpg", "p2.jpg"])
        for n in 0..<3 { #expect(try Files.read(dir + "/outbox/b1/p\(n).jpg") == (try Files.read(folder + "/p\(n).jpg"))) }
        #expect(try DeliveryRun.read(journal) == ended)
    }

    @Test func aFolderNotThereFailsWithTheReasonAndIsDeliveredOnceItIs() throws {
        let dir = try TemporaryFolder.make("deliver-fail")
        let (folder, parts) = try Self.batch(dir)
        var settings = DestinationSettings(name: "outbox", destination: try Destination.parse("file://\(dir)/disk/"))
        settings.retry = RetryPolicy(first: .seconds(5))
        let journal = dir + "/work/outbox.json"
        try DeliveryRun.write(try DeliveryPlan.make(batch: "b1", inbox: "shop", batchFolder: folder, parts: parts, settings: settings,
                                                    folder: dir + "/work"), to: journal)
        let outcome = DeliveryRun.attempt(journal, context: .init(settings: settings, credentialsFile: dir + "/none.json5"), now: { 1000 })
        guard case .ran(let ended, let retry) = outcome else { Issue.record("\(outcome)"); return }
        #expect(ended.phase == .failed && ended.error == "sending b1/p0.jpg: \(dir)/disk/ is not there (a disk not mounted?)",
                "\(ended.error ?? "")")
        #expect(retry.map { $0 >= 1005 && $0 <= 1006 } == true, "\(retry ?? 0)")
        #expect(!FileManager.default.fileExists(atPath: dir + "/disk"), "a missing mount point is never made")
        // Held by another process: not sent at the same time.
        let lock = try FileDescriptor.open(journal + ".lock", .write)
        #expect(try lock.tryLock())
        #expect(DeliveryRun.attempt(journal, context: .init(settings: settings, credentialsFile: dir + "/none.json5")) == .busy)
        lock.close()
        try FileManager.default.createDirectory(atPath: dir + "/disk", withIntermediateDirectories: true)
        let again = DeliveryRun.attempt(journal, context: .init(settings: settings, credentialsFile: dir + "/none.json5"), now: { 1006 })
        guard case .ran(let delivered, nil) = again else { Issue.record("\(again)"); return }
        #expect(delivered.phase == .delivered && delivered.attempts == 2)
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir + "/disk/b1").sorted() == ["p0.jpg", "p1.jpg", "p2.jpg"])
    }

    /// `photofinish deliver` beside the daemon: a delivery whose lock another process holds while
    /// its journal says the attempt is over (the daemon's receipt written, its attempt ending) is
    /// waited for and then sent again; one whose journal says an attempt is under way is refused
    /// at once; a lock kept past the hand-over is refused too.
    @Test func aHeldDeliveryIsWaitedForWhenItsAttemptIsOverAndRefusedWhileItIsUnderWay() throws {
        let dir = try TemporaryFolder.make("deliver-held")
        let (folder, parts) = try Self.batch(dir)
        try FileManager.default.createDirectory(atPath: dir + "/outbox", withIntermediateDirectories: true)
        let settings = DestinationSettings(name: "outbox", destination: try Destination.parse("file://\(dir)/outbox/"))
        let context = DeliveryRun.Context(settings: settings, credentialsFile: dir + "/none.json5")
        let journal = dir + "/work/outbox.json"
        try DeliveryRun.write(try DeliveryPlan.make(batch: "b1", inbox: "shop", batchFolder: folder, parts: parts, settings: settings,
                                                    folder: dir + "/work"), to: journal)
        let first = DeliveryRun.attempt(journal, context: context)
        guard case .ran(let delivered, _) = first, delivered.phase == .delivered else {
            Issue.record("not delivered first: \(first)")
            return
        }
        // Held as the daemon holds it between its receipt and its return: waited for, then sent
        // again (by hand: `.again`) once it is let go.
        let held = try FileDescriptor.open(journal + ".lock", .write)
        #expect(try held.tryLock())
        let waited = Locked<[DeliveryJournal.Phase]>([]), outcome = Locked<DeliveryRun.Outcome?>(nil)
        let thread = Thread {
            outcome.set(DeliveryRun.attempt(journal, context: context, first: .again, handOver: .seconds(60),
                                            onWait: { journal in waited.update { $0.append(journal.phase) } }))
        }
        thread.start()
        #expect(Poll.until(.seconds(30)) { waited.value == [.delivered] }, "\(waited.value)")
        #expect(outcome.value == nil, "returned while the lock was held: \(String(describing: outcome.value))")
        held.close()
        #expect(Poll.until(.seconds(30)) { outcome.value != nil })
        guard case .ran(let again, _)? = outcome.value else { Issue.record("\(String(describing: outcome.value))"); return }
        #expect(again.phase == .delivered && again.attempts == 2 && waited.value == [.delivered])

        // Held while the journal says an attempt is under way: refused at once, nothing waited for.
        var sending = again
        sending.phase = .sending
        try DeliveryRun.write(sending, to: journal)
        let daemon = try FileDescriptor.open(journal + ".lock", .write)
        defer { daemon.close() }
        #expect(try daemon.tryLock())
        var told = false
        #expect(DeliveryRun.attempt(journal, context: context, first: .again, handOver: .seconds(60), onWait: { _ in told = true }) == .busy)
        #expect(!told)
        // At rest but held past the hand-over: refused after waiting for it.
        try DeliveryRun.write(again, to: journal)
        #expect(DeliveryRun.attempt(journal, context: context, first: .again, handOver: .milliseconds(100), onWait: { _ in told = true }) == .busy)
        #expect(told)
        #expect(try DeliveryRun.read(journal) == again, "a refused run leaves the journal as it was")
    }
}
