import Foundation

/// Folders of a test's own under the system's temporary folder, named so two tests (or two
/// runs) never share one: `<tmp>/pf-<label>-<random>`.
public enum TemporaryFolder {
    /// A fresh path, not yet made (for code that makes the folder itself).
    public static func path(_ label: String) -> String {
        NSTemporaryDirectory() + "pf-\(label)-\(UInt32.random(in: 0...UInt32.max))"
    }

    /// A fresh, empty folder, made with its parents.
    public static func make(_ label: String) throws -> String {
        let path = path(label)
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }
}
