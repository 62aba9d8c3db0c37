import Configuration
import Foundation
import HotFolders
import System

/// A finished batch, as a hook hears of it.
struct FinishedBatch: Sendable {
    var inbox: String
    var batch: String
    /// `complete`, `partial`, `failed` or `interrupted`.
    var status: String
    /// The published batch folder, `<root>/out/<batch-id>`.
    var folder: String
    var items: Int, ok: Int, failed: Int

    var reportPath: String { folder + "/report.json" }

    /// `{report}`, `{batch}`, `{inbox}`, `{status}`.
    var placeholders: [String: String] {
        ["report": reportPath, "batch": batch, "inbox": inbox, "status": status]
    }

    /// `PHOTOFINISH_REPORT`, `_BATCH`, `_INBOX`, `_STATUS`, `_FOLDER`, `_ITEMS`, `_OK`, `_FAILED`.
    var environment: [String: String] {
        ["PHOTOFINISH_REPORT": reportPath, "PHOTOFINISH_BATCH": batch, "PHOTOFINISH_INBOX": inbox,
         "PHOTOFINISH_STATUS": status, "PHOTOFINISH_FOLDER": folder, "PHOTOFINISH_ITEMS": String(items),
         "PHOTOFINISH_OK": String(ok), "PHOTOFINISH_FAILED": String(failed)]
    }
}

/// Runs `onBatch` after each batch: the `exec` program and the webhook, each on a thread of
/// its own, so the next batch never waits for them; what they did goes to the journal; a hook
/// that fails is logged, never fatal.
final class BatchHookRunner: Sendable {
    private let log: Logger
    private let userAgent: String

    init(log: Logger, userAgent: String) {
        self.log = log
        self.userAgent = userAgent
    }

    /// Starts `hooks` for `batch` and returns at once.
    func run(_ hooks: BatchHooks, for batch: FinishedBatch) {
        if let exec = hooks.exec, !exec.isEmpty {
            background("photofinish-exec") { [self] in runExec(hooks.arguments(batch.placeholders), timeout: hooks.timeout, batch: batch) }
        }
        if let webhook = hooks.webhook {
            background("photofinish-webhook") { [self] in post(webhook, batch: batch) }
        }
    }

    private func background(_ name: String, _ work: @escaping @Sendable () -> Void) {
        let thread = Thread(block: work)
        thread.name = name
        thread.start()
    }

    /// True when this process sees no network but the loopback (the unit's `PrivateNetwork=yes`):
    /// a webhook cannot reach anything then.
    static var networkIsPrivate: Bool {
        let interfaces = Files.textNames(in: "/sys/class/net")
        return !interfaces.isEmpty && interfaces.allSatisfy { $0 == "lo" }
    }

    private func runExec(_ arguments: [String], timeout: Duration, batch: FinishedBatch) {
        let fields: LogFields = ["INBOX": batch.inbox, "BATCH": batch.batch]
        var environment = ProcessInfo.processInfo.environment
        // What systemd gave the service is not the hook's (it would notify as us).
        for key in ["NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID", "LISTEN_FDS", "LISTEN_PID", "LISTEN_FDNAMES"] {
            environment[key] = nil
        }
        environment.merge(batch.environment) { $1 }
        let result = ChildProcess.run(arguments, environment: environment, timeout: timeout)
        let program = arguments[0]
        let took = String(format: "%.1f s", result.seconds)
        var line: String
        var priority = Logger.Priority.info
        switch result.ending {
        case .notStarted(let reason):
            log.error("onBatch exec could not start: \(reason)", fields)
            return
        case .exited(let code):
            line = "onBatch exec \(program) exited \(code) after \(took)"
            if code != 0 { priority = .warning }
        case .signalled(let signal):
            line = "onBatch exec \(program) was killed by signal \(signal) after \(took)"
            priority = .warning
        }
        if result.timedOut { line += " (stopped: it ran longer than onBatch.timeout, \(timeout))" }
        let output = result.output.trimmingCharacters(in: .whitespacesAndNewlines)
        if !output.isEmpty { line += "; output:\n" + output }
        log.log(priority, line, fields.with("EXIT_STATUS", exitStatus(result.ending)))
    }

    private func exitStatus(_ ending: ChildProcess.Ending) -> String {
        switch ending {
        case .exited(let code): String(code)
        case .signalled(let signal): "signal \(signal)"
        case .notStarted: "not started"
        }
    }

    /// POSTs report.json; a failure (no answer, or an answer other than 2xx, except a client
    /// error that asking again cannot fix) is retried after 1 s, 2 s, 4 s … (at most 5 min
    /// apart), `retries` times; then it is logged as an error and given up.
    private func post(_ webhook: BatchHooks.Webhook, batch: FinishedBatch) {
        let fields: LogFields = ["INBOX": batch.inbox, "BATCH": batch.batch]
        let body: [UInt8]
        do throws(SystemError) {
            body = try FileDescriptor.open(batch.reportPath, .read).readAll()
        } catch {
            log.error("onBatch webhook: \(error)", fields)
            return
        }
        let headers = webhook.headers.map { ($0.name, $0.value) }
        var delay = Duration.seconds(1)
        for attempt in 1...(webhook.retries + 1) {
            let answer = HTTPPost.post(url: webhook.url, headers: headers, body: body, timeout: webhook.timeout,
                                       userAgent: userAgent)
            let problem: String
            switch answer {
            case .status(let code, _) where (200..<300).contains(code):
                log.info("onBatch webhook: \(webhook.url) answered \(code)" + (attempt > 1 ? " (attempt \(attempt))" : ""), fields)
                return
            case .status(let code, let text):
                problem = "answered \(code)" + (text.isEmpty ? "" : ": " + String(text.prefix(200)))
                // A client error other than a timeout or too many requests: asking again changes nothing.
                if (400..<500).contains(code) && code != 408 && code != 429 {
                    log.error("onBatch webhook: \(webhook.url) \(problem); not retried", fields)
                    return
                }
            case .failed(let reason):
                problem = "failed: \(reason)"
            }
            guard attempt <= webhook.retries else {
                log.error("onBatch webhook: \(webhook.url) \(problem); gave up after \(attempt) attempt\(attempt == 1 ? "" : "s")", fields)
                return
            }
            log.warning("onBatch webhook: \(webhook.url) \(problem); trying again in \(delay.components.seconds) s", fields)
            Thread.sleep(forTimeInterval: Double(delay.components.seconds))
            delay = min(delay * 2, .seconds(300))
        }
    }
}
