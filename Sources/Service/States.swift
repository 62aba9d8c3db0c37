import Batches
import Foundation

// The states a process and its hot folders are in, and every word users are told of them:
// the status file's values, the `STATUS=` line, `photofinish status`, STATUS.txt and the
// console read them here (docs/architecture.md, States; reference: Hot folder states).

extension ServiceStatus {
    /// What a daemon or `watch` process is doing, as its status file says (`state`).
    public enum State: StatusWord {
        case running
        /// A stop was asked for: the photos in flight finish first (the console says so).
        case stopping
        /// The last thing a process writes on its way out.
        case stopped
        /// A word another version wrote: shown as it is.
        case other(String)

        public init(_ word: String) {
            switch word {
            case "running": self = .running
            case "stopping": self = .stopping
            case "stopped": self = .stopped
            default: self = .other(word)
            }
        }

        /// The word in the status file.
        public var word: String {
            switch self {
            case .running: "running"
            case .stopping: "stopping"
            case .stopped: "stopped"
            case .other(let word): word
            }
        }
    }
}

extension ServiceStatus.FolderState {
    /// A hot folder's state: watched or not, and why.
    public enum Kind: StatusWord {
        /// Being taken up (its folders made, its file system probed, its `.work/` recovered).
        case starting
        case watching
        /// Cannot be used (`why`, `fix`): tried again at every reload and `rescanInterval`.
        case refused
        /// Its share does not answer (`why`): nothing is claimed until it does.
        case shareUnavailable
        /// Watched, but nothing new is claimed: below `minFreeSpace`, or its share's disk is full.
        case lowSpace
        /// The service stopped.
        case stopped
        /// A word another version wrote: shown as it is.
        case other(String)

        public init(_ word: String) {
            switch word {
            case "starting": self = .starting
            case "watching": self = .watching
            case "refused": self = .refused
            case "share-unavailable": self = .shareUnavailable
            case "low-space": self = .lowSpace
            case "stopped": self = .stopped
            default: self = .other(word)
            }
        }

        /// The word in the status file (`state.kind`).
        public var word: String {
            switch self {
            case .starting: "starting"
            case .watching: "watching"
            case .refused: "refused"
            case .shareUnavailable: "share-unavailable"
            case .lowSpace: "low-space"
            case .stopped: "stopped"
            case .other(let word): word
            }
        }

        /// In the `STATUS=` line for systemd: "shop: share unavailable".
        public var summaryWords: String { word.replacingOccurrences(of: "-", with: " ") }

        /// What `photofinish status` leads a folder's state line with ("low on space since …").
        public var statusWords: String {
            switch self {
            case .lowSpace: "low on space"
            case .starting: "starting (being taken up)"
            default: summaryWords
            }
        }
    }

    /// `photofinish status`'s line for the state when it is not plain watching: "refused since
    /// 01:02: why; to fix it:" (the fixes follow, one a line); `nil` for watching.
    public var statusLine: String? {
        let since = since.map { " since \(HumanTime.words(isoUTC: $0))" } ?? ""
        let why = why.map { ": \($0)" } ?? ""
        let fixes = fix?.isEmpty == false ? "; to fix it:" : ""
        switch kind {
        case .watching: return nil
        case .starting: return kind.statusWords
        case .refused, .lowSpace, .shareUnavailable: return kind.statusWords + since + why + fixes
        case .stopped, .other: return kind.word + since + why
        }
    }

    /// What STATUS.txt says of the state, before the fixes (nothing while watching, starting
    /// or stopped: the lines after it say those).
    var textLead: String? {
        switch kind {
        case .refused: "PhotoFinish cannot use this hot folder: \(StatusText.ascii(why ?? "the reason is in the journal"))."
        case .shareUnavailable: "The share holding this hot folder does not answer: \(StatusText.ascii(why ?? ""))."
        case .lowSpace: "Nothing new is taken from drop/: \(StatusText.ascii(why ?? "too little free space"))."
        default: nil
        }
    }

    /// What STATUS.txt says after the fixes.
    var textTail: String? {
        switch kind {
        case .shareUnavailable: "Files dropped meanwhile are finished once it answers again."
        default: nil
        }
    }
}

extension ServiceStatus.Progress {
    /// "4 of 6 done, 2 in progress", "6 of 6 done, making the report and story": the
    /// counts as every view of the service says them.
    public var words: String {
        var out = "\(done) of \(total) done"
        if let failed, failed > 0 { out += " (\(failed) failed)" }
        if (stage ?? .photos) == .outputs {
            out += ", making the report" + (makes.map { " and " + $0.joined(separator: " and ") } ?? "")
        } else if let inProgress, inProgress > 0 {
            out += ", \(inProgress) in progress"
        }
        return out
    }

    /// What a batch on its way does (`stage`).
    public enum Stage: StatusWord {
        /// Open: its photos are finished as they arrive, more may join.
        case open
        /// Closed: the photos not done yet are being finished.
        case photos
        /// Every photo done: its own outputs (story, colour card), the report, publishing.
        case outputs
        /// A word another version wrote: shown as it is.
        case other(String)
        public init(_ word: String) {
            switch word {
            case "open": self = .open
            case "photos": self = .photos
            case "outputs": self = .outputs
            default: self = .other(word)
            }
        }
        /// The word in the status file.
        public var word: String {
            switch self {
            case .open: "open"
            case .photos: "photos"
            case .outputs: "outputs"
            case .other(let word): word
            }
        }
    }
}

extension ServiceStatus.Held {
    /// Who approves a held batch (the hot folder's `approve`).
    public enum Approver: StatusWord {
        /// A user of the hot folder, on the batch's console page.
        case owner
        /// The client, on the batch's share page.
        case client
        /// A word another version wrote: shown as it is.
        case other(String)

        public init(_ word: String) {
            switch word {
            case "owner": self = .owner
            case "client": self = .client
            default: self = .other(word)
            }
        }

        /// The word in the status file.
        public var word: String {
            switch self {
            case .owner: "owner"
            case .client: "client"
            case .other(let word): word
            }
        }

        /// "by the client, on its share page": who approves, and where.
        var words: String {
            switch self {
            case .owner: "by the studio, on its page in the console"
            case .client: "by the client, on its share page"
            case .other(let word): "by \(word)"
            }
        }
    }

    /// `photofinish status`'s line: "batch 20261205-… held for approval by the client, on its
    /// share page, since 2026-12-05 10:15:00 +00:00; link https://…/s/…/" (no link: "no link yet").
    public var statusLine: String {
        "batch \(batch) held for approval \(by.words), since \(HumanTime.words(isoUTC: since)); "
            + (link.map { "link \($0)" } ?? "no link yet")
    }

    /// STATUS.txt's line (made ASCII where it is written): "Batch 20261205-… is held for
    /// approval by the client, on its share page, since …: https://…/s/…/" (no link: "no link
    /// yet (make one on its console page or with photofinish share)").
    var textLine: String {
        let link = link.map { ": " + $0 } ?? "; no link yet (make one on its console page or with photofinish share)"
        return "Batch \(batch) is held for approval \(by.words), since \(HumanTime.words(isoUTC: since))\(link)."
    }
}

/// A state written as one word in the status file: read back as it was written, whatever
/// version wrote it (a word this version does not know is kept as it is).
public protocol StatusWord: Sendable, Equatable, Codable {
    init(_ word: String)
    /// The word in the status file.
    var word: String { get }
}

extension StatusWord {
    public init(from decoder: any Decoder) throws { self.init(try decoder.singleValueContainer().decode(String.self)) }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(word)
    }
}
