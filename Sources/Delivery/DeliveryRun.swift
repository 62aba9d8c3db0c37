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
    ///   - onReceipt: told each time the receipt changes (sending, delivered, failed).
    public static func attempt(_ path: String, context: Context, first: DeliveryMachine.Event? = nil,
                               now: @Sendable () -> Double = { Date().timeIntervalSince1970 },
                               shouldStop: @escaping @Sendable () -> Bool = { false },
                               onReceipt: (DeliveryJournal) -> Void = { _ in }) -> Outcome {
        let lock: FileDescriptor
        do throws(SystemError) {
            lock = try FileDescriptor.open(path + ".lock", .write, [.create], permissions: 0o600)
            guard try lock.tryLock() else {
                lock.close()
                return .busy
            }
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
                                      whole: destination.kind == .mailto)
        var effects: [DeliveryMachine.Effect] = []
        if let first { effects += machine.handle(first, now: now()) }
        if machine.journal.isDue(at: now()) { effects += machine.handle(.begin, now: now()) }
        var courier: Courier?
        func server() throws(DeliveryMachine.Failure) -> Courier {
            if let courier { return courier }
            var credential: Credential?
            if let name = context.settings.credentials ?? (destination.kind == .mailto ? context.mail?.credentials : nil) {
                do throws(CredentialStore.CredentialError) {
                    credential = try CredentialStore(path: context.credentialsFile, environment: context.environment).credential(name)
                } catch {
                    throw DeliveryMachine.Failure(error.description, retryable: false)
                }
            }
            let made = try Courier(settings: mailSettings(context), credential: credential, mail: context.mail, shouldStop: shouldStop)
            courier = made
            return made
        }
        while !effects.isEmpty {
            let effect = effects.removeFirst()
            let jitter = Double.random(in: 0..<1)
            // What was being done, for the receipt's error.
            let step: String? = switch effect {
            case .write(let i, _): "sending \(machine.journal.files[i].name)"
            case .rename(let i, _): "renaming \(machine.journal.files[i].name) into place"
            case .verify(let i): "verifying \(machine.journal.files[i].name)"
            case .sendMessage: "sending the mail"
            default: nil
            }
            do throws(DeliveryMachine.Failure) {
                switch effect {
                case .save:
                    do throws(SystemError) {
                        try write(machine.journal, to: path, .contents)
                    } catch {
                        // Not recorded, not sent: the attempt stops here and is made again.
                        return .broken("cannot write the delivery journal: \(error)")
                    }
                case .receipt:
                    onReceipt(machine.journal)
                case .write(let i, let name):
                    try server().write(machine.journal.files[i], as: name)
                    effects += machine.handle(.written(i), now: now())
                case .rename(let i, let from):
                    try server().rename(machine.journal.files[i], from: from)
                    effects += machine.handle(.renamed(i), now: now())
                case .verify(let i):
                    switch try server().verify(machine.journal.files[i]) {
                    case .same(let how): effects += machine.handle(.verified(i, how), now: now())
                    case .different(let detail): effects += machine.handle(.mismatch(i, detail), now: now(), jitter: jitter)
                    }
                case .sendMessage:
                    try server().sendMessage(machine.journal, link: context.link)
                    effects += machine.handle(.messageAccepted, now: now())
                case .retry:
                    break  // read from the journal below
                case .done:
                    effects.removeAll()
                }
            } catch {
                // Stopping: left as it is (a file being sent is sent again at the next start),
                // not recorded as a failure of the destination.
                if shouldStop() { return .ran(machine.journal, retryAt: nil) }
                var failure = error
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

    /// A mail destination's TLS options come from the mail server's settings.
    private static func mailSettings(_ context: Context) -> DestinationSettings {
        var settings = context.settings
        if settings.destination.kind == .mailto, let caFile = context.mail?.caFile { settings.caFile = caFile }
        if settings.destination.kind == .mailto, settings.credentials == nil { settings.credentials = context.mail?.credentials }
        return settings
    }
}
