import Finishing
import Pixels

/// A batch's report (`report.json`; reference: The report): the one model every writer renders.
///
/// `ReportWriter` writes each type's properties in declaration order under their own names
/// (that order is the reference's); nil optionals are left out unless the property says otherwise
/// (`NullWhenNil`, `OmittedWhenEmpty`, `OmittedWhenFalse`). Adding a field is adding one
/// property in its place, here or in `Applied` (what was done to one output). Read back
/// with `JSONDecoder` (for `photofinish report`, tests and the daemon).
public struct Report: Codable, Sendable {
    public var schema: Int = 1
    public var batch: String
    /// The batch this one runs again (`photofinish redo`).
    public var redoes: String?
    /// The hot folder's name; `null` for `photofinish run`.
    @NullWhenNil public var inbox: String?
    public var template: TemplateRef
    /// ISO 8601 UTC with milliseconds.
    public var started: String
    public var finished: String
    public var status: Status
    public var counts: Counts
    public var items: [Item]
    /// The files that are no photo (text, sidecars, …), in batch order: never failed items.
    @OmittedWhenEmpty public var ignored: [IgnoredFile]?
    /// Batch-level outputs (stitched parts, colour card).
    public var outputs: [BatchOutput]
    /// The batch's light (`harmonize`): what the photos were brought toward, and how far apart
    /// their lights were before and are after.
    public var harmonize: HarmonizeSummary?
    /// What happened to the batch as a whole, in words (a story not made, and why).
    @OmittedWhenEmpty public var warnings: [String]?
    /// Where the batch was delivered: one receipt per destination (docs/reference.md
    /// "Delivering finished photos"). The report is written last when the batch is finished,
    /// without them; each receipt is added, and changed, by rewriting the report atomically.
    @OmittedWhenEmpty public var deliveries: [Delivery]?
    /// The batch's share link for its client, when it has one (reference: Share links, QR codes):
    /// the link its photos' `qr` marks print, or the last one made for it (`photofinish share`,
    /// the console), which `report.html` shows with its QR code. Added and changed, like the
    /// receipts, by rewriting the report.
    public var link: String?
    /// Who approved which photos, and when, in a hot folder with `approve` (reference: Approval);
    /// added by rewriting the report.
    public var approval: ApprovalRecord?

    public init(batch: String, inbox: String?, template: TemplateRef, started: String, finished: String,
                items: [Item], ignored: [IgnoredFile] = [], outputs: [BatchOutput] = [], interrupted: Bool = false) {
        self.batch = batch
        self.ignored = ignored.isEmpty ? nil : ignored
        self.inbox = inbox
        self.template = template
        self.started = started
        self.finished = finished
        self.items = items
        self.outputs = outputs
        let ok = items.filter { $0.status == .ok }.count
        let failed = items.filter { $0.status == .failed }.count
        let duplicates = items.filter { $0.status == .duplicate }.count
        counts = Counts(items: items.count, ok: ok, failed: failed,
                        skippedOutputs: items.reduce(0) { $0 + ($1.skipped?.count ?? 0) },
                        duplicates: duplicates > 0 ? duplicates : nil)
        if interrupted || items.contains(where: { $0.status == .interrupted }) {
            status = .interrupted
        } else if failed == 0 {
            status = .complete
        } else {
            status = ok == 0 ? .failed : .partial
        }
    }

    public struct TemplateRef: Codable, Sendable, Equatable {
        public var name: String
        public var sha256: String
        /// The template file (absent for the built-in default): `redo` without a config finishes
        /// the batch again with it.
        public var file: String?
        public init(name: String, sha256: String, file: String? = nil) {
            self.name = name
            self.sha256 = sha256
            self.file = file
        }
    }

    /// complete | partial (some failed) | failed (none ok) | interrupted (stopped before the end).
    public enum Status: String, Codable, Sendable {
        case complete, partial, failed, interrupted
    }

    public struct Counts: Codable, Sendable, Equatable {
        public var items: Int
        public var ok: Int
        public var failed: Int
        public var skippedOutputs: Int
        /// Photos not finished because this hot folder finished the same bytes before
        /// (`duplicates: "skip"`); left out when none.
        public var duplicates: Int? = nil
    }

    /// One source file and what became of it.
    public struct Item: Codable, Sendable {
        /// 1-based position in the batch.
        public var index: Int
        /// The file name as dropped (or as given to `run`).
        public var source: String
        public var bytes: Int?
        public var sha256: String?
        public var format: String?
        /// Upright size, full scale: the source as a person sees it.
        public var size: [Int]?
        public var orientation: Int?
        public var status: ItemStatus
        /// Milliseconds spent on this photo.
        public var ms: Int?
        /// The host that finished it (reference: Photos as tasks and the cluster): the cluster's
        /// host name in a cluster, else the machine's host name; left out for a photo not started
        /// (interrupted).
        public var host: String?
        public var outputs: [Output]?
        /// Crops the skip rule ruled out.
        @OmittedWhenEmpty public var skipped: [Skipped]?
        @OmittedWhenEmpty public var warnings: [String]?
        public var color: String?
        /// The faces crops were placed on, `[x, y, w, h]` in upright source pixels: the ones
        /// the file's XMP names, or the ones the face detector found (`[]`: none); left out when
        /// no face was looked for (no crop to place).
        public var faces: [[Int]]?
        /// The small JPEG `report.html` shows, relative to the batch folder (`thumbs/…`).
        public var thumbnail: String?
        public var error: ErrorInfo?
        /// The other files of the same photo (a RAW beside the JPEG finished), filed with it.
        @OmittedWhenEmpty public var alternates: [String]?
        /// Where the source is now, relative to the hot folder (or the path given to `run`).
        public var original: String?
        /// A `duplicate`: the batch that finished the same bytes, and the photo's name there.
        public var duplicateOf: DuplicateOf?

        public init(index: Int, source: String, status: ItemStatus) {
            self.index = index
            self.source = source
            self.status = status
        }
    }

    /// ok | failed | interrupted (not processed because the batch was stopped) | duplicate (not
    /// finished: the hot folder finished the same bytes before, `duplicates: "skip"`).
    public enum ItemStatus: String, Codable, Sendable {
        case ok, failed, interrupted, duplicate
    }

    /// Where a `duplicate` photo was finished: the batch, and the source's name in it.
    public struct DuplicateOf: Codable, Sendable, Equatable {
        public var batch: String
        public var source: String
        public init(batch: String, source: String) {
            self.batch = batch
            self.source = source
        }
    }

    public struct ErrorInfo: Codable, Sendable, Equatable {
        public var code: String
        public var message: String
        public init(code: String, message: String) { self.code = code; self.message = message }
    }

    /// One file made from an item: its name, size, bytes and what the recipe did.
    public struct Output: Codable, Sendable {
        public var file: String
        public var size: [Int]
        public var bytes: Int
        /// The variant it was made for (left out for the template's own outputs).
        public var variant: String?
        public var applied: Applied
    }

    /// A file of the batch that is no photo: why, and where it went.
    public struct IgnoredFile: Codable, Sendable, Equatable {
        /// The file name as dropped (escaped where it is not UTF-8).
        public var source: String
        /// What it is (`text, not a photo`, `sidecar of IMG_0001.HEIC`).
        public var reason: String
        /// Where it is now, as an item's `original`.
        public var original: String?
        public init(source: String, reason: String, original: String? = nil) {
            self.source = source; self.reason = reason; self.original = original
        }
    }

    /// A destination's receipt.
    public struct Delivery: Codable, Sendable, Equatable {
        /// The destination's name in the config.
        public var name: String
        /// Its URL (never a secret: passwords are refused in it).
        public var to: String
        /// `delivered` | `failed` | `pending`.
        public var status: String
        public var files: Int
        public var bytes: Int
        /// How every file was checked on the server: `sha256` (read back and hashed, or the S3
        /// server's own checksum), `etag`, `size`, or `accepted` (a mail server took the message).
        public var verified: String?
        /// When it was delivered, or last failed.
        public var at: String?
        public var attempts: Int
        /// Why the last attempt failed.
        public var error: String?
        /// Pending or failed: what it waits for, `approval`, or when it is tried again (ISO 8601);
        /// left out when nothing more is tried without `photofinish deliver`.
        public var next: String?

        public init(name: String, to: String, status: String, files: Int, bytes: Int, verified: String? = nil,
                    at: String? = nil, attempts: Int = 0, error: String? = nil, next: String? = nil) {
            self.name = name; self.to = to; self.status = status; self.files = files; self.bytes = bytes
            self.verified = verified; self.at = at; self.attempts = attempts; self.error = error; self.next = next
        }
    }

    /// `approval`: the photos by the name the client saw (each photo's first output).
    public struct ApprovalRecord: Codable, Sendable, Equatable {
        /// `client` (the share page) or the console login that approved.
        public var by: String
        /// ISO 8601 UTC.
        public var at: String
        public var approved: [String]
        public var rejected: [String]
        public var note: String?

        public init(by: String, at: String, approved: [String], rejected: [String], note: String?) {
            self.by = by; self.at = at; self.approved = approved; self.rejected = rejected; self.note = note
        }
    }

    /// The name a photo goes by on its share page and in `approval`: its first output's file
    /// name; nil for a photo that has none (failed).
    public static func photoName(_ item: Item) -> String? {
        item.status == .ok ? item.outputs?.first?.file : nil
    }

    /// `harmonize`: the reference light and the set's spread (`LightEstimate.spread`).
    public struct HarmonizeSummary: Codable, Sendable, Equatable {
        /// "median", or the file name of the photo the others were brought toward.
        public var reference: String
        /// The reference light.
        public var light: LightEstimate
        public var spread: Spread

        /// How far apart the photos' lights are: the white points' RMS ΔE and the levels'
        /// standard deviation in EV, as the photos came and as finished.
        public struct Spread: Codable, Sendable, Equatable {
            public var before: Amount
            public var after: Amount
        }

        public struct Amount: Codable, Sendable, Equatable {
            public var white: Double
            public var exposure: Double
        }
    }

    public struct BatchOutput: Codable, Sendable {
        public var file: String
        public var size: [Int]
        /// The items (1-based indexes) this output shows, in order.
        public var items: [Int]?
        /// Items the story leaves out (they failed), 1-based.
        @OmittedWhenEmpty public var leftOut: [Int]?
        public init(file: String, size: [Int], items: [Int]?, leftOut: [Int] = []) {
            self.file = file; self.size = size; self.items = items
            self.leftOut = leftOut.isEmpty ? nil : leftOut
        }
    }
}
