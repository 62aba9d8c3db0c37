import Foundation
import System

/// One attempt at one batch's delivery to one destination: the journal read, locked (the
/// daemon and `photofinish deliver` never send the same delivery at once), and the machine's
/// effects carried out against the server until the attempt is over.
public enum DeliveryRun {
    /// What the attempt needs besides the journal.
    public struct Context: Sendable {
        public var settings: DestinationSettings
        /// Read afresh for each attempt: a login fixed in the file is used at the next one.
        public var credentialsFile: String
        public var mail: MailSettings?
        /// The batch's link (a mail too large to attach sends it instead), if it has one.
        public var link: String?
        public var environment: [String: String]

        public init(settings: DestinationSettings, credentialsFile: String, mail: MailSettings? = nil, link: String? = nil,
                    environment: [String: String] = ProcessInfo.processInfo.environment) {
            self.settings = settings
            self.credentialsFile = credentialsFile
            self.mail = mail
            self.link = link
            self.environment = environment
        }
    }

    public enum Outcome: Sendable, Equatable {
        /// The attempt ran; the journal as it ended (delivered, failed, waiting for approval),
        /// and when to try again (nil: no more automatic attempts).
        case ran(DeliveryJournal, retryAt: Double?)
        /// Another process holds the delivery's lock (it is sending it now).
        case busy
        /// The journal could not be read or written.
        case broken(String)
    }

    /// The journal at `path` (`.work/deliveries/<batch-id>/<destination>.json`).
    public static func read(_ path: String) throws(SystemError) -> DeliveryJournal? {
        guard let bytes = try Files.read(path) else { return nil }
        do {
            return try JSONDecoder().decode(DeliveryJournal.self, from: Data(bytes))
        } catch {
            throw SystemError("decode the delivery journal (\(error))", path, errno: EINVAL)
        }
    }

    /// True when the batch whose journals are in `folder` (`.work/deliveries/<batch-id>`) has at
    /// least one and every one is delivered: what `keep.originals: "until-delivered"` waits for.
    /// A journal that cannot be read counts as not delivered (the originals stay).
    public static func allDelivered(folder: String) -> Bool {
        let journals = Files.textNames(in: folder).filter { $0.hasSuffix(".json") }
        guard !journals.isEmpty else { return false }
        return journals.allSatisfy { name in
            do throws(SystemError) {
                return try read(folder + "/" + name)?.phase == .delivered
            } catch {
                return false
            }
        }
    }

    /// - Parameter durability: `.durable` (the default) for a journal made; `.contents` for one
    ///   replaced during an attempt: its bytes synced, not its folder — after a power cut the
    ///   name holds this journal or the one before it, whole either way, and the one before
    ///   only sends a file again under the same names (one fsync a step, not two).
    public static func write(_ journal: DeliveryJournal, to path: String,
                             _ durability: AtomicFile.Durability = .durable) throws(SystemError) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        let data: Data
        do {
            data = try encoder.encode(journal)
        } catch {
            // Never an empty journal in place of the one there.
            throw SystemError("encode the delivery journal (\(error))", path, errno: EINVAL)
        }
        try AtomicFile.write(Array(data), to: path, durability)
    }

    /// Runs one attempt (or, with `first`, the event that comes before it: an approval or a
    /// delivery asked for by hand).
    /// - Parameters:
    ///   - shouldStop: asked during transfers; true stops the attempt where it is (resumed later).
    ///   - handOver: how long to wait for the lock while another process holds it and the journal
    ///     says its attempt is over (see `takeLock`); zero: not at all.
    ///   - onWait: told once if the lock is waited for, with the journal that says why.
    ///   - onReceipt: told each time the receipt changes (sending, delivered, failed).
    public static func attempt(_ path: String, context: Context, first: DeliveryMachine.Event? = nil,
                               handOver: Duration = .zero, onWait: (DeliveryJournal) -> Void = { _ in },
                               now: @Sendable () -> Double = { Date().timeIntervalSince1970 },
                               shouldStop: @escaping @Sendable () -> Bool = { false },
                               onReceipt: (DeliveryJournal) -> Void = { _ in }) -> Outcome {
        let lock: FileDescriptor
        do throws(SystemError) {
            guard let taken = try takeLock(path, handOver: handOver, onWait: onWait) else { return .busy }
            lock = taken
        } catch {
            return .broken(error.description)
        }
        defer { lock.close() }
        let journal: DeliveryJournal
        do throws(SystemError) {
            guard let read = try read(path) else { return .broken("no delivery journal at \(path)") }
            journal = read
        } catch {
            return .broken(error.description)
        }
        let destination = context.settings.destination
        var machine = DeliveryMachine(journal: journal, policy: context.settings.retry, renames: destination.renames,
                                      whole: destination.kind == .mailto, depth: destination.kind == .mailto ? 1 : filesUnderWay)
        var effects: [DeliveryMachine.Effect] = []
        if let first { effects += machine.handle(first, now: now()) }
        if machine.journal.isDue(at: now()) { effects += machine.handle(.begin, now: now()) }
        let connections = Connections(context, shouldStop: shouldStop)
        // Every lane is closed (its connection with it) before the attempt returns.
        defer { connections.close() }
        // Server steps handed out and not answered yet.
        var waiting = 0
        // A journal a restart resumes anyway (pending, sending, failed and tried again) is saved
        // while the steps handed out with the save run: whatever it says, a file is sent again
        // under the same names. Any other (delivered, sent again by hand) says `sending` before
        // the first step touches the server, or a kill would leave a temporary file no start resumes.
        var saveFirst = !journal.isResumable
        var saved = journal
        while true {
            var ended = false, save = false, receipt = false
            while !effects.isEmpty {
                let effect = effects.removeFirst()
                switch effect {
                case .save where saveFirst:
                    if let broken = write(machine.journal, to: path) { return broken }
                    saved = machine.journal
                    saveFirst = false
                case .save:
                    // Once, after the server steps beside it are handed out.
                    save = true
                case .receipt:
                    // Told once the server steps beside it are handed out: the report is
                    // rewritten while they run.
                    receipt = true
                case .write(let i, let name):
                    waiting += 1
                    connections.hand(effect, .write(i, machine.journal.files[i], as: name))
                case .rename(let i, let from):
                    waiting += 1
                    connections.hand(effect, .rename(i, machine.journal.files[i], from: from))
                case .verify(let i):
                    waiting += 1
                    connections.hand(effect, .verify(i, machine.journal.files[i]))
                case .sendMessage:
                    waiting += 1
                    connections.hand(effect, .sendMessage(machine.journal, link: context.link))
                case .retry:
                    break  // read from the journal below
                case .done:
                    ended = true
                }
            }
            // An attempt that ended closes its connections before its end is saved and told
            // (waiting for the steps still under way to stop): once the receipt says delivered
            // or failed, nothing of the attempt touches the server any more and the journal's
            // lock goes with the return, so a `photofinish deliver` run on seeing it finds the
            // journal free, not one a closing connection still holds.
            if ended { connections.close() }
            if save, machine.journal != saved {
                if let broken = write(machine.journal, to: path) { return broken }
                saved = machine.journal
            }
            if receipt { onReceipt(machine.journal) }
            // Ended (delivered, or failed: the steps still under way are stopped and not waited
            // for), or nothing left to wait for.
            if ended || waiting == 0 { break }
            guard case .answer(let effect, let result) = connections.answers.take() else { continue }
            waiting -= 1
            let jitter = Double.random(in: 0..<1)
            switch result {
            case .success(let event):
                effects = machine.handle(event, now: now(), jitter: jitter)
            case .failure(var failure):
                // Stopping: left as it is (a file being sent is sent again at the next start),
                // not recorded as a failure of the destination.
                if shouldStop() { return .ran(machine.journal, retryAt: nil) }
                // What was being done, for the receipt's error.
                let step: String? = switch effect {
                case .write(let i, _): "sending \(machine.journal.files[i].name)"
                case .rename(let i, _): "renaming \(machine.journal.files[i].name) into place"
                case .verify(let i): "verifying \(machine.journal.files[i].name)"
                case .sendMessage: "sending the mail"
                default: nil
                }
                if let step { failure.message = step + ": " + failure.message }
                effects = machine.handle(.failed(failure), now: now(), jitter: jitter)
            }
        }
        let ended = machine.journal
        let retryAt: Double? = switch ended.phase {
        case .failed: ended.final ? nil : ended.nextAttempt
        case .pending, .sending: ended.nextAttempt ?? now()
        case .delivered, .awaitingApproval: nil
        }
        return .ran(ended, retryAt: retryAt)
    }

    /// The delivery's lock (`<journal>.lock`), or nil when another process holds it for an
    /// attempt under way (or beyond `handOver`). While the journal says the holder's attempt is
    /// over (delivered, failed, awaiting the approval: the daemon has told its receipt and is
    /// ending the attempt), the lock is waited for up to `handOver`, the journal read again each
    /// time (one that says a new attempt began ends the wait): `photofinish deliver` run as a
    /// receipt appears takes the delivery over rather than being refused (docs/reference.md,
    /// "Delivering finished photos": by hand).
    private static func takeLock(_ path: String, handOver: Duration, onWait: (DeliveryJournal) -> Void) throws(SystemError) -> FileDescriptor? {
        let lock = try FileDescriptor.open(path + ".lock", .write, [.create], permissions: 0o600)
        let clock = ContinuousClock()
        let deadline = clock.now + handOver
        var told = false
        do throws(SystemError) {
            while !(try lock.tryLock()) {
                guard clock.now < deadline, let held = try read(path), !held.isUnderWay else {
                    lock.close()
                    return nil
                }
                if !told { onWait(held) }
                told = true
                // flock has no timed wait: asked again every 20 ms.
                Thread.sleep(forTimeInterval: 0.02)
            }
        } catch {
            lock.close()
            throw error
        }
        return lock
    }

    /// Saves the journal during an attempt; the attempt's end when it cannot.
    private static func write(_ journal: DeliveryJournal, to path: String) -> Outcome? {
        do throws(SystemError) {
            try write(journal, to: path, .contents)
            return nil
        } catch {
            // Not recorded, not sent: the attempt stops here and is made again.
            return .broken("cannot write the delivery journal: \(error)")
        }
    }

    /// How many files an attempt has under way at once: one written while the two before it are
    /// renamed and read back on a second connection.
    static let filesUnderWay = 3

    /// The connections of one attempt: a lane that writes (and sends a mail) and, made at the
    /// first rename or read-back, one that renames and verifies — each with its own libcurl
    /// handle, so a file is read back while the next is written. The login is read once, at the
    /// first lane.
    private final class Connections {
        let answers = Handoff<CourierLane.Message>()
        private let context: Context
        private let shouldStop: @Sendable () -> Bool
        /// Set when the attempt ends before its steps did (it failed): they stop.
        private let over = Flag()
        private var writer: CourierLane?
        private var checker: CourierLane?
        /// The login, or why it could not be read (each step then fails with it).
        private var credential: Result<Credential?, DeliveryMachine.Failure>?

        init(_ context: Context, shouldStop: @escaping @Sendable () -> Bool) {
            self.context = context
            self.shouldStop = shouldStop
        }

        func hand(_ effect: DeliveryMachine.Effect, _ step: CourierLane.Step) {
            switch effect {
            case .rename, .verify:
                checker = checker ?? lane()
                checker!.hand(effect, step)
            default:
                writer = writer ?? lane()
                writer!.hand(effect, step)
            }
        }

        /// Closes the lanes and waits for them to end: steps still under way are stopped.
        func close() {
            let lanes = [writer, checker].compactMap(\.self)
            guard !lanes.isEmpty else { return }
            over.set()
            for lane in lanes { lane.close() }
            var open = lanes.count
            while open > 0 {
                if case .closed = answers.take() { open -= 1 }
            }
            writer = nil
            checker = nil
        }

        private func lane() -> CourierLane {
            let settings = mailSettings(context)
            let read = credential ?? readCredential(settings)
            credential = read
            let over = over, shouldStop = shouldStop
            return CourierLane(settings: settings, credential: read, mail: context.mail,
                               shouldStop: { over.isSet || shouldStop() }, answers: answers)
        }

        private func readCredential(_ settings: DestinationSettings) -> Result<Credential?, DeliveryMachine.Failure> {
            guard let name = settings.credentials else { return .success(nil) }
            do throws(CredentialStore.CredentialError) {
                return .success(try CredentialStore(path: context.credentialsFile, environment: context.environment).credential(name))
            } catch {
                return .failure(DeliveryMachine.Failure(error.description, retryable: false))
            }
        }
    }

    /// A mail destination's TLS options come from the mail server's settings.
    private static func mailSettings(_ context: Context) -> DestinationSettings {
        var settings = context.settings
        if settings.destination.kind == .mailto, let caFile = context.mail?.caFile { settings.caFile = caFile }
        if settings.destination.kind == .mailto, settings.credentials == nil { settings.credentials = context.mail?.credentials }
        return settings
    }
}
