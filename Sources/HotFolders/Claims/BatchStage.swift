/// Where a batch is in its life (docs/architecture.md, A batch's life):
///
///     open ──(quiet, maxWait, maxBatch)──▶ closed ──(its run: photos, whole-set outputs,
///     filing, the report, out/<id>/ published)──▶ finished ──(approval)──▶ held ──▶ delivered
///
/// - `open`: its photos are claimed as they settle and finished as they come (`Manifest.open`);
/// - `closed`: nothing more joins it; it waits for (or is in) its run;
/// - `finished`: published in `out/<id>/` with its report and announced — its journal line,
///   STATUS.txt, metrics and hooks, once (the batch's `journal` records it, so a run cut short
///   between the publishing and the clean-up announces it then, and never twice);
/// - `held`, `delivered`: a finished batch that waits for its approval, then for its deliveries
///   (the approval and delivery work records them here; its work folder stays until nothing is
///   awaited, then is cleaned up).
public enum BatchStage: String, Sendable, Codable, CaseIterable {
    case open, closed, finished, held, delivered
}
