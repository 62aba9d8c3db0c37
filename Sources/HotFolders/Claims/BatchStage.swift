/// Where a batch is in its life (docs/architecture.md, A batch's life):
///
///     open ──(quiet, maxWait, maxBatch)──▶ closed ──(its run: photos, whole-set outputs,
///     filing, the report, out/<id>/ published)──▶ finished ──(its deliveries planned)──▶ held
///     ──(each destination verified it)──▶ delivered
///
/// - `open`: its photos are claimed as they settle and finished as they come (`Manifest.open`);
/// - `closed`: nothing more joins it; it waits for (or is in) its run;
/// - `finished`: published in `out/<id>/` with its report and announced — its journal line,
///   STATUS.txt, metrics and hooks, once (the batch's `journal` records it, so a run cut short
///   between the publishing and the clean-up announces it then, and never twice); the last
///   stage of a batch its hot folder does not deliver;
/// - `held`: finished, and a delivery (or the approval one waits for) is not verified yet — what
///   it awaits is in its delivery journals, `.work/deliveries/<id>/`, read again at a start;
/// - `delivered`: each destination verified it (said in one line).
public enum BatchStage: String, Sendable, Codable, CaseIterable {
    case open, closed, finished, held, delivered
}
