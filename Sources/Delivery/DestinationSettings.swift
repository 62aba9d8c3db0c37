/// One `deliver` entry of the config (docs/reference.md "Delivering finished photos"), checked:
/// where, when, what, with which login, and how hard to try.
public struct DestinationSettings: Sendable, Equatable {
    /// When a finished batch is sent.
    public enum When: String, Sendable, Equatable, CaseIterable {
        /// As soon as it is finished.
        case finished
        /// Once it is approved (the share page's approval sets the gate; until then the
        /// delivery waits, `pending`, and holds nothing else).
        case approved
    }

    /// What is sent.
    public enum What: String, Sendable, Equatable, CaseIterable {
        /// The batch's outputs (what its report names), in a folder named for the batch.
        case outputs
        /// The outputs, `report.json`, `report.html` and its thumbnails.
        case outputsAndReport = "outputs+report"
        /// One file, `<batch-id>.zip`, of the outputs and the report.
        case zip
    }

    /// The name in logs, reports, metrics and `photofinish deliver --to`.
    public var name: String
    public var destination: Destination
    public var when: When = .finished
    public var what: What = .outputs
    /// The entry of the credentials file (or the systemd credential) holding the login; nil: none.
    public var credentials: String?
    /// SFTP: the known_hosts file the server's key is checked against.
    public var knownHosts: String = Self.defaultKnownHosts
    /// TLS (FTPS, WebDAVS, S3, SMTPS): the CA certificates (PEM) a server's certificate is checked
    /// against; nil: the system's.
    public var caFile: String?
    /// Bytes per second at most (nil: as fast as the link goes).
    public var bandwidth: Int?
    /// `mailto:`: the files are attached when they add up to at most this; above, the mail
    /// carries the batch's link instead.
    public var maxAttachBytes: Int = 20_000_000
    public var retry = RetryPolicy()
    /// One transfer's limit without progress: a connection that moves no byte for this long fails.
    public var stallTimeout: Duration = .seconds(60)

    public static let defaultKnownHosts = "/etc/photofinish/known_hosts"

    public init(name: String, destination: Destination) {
        self.name = name
        self.destination = destination
    }
}

/// How a failed delivery is tried again: after `first`, then each wait doubled up to `atMost`,
/// each with up to a fifth of jitter (so destinations that failed together do not retry in step),
/// until `giveUpAfter` from the first attempt; then the delivery is `failed` for good and waits
/// for `photofinish deliver`.
public struct RetryPolicy: Sendable, Equatable {
    public var first: Duration = .seconds(10)
    public var atMost: Duration = .seconds(600)
    public var giveUpAfter: Duration = .seconds(86_400)

    public init(first: Duration = .seconds(10), atMost: Duration = .seconds(600), giveUpAfter: Duration = .seconds(86_400)) {
        self.first = first
        self.atMost = atMost
        self.giveUpAfter = giveUpAfter
    }

    /// The wait after the `attempt`-th failed attempt (1-based); `jitter` in 0..<1 adds up to a
    /// fifth more.
    public func delay(after attempt: Int, jitter: Double) -> Duration {
        var wait = first
        for _ in 1..<max(1, attempt) where wait < atMost { wait = wait * 2 }
        wait = min(wait, atMost)
        return wait + wait * (min(max(jitter, 0), 0.999) / 5)
    }
}
