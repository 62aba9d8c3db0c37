/// One batch's delivery to one destination: what is to be sent, how far each file got, how
/// many attempts were made and why the last one failed. Written (atomically, before each step
/// that touches the server) to `.work/deliveries/<batch-id>/<destination>.json`, so a restart or a
/// kill resumes where it stopped: a file being sent is sent again under the same temporary name,
/// a file sent but not verified is verified, a verified file is never sent again
/// (docs/reference.md, "Delivering finished photos": the journal).
///
/// Holds no secret: the destination as its URL (which holds no password) and names only.
public struct DeliveryJournal: Codable, Sendable, Equatable {
    /// Where the delivery as a whole stands.
    public enum Phase: String, Codable, Sendable, Equatable {
        /// `when: "approved"` and the batch is not approved yet: the gate the approval sets.
        case awaitingApproval = "awaiting-approval"
        /// Due (now, or at `nextAttempt`).
        case pending
        /// An attempt is under way (or was, when the daemon stopped).
        case sending
        /// Every file is verified.
        case delivered
        /// The last attempt failed (`error`); tried again at `nextAttempt`, or, when `final`, not
        /// until `photofinish deliver`.
        case failed
    }

    /// Where one file stands.
    public enum Stage: String, Codable, Sendable, Equatable {
        case pending
        /// Being written under `temporary` (or, where the server cannot rename, its own name).
        case sending
        /// Under its own name on the server, not verified yet.
        case sent
        case verified
    }

    /// How a file was checked on the server.
    public enum Verification: String, Codable, Sendable, Equatable, Comparable {
        /// Accepted by a mail server (which keeps no file to read back).
        case accepted
        /// Its size on the server.
        case size
        /// The S3 ETag (the MD5 of a single-part upload).
        case etag
        /// Read back and hashed, or the server's own SHA-256 (S3 `x-amz-checksum-sha256`).
        case sha256

        private var strength: Int { [.accepted: 0, .size: 1, .etag: 2, .sha256: 3][self] ?? 0 }
        public static func < (a: Self, b: Self) -> Bool { a.strength < b.strength }
    }

    public struct File: Codable, Sendable, Equatable {
        /// The name on the server, relative to the destination's folder (`<batch-id>/IMG_1.jpg`).
        public var name: String
        /// The file sent, an absolute path.
        public var local: String
        public var bytes: Int
        public var sha256: String
        public var stage: Stage = .pending
        /// The temporary name it is written under while `sending`.
        public var temporary: String?
        public var verified: Verification?

        public init(name: String, local: String, bytes: Int, sha256: String) {
            self.name = name
            self.local = local
            self.bytes = bytes
            self.sha256 = sha256
        }
    }

    public var batch: String
    public var inbox: String?
    /// The destination's name.
    public var destination: String
    /// Its URL (no secret).
    public var to: String
    /// Makes the temporary names of this delivery (`.IMG_1.jpg.pf-<token>.part`): the same on
    /// every attempt, so a file cut off is overwritten, never left under a second name.
    public var token: String
    public var files: [File]
    public var phase: Phase
    public var attempts = 0
    /// Seconds since 1970 (UTC).
    public var firstAttempt: Double?
    public var nextAttempt: Double?
    public var error: String?
    /// When it was delivered, or last failed.
    public var at: Double?
    /// Failed for good: not retried until `photofinish deliver`.
    public var final = false

    public init(batch: String, inbox: String?, destination: String, to: String, token: String, files: [File],
                awaitingApproval: Bool) {
        self.batch = batch
        self.inbox = inbox
        self.destination = destination
        self.to = to
        self.token = token
        self.files = files
        phase = awaitingApproval ? .awaitingApproval : .pending
    }

    /// The temporary name of `file` on the server: beside it, hidden, naming this delivery.
    public func temporaryName(of file: File) -> String {
        let slash = file.name.lastIndex(of: "/")
        let folder = slash.map { String(file.name[...$0]) } ?? ""
        let base = slash.map { String(file.name[file.name.index(after: $0)...]) } ?? file.name
        return "\(folder).\(base).pf-\(token).part"
    }

    /// True when the daemon takes it up again by itself, at a start or when its next attempt is
    /// due: pending, sending, or failed and to be tried again (not delivered, not awaiting the
    /// approval, not failed for good: those wait for someone).
    public var isResumable: Bool {
        switch phase {
        case .pending, .sending: true
        case .failed: !final
        case .awaitingApproval, .delivered: false
        }
    }

    /// True when a worker should take it up at `now`.
    public func isDue(at now: Double) -> Bool {
        isResumable && (nextAttempt ?? 0) <= now
    }

    /// True while an attempt may be under way by what the journal says (`pending`: one is due or
    /// being taken up; `sending`). Delivered, failed and awaiting the approval are at rest: a
    /// process holding the delivery's lock then is only ending the attempt that wrote it.
    public var isUnderWay: Bool { phase == .pending || phase == .sending }

    /// The weakest check of its files (what the receipt can promise for all of them).
    public var verified: Verification? {
        guard !files.isEmpty, files.allSatisfy({ $0.stage == .verified }) else { return nil }
        return files.compactMap(\.verified).min()
    }

    public var bytes: Int { files.reduce(0) { $0 + $1.bytes } }
}

/// The steps of a delivery as a pure state machine: each event (an attempt begins, a file was
/// written, renamed, verified, something failed, the batch was approved) and the time give the
/// next effects (save the journal, write a file, rename it, verify it, rewrite the receipt,
/// try again later). `DeliveryRun` carries them out against a server; the tests drive it with
/// plain values.
///
/// Up to `depth` files are under way at once: one written while the ones before it are renamed
/// and read back (`DeliveryRun` writes on one connection and renames and verifies on another).
/// A depth of 1 sends one file at a time.
public struct DeliveryMachine: Sendable {
    public private(set) var journal: DeliveryJournal
    let policy: RetryPolicy
    /// Files go under a temporary name first (SFTP, FTP, WebDAV, a folder).
    let renames: Bool
    /// All files go in one message (mail).
    let whole: Bool
    /// How many files may be under way at once (written, renamed or read back, not verified yet).
    let depth: Int

    /// What is being done to a file under way this attempt (not in the journal: a restart finds
    /// each file at the stage last saved).
    private enum Step: Equatable { case writing, renaming, verifying }
    private var underWay: [Int: Step] = [:]

    public enum Event: Sendable, Equatable {
        /// A worker takes the delivery up (a due attempt).
        case begin
        /// File `index` was written (under its temporary name where there is one).
        case written(Int)
        /// File `index` was renamed to its own name.
        case renamed(Int)
        case verified(Int, DeliveryJournal.Verification)
        /// File `index` is on the server but is not what was sent.
        case mismatch(Int, String)
        /// The one message (mail) was accepted.
        case messageAccepted
        case failed(Failure)
        /// The batch was approved (`when: "approved"`).
        case approved
        /// `photofinish deliver` by hand: a final failure is tried again, with a fresh give-up clock.
        case again
    }

    public struct Failure: Sendable, Equatable, Error, CustomStringConvertible {
        public var message: String
        /// Asking again later may work (the server down, its disk full); false: it will not until
        /// someone changes something (the login refused, the host key unknown).
        public var retryable: Bool
        public init(_ message: String, retryable: Bool) {
            self.message = message
            self.retryable = retryable
        }
        public var description: String { message }
    }

    public enum Effect: Sendable, Equatable {
        /// Write the journal. The effects after it may run while it is written: the temporary
        /// names are the delivery's own, so whichever journal a kill leaves sends no file twice
        /// (`DeliveryRun` writes first when the journal read was one no restart takes up).
        case save
        /// The receipt changed (the report is rewritten, metrics and status told).
        case receipt
        /// Write file `index` to `name` on the server.
        case write(Int, as: String)
        /// Rename file `index` from `from` to its own name.
        case rename(Int, from: String)
        case verify(Int)
        /// Send every file in one message.
        case sendMessage
        /// Try again at this time (seconds since 1970).
        case retry(at: Double)
        /// This attempt is over (delivered, or failed).
        case done
    }

    public init(journal: DeliveryJournal, policy: RetryPolicy, renames: Bool, whole: Bool, depth: Int = 1) {
        self.journal = journal
        self.policy = policy
        self.renames = renames
        self.whole = whole
        self.depth = whole ? 1 : max(1, depth)
    }

    /// - Parameters:
    ///   - now: seconds since 1970.
    ///   - jitter: in 0..<1, spreads the retries.
    public mutating func handle(_ event: Event, now: Double, jitter: Double = 0) -> [Effect] {
        switch event {
        case .begin:
            guard journal.phase != .awaitingApproval, journal.phase != .delivered else { return [.done] }
            journal.phase = .sending
            journal.attempts += 1
            journal.firstAttempt = journal.firstAttempt ?? now
            journal.nextAttempt = nil
            underWay = [:]
            return [.save, .receipt] + next(now)
        case .written(let i):
            guard journal.phase == .sending else { return [] }
            if renames, let temporary = journal.files[i].temporary {
                underWay[i] = .renaming
                return [.rename(i, from: temporary)] + next(now)
            }
            underWay[i] = nil
            journal.files[i].stage = .sent
            return next(now)
        case .renamed(let i):
            guard journal.phase == .sending else { return [] }
            underWay[i] = nil
            journal.files[i].stage = .sent
            journal.files[i].temporary = nil
            return next(now)
        case .verified(let i, let how):
            guard journal.phase == .sending else { return [] }
            underWay[i] = nil
            journal.files[i].stage = .verified
            journal.files[i].verified = how
            // One save a file verified (with the stages of the files under way: a journal that
            // says `pending` or `sending` sends a file again under the same names, nothing doubled).
            let then = next(now)
            return then.first == .save ? then : [.save] + then
        case .mismatch(let i, let detail):
            guard journal.phase == .sending else { return [] }
            journal.files[i].stage = .pending
            journal.files[i].verified = nil
            return fail(Failure("\(journal.files[i].name) on the server is not what was sent (\(detail)); it is sent again", retryable: true),
                        now: now, jitter: jitter)
        case .messageAccepted:
            for i in journal.files.indices {
                journal.files[i].stage = .verified
                journal.files[i].verified = .accepted
            }
            return next(now)
        case .failed(let failure):
            guard journal.phase == .sending else { return [] }
            return fail(failure, now: now, jitter: jitter)
        case .approved:
            guard journal.phase == .awaitingApproval else { return [] }
            journal.phase = .pending
            return [.save, .receipt, .retry(at: now)]
        case .again:
            guard journal.phase != .awaitingApproval else { return [] }
            if journal.phase == .delivered {
                for i in journal.files.indices {
                    journal.files[i].stage = .pending
                    journal.files[i].verified = nil
                }
            }
            journal.phase = .pending
            journal.final = false
            journal.firstAttempt = nil
            journal.nextAttempt = nil
            return [.save, .receipt, .retry(at: now)]
        }
    }

    /// The next steps of an attempt under way: each file on the server under its own name read
    /// back, and the next file to send written once the one before it is (while fewer than
    /// `depth` are under way). None while the steps under way have not answered.
    private mutating func next(_ now: Double) -> [Effect] {
        guard journal.files.contains(where: { $0.stage != .verified }) else {
            journal.phase = .delivered
            journal.at = now
            journal.error = nil
            journal.nextAttempt = nil
            underWay = [:]
            return [.save, .receipt, .done]
        }
        if whole { return [.sendMessage] }
        var effects: [Effect] = []
        for i in journal.files.indices where journal.files[i].stage == .sent && underWay[i] == nil {
            underWay[i] = .verifying
            effects.append(.verify(i))
        }
        if underWay.count < depth, !underWay.values.contains(.writing),
           let i = journal.files.indices.first(where: { underWay[$0] == nil && [.pending, .sending].contains(journal.files[$0].stage) }) {
            // The temporary name is the delivery's own, the same on every attempt: a journal
            // saved before this file was (or that says it is `pending`) sends it again under it.
            let name = renames ? journal.temporaryName(of: journal.files[i]) : journal.files[i].name
            journal.files[i].stage = .sending
            journal.files[i].temporary = renames ? name : nil
            underWay[i] = .writing
            effects.append(.write(i, as: name))
        }
        return effects
    }

    private mutating func fail(_ failure: Failure, now: Double, jitter: Double) -> [Effect] {
        // The steps still under way are not waited for: what they did is found at the next
        // attempt (a file `sending` is sent again, one `sent` is verified).
        underWay = [:]
        journal.phase = .failed
        journal.error = failure.message
        journal.at = now
        let tried = now - (journal.firstAttempt ?? now)
        if !failure.retryable || tried >= Double(policy.giveUpAfter.components.seconds) {
            journal.final = true
            journal.nextAttempt = nil
            return [.save, .receipt, .done]
        }
        let wait = policy.delay(after: journal.attempts, jitter: jitter)
        // To the millisecond: the journal says it as written.
        let at = ((now + Double(wait.components.seconds) + Double(wait.components.attoseconds) / 1e18) * 1000).rounded() / 1000
        journal.nextAttempt = at
        return [.save, .receipt, .retry(at: at), .done]
    }
}
