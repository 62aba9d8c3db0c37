import Batches
import Foundation
import HotFolders
import System
import Testing

/// A batch run's journal (`ProgressJournal.Writer`): one open for the run, start lines synced
/// as they are written, items synced with the next start or by `flush`; what it writes reads
/// back as what `ProgressJournal`'s own lines say, and a process that dies before the flush
/// leaves every line in the file (the page cache: only a power cut can take the last items).
struct JournalWriterTests {
    @Test func linesReadBackAsTheJournalsOwn() throws {
        let folder = try TemporaryFolder.make("journal")
        defer { try? FileManager.default.removeItem(atPath: folder) }  // best effort: a temp folder
        let journals = BatchJournals(folder: folder, how: .append)
        let writer = ProgressJournal.Writer(journals, shared: false)
        try writer.started(1)
        try writer.started(2)
        try writer.append(Report.Item(index: 1, source: "a.jpg", status: .ok))
        // Not flushed yet (the run still going, or the daemon killed here): all there.
        var progress = try ProgressJournal.read(folder: folder)
        #expect(progress.starts == [1: 1, 2: 1])
        #expect(progress.finished.keys.sorted() == [1] && progress.unfinished == [2: 1])
        try writer.append(Report.Item(index: 2, source: "b.jpg", status: .failed))
        try writer.flush()
        // A line written the old way beside it, then the run's again (a journal opened afresh).
        try ProgressJournal.started(3, to: journals)
        try writer.started(3)
        try writer.flush()
        progress = try ProgressJournal.read(folder: folder)
        #expect(progress.finished.keys.sorted() == [1, 2])
        #expect(progress.starts == [1: 1, 2: 1, 3: 2] && progress.unfinished == [3: 2])
        let text = String(decoding: try #require(try Files.read(folder + "/" + ProgressJournal.fileName)), as: UTF8.self)
        #expect(text.hasPrefix("{\"started\":1}\n{\"started\":2}\n{"), "the start lines JSONEncoder wrote: \(text)")
    }

    /// On a share, and where the journal is not appended to, each line is written (and synced)
    /// as before: through `ProgressJournal`'s own functions.
    @Test func onAShareEveryLineIsWrittenAsBefore() throws {
        let folder = try TemporaryFolder.make("journal-share")
        defer { try? FileManager.default.removeItem(atPath: folder) }  // best effort: a temp folder
        for how in [Files.Appending.atEnd, .rewrite] {
            let writer = ProgressJournal.Writer(BatchJournals(folder: folder, how: how), shared: true)
            try writer.started(1)
            try writer.append(Report.Item(index: 1, source: "a.jpg", status: .ok))
            try writer.flush()
        }
        let progress = try ProgressJournal.read(folder: folder)
        #expect(progress.starts == [1: 2] && progress.finished.keys.sorted() == [1])
    }
}
