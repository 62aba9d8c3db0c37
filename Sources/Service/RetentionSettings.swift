import Configuration
import HotFolders

extension Retention.Keep {
    /// The config's `keep` (an inbox's, resolved at load) as retention takes it.
    public init(_ keep: Config.Keep) {
        func lifetime(_ l: Config.Lifetime) -> Duration? {
            switch l {
            case .forever, .untilDelivered: nil
            case .duration(let d): d
            }
        }
        self.init(out: lifetime(keep.out), originals: lifetime(keep.originals), failed: lifetime(keep.failed),
                  originalsUntilDelivered: keep.originals == .untilDelivered)
    }
}
