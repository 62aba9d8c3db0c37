import Batches
import Foundation
import HotFolders
import System

/// The last batch a hot folder finished before this start: its newest report under `out/`
/// (batch ids sort by time), so `STATUS.txt` and `photofinish status` show it from the start.
enum LastBatch {
    static func newest(in layout: HotFolderLayout) -> ServiceStatus.Last? {
        let batches = Files.textNames(in: layout.out).sorted(by: >)
        for batch in batches.prefix(20) {
            guard let report = try? ReportText.load(layout.out + "/" + batch + "/report.json") else { continue }
            let c = report.counts
            return ServiceStatus.Last(batch: report.batch, status: report.status.rawValue, items: c.items, ok: c.ok,
                                      failed: c.failed, finished: report.finished)
        }
        return nil
    }
}
