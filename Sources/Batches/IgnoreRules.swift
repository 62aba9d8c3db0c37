/// The names never taken from a drop folder (reference: File names): hidden files and AppleDouble
/// (`.*`, `._*`), Office lock files (`~$*`), partial downloads and editor temporaries
/// (`*.part`, `*.partial`, `*.tmp`, `*.crdownload`, `*.download`, `*.swp`), and the
/// folder litter of Windows (`Thumbs.db`, `desktop.ini`).
public enum IgnoreRules {
    static let suffixes = [".part", ".partial", ".tmp", ".crdownload", ".download", ".swp"]
    static let names: Set<String> = ["thumbs.db", "desktop.ini"]

    /// True when a file of this name is never claimed.
    public static func ignores(_ name: String) -> Bool {
        if name.hasPrefix(".") || name.hasPrefix("~$") { return true }
        let lower = name.lowercased()
        if names.contains(lower) { return true }
        return suffixes.contains { lower.hasSuffix($0) }
    }
}
