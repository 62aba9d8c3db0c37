import Foundation
import Synchronization

/// Writing to the terminal: messages on stderr, a progress line only when stderr is a terminal.
enum Terminal {
    static let isInteractive = isatty(STDERR_FILENO) == 1

    static func error(_ message: String) {
        FileHandle.standardError.write(Data(("photofinish: " + message + "\n").utf8))
    }

    static func note(_ message: String) {
        FileHandle.standardError.write(Data((message + "\n").utf8))
    }
}

/// "23 of 80 · 4.1 photos/s", redrawn in place on a terminal.
final class ProgressLine: Sendable {
    private let start = ContinuousClock.now
    private let shown = Mutex(false)

    func update(done: Int, total: Int) {
        guard Terminal.isInteractive else { return }
        let seconds = Double((ContinuousClock.now - start) / .milliseconds(1)) / 1000
        let rate = seconds > 0 ? Double(done) / seconds : 0
        let line = String(format: "\r\u{1B}[K%d of %d · %.1f photos/s", done, total, rate)
        shown.withLock { $0 = true }
        FileHandle.standardError.write(Data(line.utf8))
    }

    func finish() {
        if shown.withLock({ $0 }) { FileHandle.standardError.write(Data("\n".utf8)) }
    }
}
